"""`mmnp train`: one spec (CLI flags over a YAML file over defaults) -> the algorithm's
TRL config and trainer, the MM-NP-Bench training data, and a checkpoint that
`mmnp eval --model hf:DIR` loads."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import warnings
from dataclasses import fields
from pathlib import Path

from transformers import TrainerCallback

from mmnp.errors import UsageError
from mmnp.evaluation.models import weights_fingerprint
from mmnp.files import atomic_write
from mmnp.trainers.rewards import get_reward
from mmnp.trainers.spec import TrainSpec, model_identity, same_model


class MetricsLog(TrainerCallback):
    """Every logged dict as a CSV row (metrics.csv) and a rich line on the console. The rows of a
    resumed run's steps before its checkpoint, or of a finished run rerun, are the checkpoint's own
    record (`TrainerState.log_history`, saved with the weights), not what metrics.csv says: that
    file may be edited, or left by another run in the same folder. A row of the file is kept only
    where it agrees with the record (`_from_record`)."""

    def __init__(self, output_dir: str, console=None, shown: tuple[str, ...] = ()) -> None:
        self.path = Path(output_dir) / "metrics.csv"
        self.console = console
        self.shown = ("loss", "reward", "mmnp/sr", "mmnp/qr", "mmnp/distinct_feasible", "entropy",
                      "completions/mean_length") + shown
        self.rows: list[dict] = []

    def on_train_begin(self, args, state, control, **kwargs):
        # the state is the resumed checkpoint's here (empty for a fresh run); what an interrupted run
        # logged after it is redone
        if state.is_world_process_zero and state.log_history:
            self.rows = _from_record(state.log_history, state.global_step, self._written(), finished=False)
            self._write()

    def keep_until(self, output_dir: str, step: int) -> None:
        """A finished run rerun: the rows of its last checkpoint's record, the `step` steps its weights have."""
        from transformers import TrainerState
        from transformers.trainer_utils import get_last_checkpoint

        record = TrainerState.load_from_json(str(Path(get_last_checkpoint(output_dir)) / "trainer_state.json"))
        self.rows = _from_record(record.log_history, step, self._written(), finished=True)
        self._write()

    def _written(self) -> list[dict]:
        """metrics.csv's rows as numbers (none if the file is absent or not a table of numbers)."""
        try:
            with open(self.path, newline="") as f:
                return [{k: int(float(v)) if k == "step" else float(v) for k, v in r.items() if v}
                        for r in csv.DictReader(f) if r.get("step")]
        except (OSError, ValueError, TypeError, csv.Error):
            return []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or not state.is_world_process_zero:
            return
        row = _row(state.global_step, logs)
        self.rows.append(row)
        self._write()
        if self.console is not None:
            keys = [k for k in self.shown if k in row]
            self.console.print(f"[bold]step {state.global_step}[/] " +
                               "  ".join(f"{k} {row[k]:.4g}" for k in keys), highlight=False)

    def _write(self) -> None:
        columns = sorted({k for r in self.rows for k in r}, key=lambda k: (k != "step", k))
        text = io.StringIO(newline="")
        writer = csv.DictWriter(text, columns)
        writer.writeheader()
        writer.writerows(self.rows)
        atomic_write(self.path, text.getvalue())  # a kill mid-write never leaves the rows half there


def _from_record(log_history: list[dict], step: int, written: list[dict], finished: bool) -> list[dict]:
    """The rows of a trainer state's logs up to `step`. A row of metrics.csv (`written`) that has
    every number of the record's row for its step adds its curriculum columns where the record
    has none (a checkpoint written before they were recorded in it); and when every recorded row
    was found so, a finished run keeps the file's rows at its last step that no checkpoint records
    (the end-of-training summary, logged after the last save)."""
    by_step: dict[int, list[dict]] = {}
    for w in written:
        by_step.setdefault(w["step"], []).append(w)
    rows, matched = [], set()
    for entry in log_history:
        if entry.get("step", step + 1) > step:
            continue
        row = _row(entry["step"], entry)
        same = next((w for w in by_step.get(row["step"], ()) if id(w) not in matched
                     and all(k in w and _equal(w[k], v) for k, v in row.items())), None)
        if same is not None:
            matched.add(id(same))
            row.update({k: v for k, v in same.items() if k.startswith("curriculum/") and k not in row})
        rows.append(row)
    if finished and len(matched) == len(rows):
        rows += [w for w in by_step.get(step, ()) if id(w) not in matched]
    return rows


def _equal(written: float, logged: float) -> bool:
    return written == logged or (written != written and logged != logged)  # NaN == NaN: the same number logged


def _row(step: int, logs: dict) -> dict:
    """A logged dict's numbers as a metrics.csv row."""
    return {"step": step, **{k: v for k, v in logs.items()
                             if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool)}}


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
    bf16 = spec.bf16 if spec.bf16 is not None else bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    own = {f.name for f in fields(config_class)}
    config_values = {name: getattr(spec, name) for name in own & {f.name for f in fields(TrainSpec)}
                     if name not in ("model", "seed", "bf16") and getattr(spec, name) is not None}
    schedule = curriculum_spec(spec)
    config = config_class(**config_values, **spec.options, bf16=bf16, seed=spec.seed,  # checks the options
                          use_cpu=not torch.cuda.is_available(), save_strategy="steps", log_completions=False,
                          remove_unused_columns=False,  # a curriculum's levels resume with its checkpoint:
                          **({"shuffle_dataset": False, "restore_callback_states_from_checkpoint": True}
                             if schedule else {}))
    check_resumable(spec, config)  # before anything loads
    vision = getattr(AutoConfig.from_pretrained(spec.model), "vision_config", None) is not None
    if spec.modality == "image" and not vision:
        raise UsageError(f"{spec.model} has no vision tower: train it with --modality text")
    processing = (load_processor if vision else AutoTokenizer.from_pretrained)(spec.model, padding_side="left")
    reward = get_reward(spec.reward)
    callbacks = [MetricsLog(spec.output_dir, console, trainer_class.display_metrics)]
    if schedule is None:
        dataset = train_dataset(spec.tasks, spec.difficulty.split(","), spec.count, spec.seed, spec.modality,
                                spec.data, spec.system_prompt, spec.image_size, parse_params(spec.params))
    else:  # instances drawn level by level; the callback moves the levels (before MetricsLog logs them)
        curriculum = Curriculum(spec.tasks, schedule, seed=spec.seed)
        dataset = curriculum.iterable_dataset(spec.modality, spec.system_prompt, spec.image_size,
                                              spec.generator_overrides())
        reward = curriculum.wrap_reward(reward)
        callbacks.insert(0, CurriculumCallback(curriculum))
    return trainer_class(model=spec.model, reward_funcs=[reward], args=config, train_dataset=dataset,
                         processing_class=processing, callbacks=callbacks)


def train(trainer, spec: TrainSpec) -> Path:
    """Train (resuming from the newest checkpoint in the output folder, if any: it must be a
    checkpoint of the same run, `check_resumable`) and save. A run whose checkpoint has
    reached --max-steps trains no further (transformers would run one more step): its final
    weights are loaded from the checkpoint and saved again."""
    from transformers.trainer_utils import get_last_checkpoint

    out_dir = Path(spec.output_dir)
    last = get_last_checkpoint(str(out_dir)) if out_dir.is_dir() else None
    if last is not None:
        check_resumable(spec, trainer.args)
    if trainer.is_world_process_zero():
        atomic_write(out_dir / RUN_RECORD, json.dumps(run_record(spec, trainer.args), indent=1))
    saved = dataclasses.asdict(spec)
    done = _checkpoint_step(last) if last is not None else 0
    if done >= trainer.args.max_steps:  # finished: its checkpoint's weights are the final ones
        if trainer.is_deepspeed_enabled or trainer.is_fsdp_enabled:  # sharded weights load only inside train()
            warnings.warn(f"{last} has reached --max-steps {trainer.args.max_steps}: nothing to train; the run's "
                          f"final model is in {last}", stacklevel=2)
            return out_dir
        trainer._load_from_checkpoint(last)
        saved["max_steps"] = done  # the steps its weights have, should --max-steps now be lower
        for callback in trainer.callback_handler.callbacks:  # and the logs of those steps only
            if trainer.is_world_process_zero() and callable(getattr(callback, "keep_until", None)):
                callback.keep_until(str(out_dir), done)
    else:
        trainer.train(resume_from_checkpoint=last)
    trainer.save_model(str(out_dir))
    (out_dir / "mmnp_train.json").write_text(json.dumps(saved, indent=1))
    return out_dir


RUN_RECORD = "mmnp_run.json"  # the settings that define the run, written when it starts
# What may change when a run resumes: how long it runs, where and how often it logs and saves,
# and how it is computed (precision, vLLM or not), none of which changes what it trains on.
RESUMABLE = ("max_steps", "output_dir", "logging_steps", "save_steps", "report_to", "bf16", "use_vllm", "vllm_mode",
             "vllm_server_base_url", "vllm_gpu_memory_utilization")
_PATHS = ("model", "data")  # compared as folders (`same_model`), whatever path names them


LEVEL_PARAMS = "params_on_levels"  # in a curriculum's run record: its --params apply on every level


def run_record(spec: TrainSpec, config) -> dict:
    """The settings that define a run: every setting but the RESUMABLE ones, the model and data
    folders by their resolved paths, the defaults filled in (steps_per_generation, and every option
    of the algorithm, as its config holds them)."""
    from mmnp.trainers.algorithms import own_options

    record = {f.name: getattr(spec, f.name) for f in fields(TrainSpec)
              if f.name not in RESUMABLE and f.name != "options"}
    record["model"] = model_identity(spec.model)
    record["model_files"] = weights_fingerprint(spec.model)  # a rebuilt model under the same path is another run
    record["data"] = None if spec.data is None else model_identity(spec.data)
    record["data_content"] = None if spec.data is None else _data_content(spec.data)
    record["steps_per_generation"] = config.steps_per_generation
    if spec.curriculum is not None:  # its levels, not --difficulty/--count, say what it draws; --params applies
        del record["difficulty"], record["count"]
        record[LEVEL_PARAMS] = True
    options = {f.name: getattr(config, f.name) for f in own_options(spec.algo)}
    record["options"] = {k: f"{model_identity(v)} (files {weights_fingerprint(v)})"  # a folder (DISA's anchor)
                         if isinstance(v, str) and Path(v).is_dir() else v for k, v in options.items()}
    return json.loads(json.dumps(record))  # as read back from the file


def _data_content(data: str) -> str:
    """The --data a run trains on, by its content: the dataset's benchmark and references hashes."""
    from mmnp.dataset import open_data

    identity = open_data(data).identity()
    return f"{identity['benchmark_hash']}:{identity['references_hash']}"


def check_resumable(spec: TrainSpec, config) -> None:
    """A checkpoint in --output-dir is resumed only by the run that wrote it: the same algorithm,
    model, data and options (RESUMABLE settings may differ). Anything else is one line naming the
    folder and what differs. A folder from before the record (mmnp_train.json only) is checked on
    its algorithm and model."""
    from transformers.trainer_utils import get_last_checkpoint

    out_dir = Path(spec.output_dir)
    if not out_dir.is_dir() or get_last_checkpoint(str(out_dir)) is None:
        return
    if (out_dir / RUN_RECORD).exists():
        recorded = json.loads((out_dir / RUN_RECORD).read_text())
        current = run_record(spec, config)
        if recorded.get("curriculum") is not None and LEVEL_PARAMS not in recorded:
            # a curriculum recorded before --params applied to its levels: it drew them without
            # --params, and --difficulty/--count never shaped it
            recorded = {k: v for k, v in recorded.items() if k not in ("difficulty", "count")}
            recorded.update({"params": None, LEVEL_PARAMS: True})
    elif (out_dir / "mmnp_train.json").exists():
        legacy = json.loads((out_dir / "mmnp_train.json").read_text())
        recorded = {k: legacy.get(k) for k in ("algo", "model")}
        current = {"algo": spec.algo, "model": spec.model}
    else:
        return
    differ = []
    for key in sorted(set(recorded) | set(current), key=lambda k: (k not in ("algo", "model"), k)):
        old, new = recorded.get(key), current.get(key)
        if key == "options":
            differ += [f"{name} {old.get(name)!r} -> {new.get(name)!r}" for name in sorted(set(old) | set(new))
                       if old.get(name) != new.get(name)]
        elif key in _PATHS and old is not None and new is not None:
            if not same_model(old, getattr(spec, key)):
                differ.append(f"{key} {old} -> {getattr(spec, key)}")
        elif old != new:
            differ.append(f"{key} {old!r} -> {new!r}")
    if differ:
        raise UsageError(f"{out_dir} holds checkpoints of another run ({'; '.join(differ)}): train into another "
                         f"--output-dir, or resume it with its own settings")


def _checkpoint_step(checkpoint: str) -> int:
    state = Path(checkpoint) / "trainer_state.json"
    return int(json.loads(state.read_text()).get("global_step", 0)) if state.exists() else 0
