"""The curriculum's trainer callback (`mmnp.trainers.curriculum`): a module of its own because it
imports transformers, which the train flags' `CurriculumSpec` must not."""

from __future__ import annotations

import json
from pathlib import Path

from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState

from mmnp.errors import UsageError
from mmnp.files import atomic_write
from mmnp.trainers.curriculum import LIVE, Curriculum


class CurriculumCallback(TrainerCallback, ExportableState):
    """Applies the curriculum at each optimisation step's end (after the step's rewards were
    recorded by `wrap_reward`), logs levels and rolling SR per step (to `curriculum.jsonl` in the
    output folder, and as `curriculum/<task>_level` / `_sr` in the trainer's logs), and saves and
    restores the curriculum with the trainer's checkpoints. Several processes: the outcomes are
    summed across them before the schedule runs, so every process keeps the same levels."""

    def __init__(self, curriculum: Curriculum | str = "default") -> None:
        if isinstance(curriculum, str):
            if curriculum not in LIVE:
                raise UsageError(f"no curriculum named {curriculum!r} in this process; build the Curriculum first")
            curriculum = LIVE[curriculum]
        self.curriculum = curriculum
        self.last: dict | None = None

    # ExportableState: restored by `type(cb)(**args)` then setattr of each attribute
    def state(self) -> dict:
        return {"args": {"curriculum": self.curriculum.name},
                "attributes": {"curriculum_state": self.curriculum.state_dict()}}

    @property
    def curriculum_state(self) -> dict:
        return self.curriculum.state_dict()

    @curriculum_state.setter
    def curriculum_state(self, state: dict) -> None:
        self.curriculum.load_state_dict(state)

    def on_train_begin(self, args, state, control, **kwargs):
        if getattr(args, "shuffle_dataset", False):
            raise UsageError("a curriculum draws its instances in order: set shuffle_dataset=False in the trainer's "
                             "config (a shuffle buffer would draw ~1000 instances ahead of the levels)")
        if state.is_world_process_zero:  # a resumed run redoes the steps after its checkpoint
            self.keep_until(args.output_dir, state.global_step)

    def keep_until(self, output_dir: str, step: int) -> None:
        """curriculum.jsonl's lines of the steps up to `step` only (a torn last line dropped)."""
        path = Path(output_dir) / "curriculum.jsonl"
        if not path.exists():
            return
        raw = path.read_text()
        lines = raw.splitlines() if raw.endswith("\n") else raw.splitlines()[:-1]  # a kill can cut the last
        kept = [line for line in lines if json.loads(line)["step"] <= step]
        if kept != raw.splitlines():
            atomic_write(path, "".join(line + "\n" for line in kept))

    def on_step_end(self, args, state, control, **kwargs):
        self._sync()
        self.last = self.curriculum.step(state.global_step)
        if state.is_world_process_zero:
            path = Path(args.output_dir) / "curriculum.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a") as f:
                f.write(json.dumps(self.last) + "\n")

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is not None and self.last is not None:
            columns = {f"curriculum/{task}_level": level for task, level in self.last["levels"].items()}
            columns.update({f"curriculum/{task}_sr": sr for task, sr in self.last["sr"].items() if sr is not None})
            logs.update(columns)
            if state.log_history and state.log_history[-1].get("step") == state.global_step:
                state.log_history[-1].update(columns)  # the checkpoint's record, which a resumed run's rows are

    def _sync(self) -> None:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            import torch

            counts = torch.tensor(self.curriculum.pending(), dtype=torch.long,
                                  device="cuda" if torch.cuda.is_available() else "cpu")
            dist.all_reduce(counts)
            self.curriculum.set_pending(counts.tolist())
