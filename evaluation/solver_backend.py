"""Reference solvers as baseline "models": they answer in text through the same pipeline
as any model, so a leaderboard exists without a GPU and the pipeline is testable end to end.

`solver:heuristic` and `solver:optimal` reuse the dataset's stored references;
`solver:random` draws a uniformly random candidate (seeded per instance and sample); any
other name is a function of the task's solver module, such as `solver:trivial`, each task's
simplest feasible answer (every vertex, every subset, one colour per vertex, the empty
knapsack...): SR 1 and the QR that feasibility alone earns.

`solver:parrot` answers every request with its own prompt (the text prompt, the image
prompt, the probe's instruction), as a model that copies its input would: prompts show the
answer's form with placeholders the parser refuses, so it must score SR 0 everywhere.

Two baselines bound the optional protocols: `solver:transcribe` answers the perception probe
(--probe transcribe) with the exact transcription (and the task with the heuristic), while every
other solver answers it with a garbled one (a lower bound); `solver:repair` (--rounds) fixes one
violation per round: round 1 is the heuristic answer damaged in 1 to MAX_DAMAGE places (seeded
per sample), and each round whose feedback names a violation undoes the one damage that caused
it, so SR at round r climbs over the rounds; without named violations it answers the same again.
"""

from __future__ import annotations

import json
import time
import zlib
from dataclasses import dataclass

import numpy as np
from mmnp.evaluation.backend import Completion, Emit, Request, Sampling, SelfTest, option

from mmnp.errors import UsageError
from mmnp.registry import get_task, list_tasks
from mmnp.task import Task
from mmnp.transcribe import transcribe

MAX_DAMAGE = 3  # solver:repair's round-1 answer is damaged in 1..MAX_DAMAGE places
RANDOM_POOL = 3  # random answers whose parts solver:repair may put into the heuristic's
OWN_SOLVERS = ("parrot", "repair", "transcribe", "heuristic", "optimal", "planted", "random")  # answered here


@dataclass(frozen=True)
class SolverOptions:
    time_limit: float = option(10.0, "seconds for solver:optimal on instances without a stored optimum")


class SolverBackend:
    Options = SolverOptions
    self_test = SelfTest(target="heuristic")

    def __init__(self, solver: str, options: SolverOptions | None = None) -> None:
        if solver not in OWN_SOLVERS and not any(
                callable(getattr(task.solver, solver, None)) for task in list_tasks()) or solver.startswith("_"):
            raise UsageError(f"solver:{solver}: no such solver; try heuristic, optimal, random, trivial or parrot")
        self.solver = solver
        self.name = f"solver:{solver}"
        self.time_limit = (options or SolverOptions()).time_limit

    def run(self, requests: list[Request], sampling: Sampling, emit: Emit) -> None:
        if sampling.extra:
            raise UsageError(f"--gen-kwargs {', '.join(sampling.extra)}: solver baselines take no generation "
                             "options")
        for request in requests:
            start = time.perf_counter()
            if self.solver == "parrot":  # what copying the prompt earns: nothing
                emit(request, Completion(request.text, latency_s=time.perf_counter() - start))
                continue
            try:
                solution = self._solve(request, sampling)
            except UsageError:  # a solver that does not exist: stop at once, not one failure per sample
                raise
            except Exception as e:  # a baseline that cannot answer is a failed call, not a crash
                emit(request, Completion(None, latency_s=time.perf_counter() - start, error=f"{type(e).__name__}: {e}"))
                continue
            if request.modality == "probe":
                emit(request, Completion(solution, latency_s=time.perf_counter() - start))
                continue
            task = get_task(request.instance.task)
            text = f"{task.name} solved by the {self.solver} solver.\n{task.format_answer(solution)}"
            emit(request, Completion(text, latency_s=time.perf_counter() - start))

    def _solve(self, request: Request, sampling: Sampling):
        inst = request.instance
        task = get_task(inst.task)
        seed = [sampling.seed, zlib.crc32(inst.hash.encode()), request.sample]
        if request.modality == "probe":
            exact = transcribe(inst.task, inst.data)
            return json.dumps(exact if self.solver == "transcribe" else _garble(exact, np.random.default_rng(seed)))
        if self.solver == "repair":
            return _repaired(task, inst.data, inst.reference["heuristic"]["solution"], np.random.default_rng(seed),
                             [said for _, said in request.history])
        if self.solver == "transcribe":  # a perfect reader that reasons like the heuristic
            return inst.reference["heuristic"]["solution"]
        stored = inst.reference.get(self.solver)
        if self.solver in ("heuristic", "optimal", "planted") and stored:
            return stored["solution"]
        if self.solver == "random":
            return task.solver.random(inst.data, np.random.default_rng(seed))
        if self.solver == "optimal":  # a dataset made with --no-optimal: solved here, as generate would
            return task.best_known(inst.data, inst.reference["heuristic"], self.time_limit)[0]["solution"]
        fn = getattr(task.solver, self.solver, None)
        if fn is None or self.solver.startswith("_") or not callable(fn):
            raise UsageError(f"{task.name} has no solver {self.solver!r}; try heuristic, optimal, random, trivial or "
                             "parrot")
        return fn(inst.data)


# solver:repair. A damage is one edit of a list answer (every task's answer is a list): drop
# part i, append a copy of part i, append a part, or set part i; it touches one position at most.
Damage = tuple


def _damaged(base: list, damages: list[Damage]) -> list:
    """`base` with `damages` applied (drops and sets in place, then the appended parts in order)."""
    dropped = {d[1] for d in damages if d[0] == "drop"}
    replaced = {d[1]: d[2] for d in damages if d[0] == "set"}
    out = [replaced.get(i, part) for i, part in enumerate(base) if i not in dropped]
    return out + [base[d[1]] if d[0] == "copy" else d[1] for d in damages if d[0] in ("copy", "add")]


def _damages(task: Task, data: dict, base: list, rng: np.random.Generator) -> list[Damage]:
    """1..MAX_DAMAGE damages at distinct positions, each of which alone makes `base` infeasible,
    chosen so that the repair (one damage undone per named violation) restores `base` in as
    many rounds; parts to put in come from a few random answers."""
    pool = []
    for _ in range(RANDOM_POOL):
        pool += [part for part in task.solver.random(data, rng) if part not in pool]
    candidates: list[Damage] = [("add", part) for part in pool if part not in base]
    for i in range(len(base)):
        candidates += [("drop", i), ("copy", i)]
        candidates += [("set", i, part) for part in pool[:: max(1, len(pool) // 4)] if part != base[i]]  # ~4 a position
    wanted = int(rng.integers(1, MAX_DAMAGE + 1))
    # each try picks a kind of damage at random first, so sets (many per position) do not crowd out the rest
    queues = [[c for c in candidates if c[0] == kind] for kind in ("add", "drop", "copy", "set")]
    queues = [[q[i] for i in rng.permutation(len(q))] for q in queues if q]
    chosen: list[Damage] = []
    while queues and len(chosen) < wanted:
        queue = queues[int(rng.integers(len(queues)))]
        damage = queue.pop()
        if not queue:
            queues.remove(queue)
        if damage[0] != "add" and any(c[0] != "add" and c[1] == damage[1] for c in chosen):
            continue  # one damage per position
        if _messages(task, data, _damaged(base, [damage])) and _repairable(task, data, base, [*chosen, damage]):
            chosen.append(damage)
    return chosen


def _messages(task: Task, data: dict, answer: list) -> list[str]:
    """The violations the feedback names for `answer` as it is read back from the text sent
    (which may reorder it: id lists are printed sorted); evaluation.runner.feedback lists 10."""
    read_back = task.verifier.parse(task.format_answer(answer))
    return [v.message for v in task.verifier.check(data, read_back)[1]][:10]


def _undo_one(task: Task, data: dict, base: list, left: list[Damage], named: list[str]) -> list[Damage]:
    """`left` less one damage: of those whose undoing clears or changes the first named violation
    that one undo can change, the one that touches the fewest other named violations. Unchanged
    when nothing is named (or no single undo helps)."""
    if not named:
        return left
    after = [set(_messages(task, data, _damaged(base, left[:k] + left[k + 1:]))) for k in range(len(left))]
    for message in named:
        fixes = [k for k in range(len(left)) if message not in after[k]]
        if fixes:
            k = min(fixes, key=lambda k: sum(other not in after[k] for other in named))
            return left[:k] + left[k + 1:]
    return left


def _repairable(task: Task, data: dict, base: list, damages: list[Damage]) -> bool:
    """Whether the repair, told each round's violations, undoes one damage a round and is
    feasible exactly when none is left (damages that mask each other are refused)."""
    left = damages
    while left:
        named = _messages(task, data, _damaged(base, left))
        if not named:
            return False
        shorter = _undo_one(task, data, base, left, named)
        if len(shorter) == len(left):
            return False
        left = shorter
    return True


def _repaired(task: Task, data: dict, base: list, rng: np.random.Generator, feedback: list[str]) -> list:
    """solver:repair's answer after the rounds whose feedback is given: the damaged heuristic
    answer, less one damage for each feedback that names a violation."""
    left = _damages(task, data, base, rng)
    for said in feedback:
        left = _undo_one(task, data, base, left, [line[2:] for line in said.splitlines() if line.startswith("- ")])
    return _damaged(base, left)


def _garble(value, rng: np.random.Generator):
    """A random misreading of a transcription: every number redrawn (0 to twice its value),
    every list shuffled; strings (names, times) kept."""
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(rng.integers(0, 2 * abs(value) + 2))
    if isinstance(value, list):
        return [_garble(value[i], rng) for i in rng.permutation(len(value))]
    if isinstance(value, dict):
        return {k: _garble(v, rng) for k, v in value.items()}
    return value
