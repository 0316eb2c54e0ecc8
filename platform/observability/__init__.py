"""Logs and metrics: what a Weir process tells its operators."""
