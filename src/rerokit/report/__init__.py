"""rerokit.report."""
