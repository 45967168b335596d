"""CP-SAT with settings that make its answer a pure function of the model.

One worker, a fixed seed and a *deterministic* time limit (CP-SAT's own work counter,
not wall-clock seconds), so that datasets are byte-identical on any machine and at any
worker count. A wall-clock cap far above it only guards against pathological slowness.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from ortools.sat.python import cp_model


class NoSolution(RuntimeError):
    """CP-SAT stopped (time limit) before finding any solution, even with the hint given."""


_effort: dict | None = None  # the open `effort()` block's totals, if any


def solve(model: cp_model.CpModel, time_limit: float) -> tuple[cp_model.CpSolver, bool]:
    """Solve `model`; returns the solver (for values) and whether optimality was proven."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = time_limit
    solver.parameters.max_time_in_seconds = max(60.0, 20 * time_limit)
    status = solver.Solve(model)
    if _effort is not None:
        _effort["solves"] += 1
        _effort["deterministic_time"] += solver.deterministic_time
        _effort["num_branches"] += solver.num_branches
        _effort["num_conflicts"] += solver.num_conflicts
        _effort["bound"] = solver.best_objective_bound if status == cp_model.FEASIBLE else None
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise NoSolution(f"CP-SAT found no solution ({solver.StatusName(status)}) within the time limit")
    return solver, status == cp_model.OPTIMAL


def hint_subset(model: cp_model.CpModel, chosen: list[cp_model.IntVar], members: list[int]) -> None:
    """Start the search from a known solution: `chosen[i]` is 1 exactly for i in `members`."""
    hinted = set(members)
    for i, var in enumerate(chosen):
        model.AddHint(var, i in hinted)


def selected(solver: cp_model.CpSolver, chosen: list[cp_model.IntVar]) -> list[int]:
    return [i for i, var in enumerate(chosen) if solver.Value(var)]


@contextmanager
def effort() -> Iterator[dict]:
    """The work of the solves run inside the block (deterministic time, branches, conflicts, and
    the best objective bound of the last one when it stopped unproven): how hard an instance was
    to solve, recorded with it (`Task.generate`). Machine-independent, unlike wall time."""
    global _effort
    outer, _effort = _effort, {"solves": 0, "deterministic_time": 0.0, "num_branches": 0, "num_conflicts": 0,
                               "bound": None}
    try:
        yield _effort
    finally:
        _effort = outer
