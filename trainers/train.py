"""`mmnp train`: one spec (CLI flags over a YAML file over defaults) -> the algorithm's
TRL config and trainer, the MM-NP-Bench training data, and a checkpoint that
`mmnp eval --model hf:DIR` loads."""

from __future__ import annotations

import csv
import dataclasses
import json
from dataclasses import fields
from pathlib import Path

from transformers import TrainerCallback

from mmnp.errors import UsageError
from mmnp.trainers.rewards import get_reward
from mmnp.trainers.spec import TrainSpec


class MetricsLog(TrainerCallback):
    """Every logged dict as a CSV row (metrics.csv) and a rich line on the console."""

    def __init__(self, output_dir: str, console=None, shown: tuple[str, ...] = ()) -> None:
        self.path = Path(output_dir) / "metrics.csv"
        self.console = console
        self.shown = ("loss", "reward", "mmnp/sr", "mmnp/qr", "mmnp/distinct_feasible", "entropy",
                      "completions/mean_length") + shown
        self.rows: list[dict] = []
        self.resumed = False
        if self.path.exists():  # a resumed run keeps the rows of the steps before it
            with open(self.path, newline="") as f:
                self.rows = [{k: float(v) for k, v in r.items() if v != ""} for r in csv.DictReader(f)]

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or not state.is_world_process_zero:
            return
        row = {"step": state.global_step, **{k: v for k, v in logs.items() if isinstance(v, (int, float))}}
        if not self.resumed:  # rows the interrupted run logged after its last checkpoint are redone now
            self.rows = [r for r in self.rows if r["step"] < state.global_step]
            self.resumed = True
        self.rows.append(row)
        columns = sorted({k for r in self.rows for k in r}, key=lambda k: (k != "step", k))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "w", newline="") as f:
            writer = csv.DictWriter(f, columns)
            writer.writeheader()
            writer.writerows(self.rows)
        if self.console is not None:
            keys = [k for k in self.shown if k in row]
            self.console.print(f"[bold]step {state.global_step}[/] " +
                               "  ".join(f"{k} {row[k]:.4g}" for k in keys), highlight=False)


def build_trainer(spec: TrainSpec, console=None):
    """The registered trainer of `spec.algo`, its config from the spec's shared settings and
    the algorithm's options, and the training data (`mmnp.trainers.data`)."""
    import torch
    from transformers import AutoConfig, AutoTokenizer

    from mmnp.evaluation.models import load_processor
    from mmnp.trainers.algorithms import get_algorithm
    from mmnp.trainers.curriculum import Curriculum, curriculum_spec
    from mmnp.trainers.curriculum_callback import CurriculumCallback
    from mmnp.trainers.data import parse_params, train_dataset

    spec.validate()
    trainer_class = get_algorithm(spec.algo)
    config_class = trainer_class.config_class
    vision = getattr(AutoConfig.from_pretrained(spec.model), "vision_config", None) is not None
    if spec.modality == "image" and not vision:
        raise UsageError(f"{spec.model} has no vision tower: train it with --modality text")
    processing = (load_processor if vision else AutoTokenizer.from_pretrained)(spec.model, padding_side="left")
    bf16 = spec.bf16 if spec.bf16 is not None else bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    own = {f.name for f in fields(config_class)}
    config_values = {name: getattr(spec, name) for name in own & {f.name for f in fields(TrainSpec)}
                     if name not in ("model", "seed", "bf16") and getattr(spec, name) is not None}
    schedule = curriculum_spec(spec)
    config = config_class(**config_values, **spec.options, bf16=bf16, seed=spec.seed,
                          use_cpu=not torch.cuda.is_available(), save_strategy="steps", log_completions=False,
                          remove_unused_columns=False, **({"shuffle_dataset": False} if schedule else {}))
    reward = get_reward(spec.reward)
    callbacks = [MetricsLog(spec.output_dir, console, trainer_class.display_metrics)]
    if schedule is None:
        dataset = train_dataset(spec.tasks, spec.difficulty.split(","), spec.count, spec.seed, spec.modality,
                                spec.data, spec.system_prompt, spec.image_size, parse_params(spec.params))
    else:  # instances drawn level by level; the callback moves the levels (before MetricsLog logs them)
        curriculum = Curriculum(spec.tasks, schedule, seed=spec.seed)
        dataset = curriculum.iterable_dataset(spec.modality, spec.system_prompt, spec.image_size)
        reward = curriculum.wrap_reward(reward)
        callbacks.insert(0, CurriculumCallback(curriculum))
    return trainer_class(model=spec.model, reward_funcs=[reward], args=config, train_dataset=dataset,
                         processing_class=processing, callbacks=callbacks)


def train(trainer, spec: TrainSpec) -> Path:
    """Train (resuming from the newest checkpoint in the output folder, if any) and save."""
    from transformers.trainer_utils import get_last_checkpoint

    out_dir = Path(spec.output_dir)
    last = get_last_checkpoint(str(out_dir)) if out_dir.is_dir() else None
    trainer.train(resume_from_checkpoint=last)
    out = out_dir
    trainer.save_model(str(out))
    (out / "mmnp_train.json").write_text(json.dumps(dataclasses.asdict(spec), indent=1))
    return out
