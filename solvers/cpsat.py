"""CP-SAT with settings that make its answer a pure function of the model and the OR-Tools version.

One worker, a fixed seed and only a *deterministic* time limit (CP-SAT's own work counter, not
wall-clock seconds), so that datasets are byte-identical on any machine, under any load and at
any worker count. There is deliberately no wall-clock cap: an earlier one (max(60, 20 x limit)
s) cut slow solves short on a loaded machine and recorded `proven: false` where an unloaded
run proved the optimum, under the same benchmark hash. A solve that is stopped early (Ctrl-C)
raises instead of returning, so a cut-short answer never reaches a dataset.

The exact solvers take the heuristic's answer (the hint) but never give it to CP-SAT: a hinted
search follows another path, and a better hint could end in a worse unproven answer (on the
complement of DIMACS gen200_p0.9_44, a 162-vertex cover as hint left CP-SAT at 161 unproven
where the unhinted search proves 156). So the exact answer is a function of the instance
alone; the hint only serves afterwards, kept when it beats CP-SAT's answer (`Task.generate`)
and proven optimal when CP-SAT's bound reaches it (`settles`): a better hint never makes
the recorded best known worse.

OR-Tools is imported on first use: `import mmnp` and verifying answers never pay for it.
"""

from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

from mmnp.errors import UsageError

if TYPE_CHECKING:
    from ortools.sat.python import cp_model


class NoSolution(RuntimeError):
    """CP-SAT reached its time limit before finding any solution, even with the hint given."""


_effort: dict | None = None  # the open `effort()` block's totals, if any


def ortools_version() -> str:
    """The solver version the references depend on (recorded in the manifest)."""
    from importlib.metadata import version

    return version("ortools")


def solve(model: cp_model.CpModel, time_limit: float, **parameters: Any) -> tuple[cp_model.CpSolver, bool]:
    """Solve `model`; returns the solver (for values) and whether optimality was proven.
    `parameters` sets further CP-SAT parameters (e.g. `linearization_level=2`).

    The search runs in a helper thread so that Ctrl-C reaches Python at once (CP-SAT's own
    SIGINT handler is off): the search is stopped and KeyboardInterrupt propagates."""
    from ortools.sat.python import cp_model

    if not time_limit > 0:
        raise UsageError(f"the exact solver's time limit must be positive, got {time_limit}")
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = time_limit
    solver.parameters.catch_sigint_signal = False
    for key, value in parameters.items():
        setattr(solver.parameters, key, value)
    result: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            result["status"] = solver.Solve(model)
        except BaseException as e:  # re-raised in the caller's thread
            result["error"] = e
        finally:
            done.set()

    # Waiting on an Event, not Thread.join: a Ctrl-C inside join(timeout) can leave the thread
    # marked finished while CP-SAT still runs (CPython 3.11), and the interpreter then aborts.
    threading.Thread(target=run, name="cp-sat", daemon=True).start()
    try:
        while not done.wait(0.2):
            pass
    except BaseException:
        solver.StopSearch()
        done.wait()
        raise
    if "error" in result:
        raise result["error"]
    status = result["status"]
    if _effort is not None:
        _effort["solves"] += 1
        _effort["deterministic_time"] += solver.deterministic_time
        _effort["num_branches"] += solver.num_branches
        _effort["num_conflicts"] += solver.num_conflicts
        _effort["bound"] = solver.best_objective_bound if status == cp_model.FEASIBLE else None
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise NoSolution(f"CP-SAT found no solution ({solver.StatusName(status)}) within the time limit")
    if status == cp_model.FEASIBLE and solver.ResponseProto().deterministic_time < time_limit:
        # Only the deterministic limit may end a search whose result is recorded.
        raise RuntimeError("CP-SAT stopped before its deterministic time limit; the result would not be reproducible")
    return solver, status == cp_model.OPTIMAL


def settles(solver: cp_model.CpSolver, objective: float, minimize: bool) -> bool:
    """Whether the bound of a search stopped unproven shows a known answer's `objective`
    (every objective is an integer) to be optimal."""
    bound = solver.best_objective_bound
    return objective <= math.ceil(bound - 1e-6) if minimize else objective >= math.floor(bound + 1e-6)


def tighten_bound(bound: float, minimize: bool) -> None:
    """Another valid bound on the optimum (a task's own relaxation) after an unproven solve: the
    open `effort()` block keeps the tighter of it and CP-SAT's, which the record then carries."""
    if _effort is not None and _effort["bound"] is not None:
        _effort["bound"] = max(_effort["bound"], bound) if minimize else min(_effort["bound"], bound)


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
