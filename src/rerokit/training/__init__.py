"""rerokit.training."""
