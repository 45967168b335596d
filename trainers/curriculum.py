"""Curricula over the level ladder (mmnp/levels.py): which level each task's training
instances come from, step by step.

- `fixed`: every task stays at `start`.
- `linear`: every task climbs one level each `every` steps, from `start` to `top`.
- `adaptive` (reasoning-gym's attribute curricula): a task goes up one level when its rolling
  success rate (the share of feasible completions over at least the last `window` completions
  at its current level) reaches `raise_at`, and down one when it falls to `lower_at`. The
  band between the two thresholds, and a fresh window after every change, keep it from
  flapping; completions of prompts drawn at an earlier level are not counted.

Three pieces, usable with or without `mmnp train`:

    curriculum = Curriculum(["tsp", "knapsack"], CurriculumSpec("adaptive"), seed=1)
    dataset = curriculum.iterable_dataset()            # TRL: GRPOTrainer(train_dataset=...)
    reward = curriculum.wrap_reward(quality_reward)     # counts feasible completions per task
    callback = CurriculumCallback(curriculum)           # (curriculum_callback.py) applies it at each step's end

verl or a custom loop: iterate `CurriculumStream(curriculum)` for rows, call
`curriculum.record(task, level, feasible)` per completion and `curriculum.step(step)` per step.

Determinism and resuming: item i of the stream is a pure function of (seed, i) and the level
its task had when item i was first drawn, which the curriculum remembers. The state
(levels, windows, that history) is saved with every checkpoint through the callback (a
transformers `ExportableState`) and restored on resume; the Trainer then skips the batches
it already trained on by drawing them again, which gives the same instances at the same
levels, so a resumed run equals a straight one. Accelerate's data loader prefetches one
batch, so with TRL a level change reaches the prompts of the step after the next one (the
outcomes of the step in between, drawn at the old level, are not counted).
"""

from __future__ import annotations

import bisect
import io
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable, Iterator

from mmnp.dataset import SEED_STRIDE, instance_id
from mmnp.errors import UsageError
from mmnp.levels import TOP, level_name
from mmnp.registry import get_task, resolve_tasks
from mmnp.trainers.rewards import COLUMN, record_payload, score

SCHEDULES = ("fixed", "linear", "adaptive")


def _f(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass
class CurriculumSpec:
    """The `mmnp train --curriculum ...` flags (field names are the flags' and YAML keys' names)."""

    curriculum: str = _f("fixed", "Level schedule: fixed, linear or adaptive (levels L1..L10 of mmnp.levels).")
    curriculum_start: int = _f(1, "Curriculum: the level every task starts at.")
    curriculum_top: int = _f(TOP, "Curriculum: the highest level it may reach.")
    curriculum_every: int = _f(50, "linear: steps per level.")
    curriculum_raise_at: float = _f(0.8, "adaptive: rolling success rate that moves a task one level up.")
    curriculum_lower_at: float = _f(0.3, "adaptive: rolling success rate that moves a task one level down.")
    curriculum_window: int = _f(64, "adaptive: completions at the current level needed before a move.")

    def validate(self) -> None:
        if self.curriculum not in SCHEDULES:
            raise UsageError(f"--curriculum {self.curriculum!r}: choose one of {', '.join(SCHEDULES)}")
        if not 1 <= self.curriculum_start <= self.curriculum_top <= TOP:
            raise UsageError(f"--curriculum-start {self.curriculum_start} and --curriculum-top {self.curriculum_top}: "
                             f"need 1 <= start <= top <= {TOP}")
        if self.curriculum_every < 1 or self.curriculum_window < 1:
            raise UsageError("--curriculum-every and --curriculum-window must be at least 1")
        if not 0 <= self.curriculum_lower_at < self.curriculum_raise_at <= 1:
            raise UsageError(f"--curriculum-lower-at {self.curriculum_lower_at} and --curriculum-raise-at "
                             f"{self.curriculum_raise_at}: need 0 <= lower < raise <= 1")


def curriculum_spec(settings: Any) -> CurriculumSpec | None:
    """The curriculum part of a settings object with these field names (e.g. `TrainSpec`); None
    when its `curriculum` is unset (train on a fixed dataset, as without a curriculum)."""
    if getattr(settings, "curriculum", None) is None:
        return None
    spec = CurriculumSpec(**{f.name: getattr(settings, f.name) for f in fields(CurriculumSpec)})
    spec.validate()
    return spec


CURRICULUM_FIELDS: list[tuple[str, type, str]] = [
    (f.name, type(f.default), f.metadata["help"]) for f in fields(CurriculumSpec)
]

LIVE: dict[str, Curriculum] = {}  # by name: how a callback restored from a checkpoint finds its curriculum


class Curriculum:
    """Each task's current level, the evidence for moving it, and the level every drawn item had."""

    def __init__(self, tasks: str | list[str], spec: CurriculumSpec | None = None, seed: int = 1,
                 name: str = "default") -> None:
        self.spec = spec or CurriculumSpec()
        self.spec.validate()
        self.tasks = [t.name for t in resolve_tasks(tasks)]
        self.seed = seed
        self.name = name
        self.levels = {t: self.spec.curriculum_start for t in self.tasks}
        self.step_done = 0
        self._window: dict[str, list[list[int]]] = {t: [] for t in self.tasks}  # per step: [feasible, completions]
        self._pending: dict[str, list[int]] = {t: [0, 0] for t in self.tasks}  # since the last step()
        self.drawn = 0  # items drawn so far
        self._history: list[tuple[int, dict[str, int]]] = [(0, dict(self.levels))]  # (first item, levels)
        LIVE[name] = self

    # -- the stream's side ---------------------------------------------------------------------
    def item(self, index: int) -> tuple[str, int, int]:
        """(task, level, seed) of stream item `index`: tasks in turn, each at its level when first drawn."""
        task = self.tasks[index % len(self.tasks)]
        if index >= self.drawn:
            if self._history[-1][1] != self.levels:
                self._history.append((index, dict(self.levels)))
            self.drawn = index + 1
            return task, self.levels[task], self.seed * SEED_STRIDE + index
        at = bisect.bisect_right([start for start, _ in self._history], index) - 1
        return task, self._history[at][1][task], self.seed * SEED_STRIDE + index

    # -- feedback --------------------------------------------------------------------------------
    def record(self, task: str, level: int, feasible: bool) -> None:
        """One completion's outcome; ignored when drawn at another level than the task's current one."""
        if task in self._pending and level == self.levels[task]:
            self._pending[task][0] += bool(feasible)
            self._pending[task][1] += 1

    def pending(self) -> list[int]:
        """The outcomes not yet applied, flat (feasible, completions per task): what processes sum."""
        return [x for t in self.tasks for x in self._pending[t]]

    def set_pending(self, flat: list[int]) -> None:
        for i, t in enumerate(self.tasks):
            self._pending[t] = [int(flat[2 * i]), int(flat[2 * i + 1])]

    def rolling_sr(self, task: str) -> float | None:
        """Feasible share over the task's most recent steps holding at least `window` completions."""
        done = total = 0
        for feasible, count in reversed(self._window[task]):
            done, total = done + feasible, total + count
            if total >= self.spec.curriculum_window:
                break
        return done / total if total else None

    def step(self, global_step: int) -> dict:
        """Apply the outcomes since the last call and the schedule; returns the step's log entry."""
        spec = self.spec
        changes = []
        for task in self.tasks:
            feasible, count = self._pending[task]
            self._pending[task] = [0, 0]
            if count:
                self._window[task].append([feasible, count])
            old = self.levels[task]
            if spec.curriculum == "linear":
                new = min(spec.curriculum_top, spec.curriculum_start + global_step // spec.curriculum_every)
            elif spec.curriculum == "adaptive":
                new = old
                seen = sum(c for _, c in self._window[task])
                sr = self.rolling_sr(task)
                if seen >= spec.curriculum_window and sr is not None:
                    if sr >= spec.curriculum_raise_at and old < spec.curriculum_top:
                        new = old + 1
                    elif sr <= spec.curriculum_lower_at and old > 1:
                        new = old - 1
            else:
                new = old
            if new != old:
                self.levels[task] = new
                self._window[task] = []  # a fresh window at the new level
                changes.append({"task": task, "from": old, "to": new})
            self._trim(task)
        self.step_done = global_step
        return {"step": global_step, "levels": dict(self.levels),
                "sr": {t: self.rolling_sr(t) for t in self.tasks}, "changes": changes}

    def _trim(self, task: str) -> None:
        """Keep only the steps the rolling window can still reach."""
        total = 0
        for i in range(len(self._window[task]) - 1, -1, -1):
            total += self._window[task][i][1]
            if total >= self.spec.curriculum_window:
                del self._window[task][:i]
                return

    # -- checkpoints -----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"spec": asdict(self.spec), "tasks": self.tasks, "seed": self.seed, "levels": dict(self.levels),
                "step": self.step_done, "window": self._window, "pending": self._pending, "drawn": self.drawn,
                "history": [[start, levels] for start, levels in self._history]}

    def load_state_dict(self, state: dict) -> None:
        if state["tasks"] != self.tasks or state["seed"] != self.seed or state["spec"] != asdict(self.spec):
            raise UsageError("the checkpoint's curriculum (tasks, seed or settings) differs from this run's; "
                             "resume with the same --tasks, --seed and --curriculum flags, or start a new --output-dir")
        self.levels = dict(state["levels"])
        self.step_done = state["step"]
        self._window = {t: [list(x) for x in v] for t, v in state["window"].items()}
        self._pending = {t: list(v) for t, v in state["pending"].items()}
        self.drawn = state["drawn"]
        self._history = [(start, dict(levels)) for start, levels in state["history"]]

    # -- adapters --------------------------------------------------------------------------------
    def wrap_reward(self, reward_fn: Callable[..., list[float]]) -> Callable[..., list[float]]:
        """`reward_fn` (TRL's signature), also counting each completion's feasibility for its task
        at the level its prompt was drawn at (the `level` column of the stream's rows)."""

        def reward(prompts: list, completions: list, mmnp_instance: list[str], **columns: Any) -> list[float]:
            levels = columns.get("level") or [None] * len(completions)
            for completion, payload, level in zip(completions, mmnp_instance, levels):
                if level is not None:
                    self.record(json.loads(payload)["task"], int(level), score(completion, payload)[0].feasible)
            return reward_fn(prompts, completions, mmnp_instance, **columns)

        reward.__name__ = getattr(reward_fn, "__name__", "reward")
        return reward

    def iterable_dataset(self, modality: str = "text", system_prompt: str | None = None, image_size: int = 768,
                         overrides: dict[str, dict] | None = None):
        """A `datasets.IterableDataset` over the stream, for `GRPOTrainer(train_dataset=...)`; give
        the trainer `shuffle_dataset=False` (a shuffle buffer would draw far ahead of the levels)."""
        from datasets import IterableDataset

        stream = CurriculumStream(self, modality, system_prompt, image_size, overrides)
        return IterableDataset.from_generator(_rows, gen_kwargs={"stream": stream})


def _rows(stream: CurriculumStream) -> Iterator[dict]:
    yield from stream


class CurriculumStream:
    """An endless, seeded stream of training rows at the curriculum's current levels, in the
    format of `mmnp.trainers.data.to_rows` plus a `level` column. Iteration starts at item 0:
    items drawn before come back unchanged (their level is remembered), later ones at the levels
    of the moment. Also a torch `IterableDataset` in all but name (an iterable of dicts).
    `overrides` (by task: generator parameters, `mmnp train --params`) apply on top of every
    level, as `mmnp generate --param` does on a level."""

    def __init__(self, curriculum: Curriculum, modality: str = "text", system_prompt: str | None = None,
                 image_size: int = 768, overrides: dict[str, dict] | None = None) -> None:
        if modality not in ("text", "image"):
            raise UsageError(f"modality {modality!r}: choose text or image")
        self.curriculum = curriculum
        self.modality = modality
        self.system_prompt = system_prompt
        self.image_size = image_size
        self.overrides = overrides or {}

    def __iter__(self) -> Iterator[dict]:
        return self.iterate(0)

    def iterate(self, start: int) -> Iterator[dict]:
        index = start
        while True:
            yield self.row(index)
            index += 1

    def row(self, index: int) -> dict:
        task_name, level, seed = self.curriculum.item(index)
        task = get_task(task_name)
        difficulty = level_name(level)
        inst = task.generate(difficulty, seed, id=instance_id(task_name, difficulty, index),
                             **self.overrides.get(task_name, {}))
        text = inst.prompt if self.modality == "text" else inst.image_prompt
        prompt = ([{"role": "system", "content": self.system_prompt}] if self.system_prompt else []) + \
            [{"role": "user", "content": text}]
        row = {"prompt": prompt, COLUMN: record_payload(inst), "task": task_name, "difficulty": difficulty,
               "level": level}
        if self.modality == "image":
            from PIL import Image

            row["image"] = Image.open(io.BytesIO(task.render(inst, self.image_size, whole=True))).convert("RGB")
        return row
