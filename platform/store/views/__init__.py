"""Read views: named read queries behind `weir.platform.reads` and the metrics."""
