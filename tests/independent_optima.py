"""Second exact formulations, independent of mmnp's own exact solvers, to check generated
references against (shared by tests/test_references.py and benchmarks/check_references.py).

- TSP: Dantzig-Fulkerson-Johnson on SCIP (a 0/1 program over undirected edges with degree 2
  everywhere, each subtour the solution shows cut off until it is one tour), where mmnp uses
  CP-SAT's directed circuit constraint.
- Meeting scheduling: CP-SAT with an integer start per meeting ranging over every minute its
  attendees are all available (no candidate-start reduction), a room chosen by integer
  variable, and no-overlap constraints on optional intervals per room and per person, where
  mmnp uses one Boolean per placement over its candidate starts.
"""

from __future__ import annotations

import numpy as np

from mmnp.kits.meetings import minutes


def tsp_optimum(coords: list[list[int]], rounds: int = 200) -> int | None:
    """The optimal tour length by DFJ subtour elimination on SCIP; None if `rounds` of cuts
    do not close it."""
    from ortools.linear_solver import pywraplp

    xy = np.asarray(coords, dtype=np.float64)
    d = np.floor(np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1)) + 0.5).astype(np.int64)
    n = len(d)
    solver = pywraplp.Solver.CreateSolver("SCIP")
    solver.SetNumThreads(1)
    x = {(i, j): solver.BoolVar("") for i in range(n) for j in range(i + 1, n)}
    for v in range(n):
        solver.Add(sum(x[min(v, u), max(v, u)] for u in range(n) if u != v) == 2)
    solver.Minimize(sum(int(d[i, j]) * var for (i, j), var in x.items()))
    for _ in range(rounds):
        if solver.Solve() != pywraplp.Solver.OPTIMAL:
            return None
        chosen = [(i, j) for (i, j), var in x.items() if var.solution_value() > 0.5]
        parts = _components(n, chosen)
        if len(parts) == 1:
            return int(sum(d[i, j] for i, j in chosen))
        for part in parts:  # each subtour's cities must connect to the rest by two edges
            inside = set(part)
            solver.Add(sum(x[min(i, j), max(i, j)] for i in part for j in range(n) if j not in inside) >= 2)
    return None


def _components(n: int, edges: list[tuple[int, int]]) -> list[list[int]]:
    parent = list(range(n))

    def find(v: int) -> int:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for i, j in edges:
        parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for v in range(n):
        groups.setdefault(find(v), []).append(v)
    return list(groups.values())


def meeting_optimum(data: dict, seconds: float = 60.0) -> int | None:
    """The most attendees any schedule seats, by an integer-start CP-SAT model over every
    minute of the day; None when not proven within `seconds`."""
    from ortools.sat.python import cp_model

    day0, day1 = (minutes(t) for t in data["day"])
    windows = [[(minutes(a), minutes(b)) for a, b in p["available"]] for p in data["people"]]
    model = cp_model.CpModel()
    by_room: dict[int, list] = {}
    by_person: dict[int, list] = {}
    value = []
    for meeting in data["meetings"]:
        duration, people = meeting["duration"], meeting["attendees"]
        starts = [s for s in range(day0, day1 - duration + 1)
                  if all(any(a <= s and s + duration <= b for a, b in windows[p]) for p in people)]
        rooms = [r for r, room in enumerate(data["rooms"]) if room["capacity"] >= len(people)]
        if not starts or not rooms:
            continue
        held = model.NewBoolVar("")
        start = model.NewIntVarFromDomain(cp_model.Domain.FromValues(starts), "")
        room = model.NewIntVarFromDomain(cp_model.Domain.FromValues(rooms), "")
        for p in people:
            by_person.setdefault(p, []).append(model.NewOptionalFixedSizeIntervalVar(start, duration, held, ""))
        for r in rooms:
            here = model.NewBoolVar("")
            model.Add(room == r).OnlyEnforceIf(here)
            model.Add(room != r).OnlyEnforceIf(here.Not())
            both = model.NewBoolVar("")
            model.AddBoolAnd([held, here]).OnlyEnforceIf(both)
            model.AddBoolOr([held.Not(), here.Not()]).OnlyEnforceIf(both.Not())
            by_room.setdefault(r, []).append(model.NewOptionalFixedSizeIntervalVar(start, duration, both, ""))
        value.append(len(people) * held)
    for intervals in list(by_room.values()) + list(by_person.values()):
        model.AddNoOverlap(intervals)
    model.Maximize(sum(value))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = seconds
    status = solver.Solve(model)
    return int(solver.ObjectiveValue()) if status == cp_model.OPTIMAL else None
