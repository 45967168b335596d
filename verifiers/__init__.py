"""Answer parsers and constraint checkers, one module per task."""
