"""Registrations: one line per task. Adding a task = its three files + one line here."""

from mmnp.registry import register
from mmnp.task import Task

register(Task.from_modules("tsp", category="planning", direction="min"))
register(Task.from_modules("graph_coloring", category="graph", direction="min"))
register(Task.from_modules("vertex_cover", category="graph", direction="min"))
register(Task.from_modules("knapsack", category="selection", direction="max"))
