"""The built-in tasks, in their published order: one line per task.

Adding a task = its three files (generators/, verifiers/, solvers/) + one line here. `--tasks all`
lists the tasks in this order (the releases name theirs: `mmnp.releases`). A plain table with no
imports, so the registry can read it without a cycle and load each task's modules only when it is
asked for.
"""

# (name, category, direction)
BUILTIN: tuple[tuple[str, str, str], ...] = (
    ("tsp", "planning", "min"),
    ("graph_coloring", "graph", "min"),
    ("vertex_cover", "graph", "min"),
    ("knapsack", "selection", "max"),
    ("longest_cycle", "planning", "max"),
    ("max_clique", "graph", "max"),
    ("set_cover", "selection", "min"),
    ("subset_sum", "selection", "max"),
    ("min_bisection", "partition", "min"),
    ("meeting_scheduling", "schedule", "max"),
)
