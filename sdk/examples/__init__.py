"""Example apps built with weir.sdk."""
