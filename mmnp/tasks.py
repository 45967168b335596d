"""Registrations: one line per task. Adding a task = its three files + one line here."""

from mmnp.registry import register
from mmnp.task import Task

register(Task.from_modules("tsp", category="planning", direction="min"))
register(Task.from_modules("graph_coloring", category="graph", direction="min"))
register(Task.from_modules("vertex_cover", category="graph", direction="min"))
register(Task.from_modules("knapsack", category="selection", direction="max"))
register(Task.from_modules("longest_cycle", category="planning", direction="max"))
register(Task.from_modules("max_clique", category="graph", direction="max"))
register(Task.from_modules("set_cover", category="selection", direction="min"))
register(Task.from_modules("subset_sum", category="selection", direction="max"))
register(Task.from_modules("min_bisection", category="partition", direction="min"))
register(Task.from_modules("meeting_scheduling", category="schedule", direction="max"))
