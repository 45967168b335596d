"""Reference solvers as baseline "models": they answer in text through the same pipeline
as any model, so a leaderboard exists without a GPU and the pipeline is testable end to end.

`solver:heuristic` and `solver:optimal` reuse the dataset's stored references;
`solver:random` draws a uniformly random candidate (seeded per instance and sample); any
other name is a function of the task's solver module.

Two baselines bound the optional protocols: `solver:transcribe` answers the perception probe
(--probe transcribe) with the exact transcription (and the task with the heuristic), while every
other solver answers it with a garbled one (a lower bound); `solver:repair` (--rounds) answers
round 1 at random and, once the verifier's feedback names a violation, the heuristic answer.
"""

from __future__ import annotations

import json
import time
import zlib
from dataclasses import dataclass

import numpy as np
from mmnp.evaluation.backend import Completion, Emit, Request, Sampling, option

from mmnp.errors import UsageError
from mmnp.registry import get_task
from mmnp.transcribe import transcribe


@dataclass(frozen=True)
class SolverOptions:
    time_limit: float = option(10.0, "seconds for solver:optimal on instances without a stored optimum")


class SolverBackend:
    Options = SolverOptions

    def __init__(self, solver: str, options: SolverOptions | None = None) -> None:
        self.solver = solver
        self.name = f"solver:{solver}"
        self.time_limit = (options or SolverOptions()).time_limit

    def run(self, requests: list[Request], sampling: Sampling, emit: Emit) -> None:
        if sampling.extra:
            raise UsageError(f"--gen-kwargs {', '.join(sampling.extra)}: solver baselines take no generation "
                             "options")
        for request in requests:
            start = time.perf_counter()
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
        if self.solver == "repair":  # reads the feedback: a named violation makes it answer the heuristic
            told = request.history and "not feasible" in request.history[-1][1]
            return inst.reference["heuristic"]["solution"] if told else task.solver.random(
                inst.data, np.random.default_rng(seed))
        if self.solver == "transcribe":  # a perfect reader that reasons like the heuristic
            return inst.reference["heuristic"]["solution"]
        stored = inst.reference.get(self.solver)
        if self.solver in ("heuristic", "optimal", "planted") and stored:
            return stored["solution"]
        if self.solver == "random":
            return task.solver.random(inst.data, np.random.default_rng(seed))
        if self.solver == "optimal":
            return task.solver.optimal(inst.data, self.time_limit, inst.reference["heuristic"]["solution"])[0]
        fn = getattr(task.solver, self.solver, None)
        if fn is None or self.solver.startswith("_") or not callable(fn):
            raise UsageError(f"{task.name} has no solver {self.solver!r}; try heuristic, optimal or random")
        return fn(inst.data)


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
