"""CP-SAT with settings that make its answer a pure function of the model.

One worker, a fixed seed and a *deterministic* time limit (CP-SAT's own work counter,
not wall-clock seconds), so that datasets are byte-identical on any machine and at any
worker count. A wall-clock cap far above it only guards against pathological slowness.
"""

from __future__ import annotations

from ortools.sat.python import cp_model


def solve(model: cp_model.CpModel, time_limit: float) -> tuple[cp_model.CpSolver, bool]:
    """Solve `model`; returns the solver (for values) and whether optimality was proven."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = time_limit
    solver.parameters.max_time_in_seconds = max(60.0, 20 * time_limit)
    status = solver.Solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise RuntimeError(f"CP-SAT found no solution ({solver.StatusName(status)}) within the time limit")
    return solver, status == cp_model.OPTIMAL


def hint_subset(model: cp_model.CpModel, chosen: list[cp_model.IntVar], members: list[int]) -> None:
    """Start the search from a known solution: `chosen[i]` is 1 exactly for i in `members`."""
    hinted = set(members)
    for i, var in enumerate(chosen):
        model.AddHint(var, i in hinted)


def selected(solver: cp_model.CpSolver, chosen: list[cp_model.IntVar]) -> list[int]:
    return [i for i, var in enumerate(chosen) if solver.Value(var)]
