"""rerokit.experiments."""
