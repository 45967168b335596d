"""Seeded instance generators with text prompts and PNG renderings, one module per task."""
