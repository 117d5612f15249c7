"""rerokit.attacks."""
