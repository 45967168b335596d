"""What `mmnp train` can be told: the settings every algorithm shares (this dataclass) and
the algorithm's own (`options`, the fields its config declares: `mmnp.trainers.algorithms`).
Both are generated into CLI flags (--max-steps, --dmpo-lambda) and YAML keys (max_steps,
dmpo_lambda), so flags, keys and configs never drift. The choices of --algo and --reward are
their registries' names, filled into the help when `mmnp train` is used. Importable without
torch, so `mmnp --help` works on the base install."""

from __future__ import annotations

import os
import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from mmnp.errors import UsageError
from mmnp.render import check_image_size
from mmnp.trainers.curriculum import CurriculumSpec, curriculum_spec


def _f(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass
class TrainSpec(CurriculumSpec):
    """The shared settings, the curriculum's (fields inherited from `CurriculumSpec`, so its flags
    are declared once) and the algorithm's own (`options`)."""

    curriculum: str | None = _f(None, "Level schedule over L1..L10: fixed, linear or adaptive (default: none, "
                                      "train on --difficulty).")
    algo: str = _f("grpo", "The algorithm (`mmnp train --algo NAME --help` adds its own options).")
    model: str = _f("", "Model path or hub id (`mmnp tiny-model` makes a local one).")
    output_dir: str = _f("runs/mmnp", "Checkpoints, metrics.csv and TensorBoard logs.")
    tasks: str = _f("all", "Comma-separated tasks, or all.")
    difficulty: str = _f("easy,medium", "Comma-separated difficulties.")
    modality: str = _f("text", "text, or image (vision-language models).")
    data: str | None = _f(None, "A folder from `mmnp generate`; else instances are generated from --seed.")
    count: int = _f(64, "Instances per task and difficulty when generating.")
    params: str | None = _f(None, "Generator overrides for generated instances, e.g. n=4 (smaller instances).")
    seed: int = _f(1, "Generation and training seed (keep it away from the test set's).")
    reward: str = _f("quality", "The reward function.")
    system_prompt: str | None = _f(None, "A system message for every prompt.")
    max_steps: int = _f(200, "Optimisation steps.")
    num_generations: int = _f(8, "Completions per prompt (the group size G).")
    per_device_train_batch_size: int = _f(8, "Completions per device per micro-batch.")
    gradient_accumulation_steps: int = _f(1, "Micro-batches per optimisation step.")
    steps_per_generation: int | None = _f(None, "Micro-batches per generation batch, as TRL counts them (default: "
                                                "gradient_accumulation_steps, one optimisation step per generation).")
    num_iterations: int = _f(1, "Optimisation passes over each generation batch.")
    learning_rate: float = _f(1e-6, "Policy learning rate.")
    max_completion_length: int = _f(1024, "Completion token limit.")
    temperature: float = _f(1.0, "Sampling temperature of the rollouts.")
    beta: float = _f(0.0, "KL weight to the reference policy (TRL's beta).")
    loss_type: str = _f("grpo", "TRL's loss aggregation (grpo: token mean per sequence).")
    logging_steps: int = _f(1, "Log every N steps.")
    save_steps: int = _f(100, "Checkpoint every N steps.")
    report_to: str = _f("tensorboard", "tensorboard, wandb, none, ...")
    bf16: bool | None = _f(None, "bf16 training (default: on where the GPU supports it).")
    use_vllm: bool = _f(False, "Generate with vLLM (GPU).")
    vllm_mode: str = _f("colocate", "colocate, or server (run `trl vllm-serve --model MODEL` first).")
    vllm_server_base_url: str | None = _f(None, "server mode: the vLLM server, e.g. http://10.0.0.2:8000.")
    vllm_gpu_memory_utilization: float | None = _f(None, "colocate mode: vLLM's share of GPU memory.")
    image_size: int = _f(768, "Rendered image height for --modality image.")
    options: dict = field(default_factory=dict, metadata={"help": "The algorithm's own settings."})

    @classmethod
    def merged(cls, yaml_path: str | Path | None, cli: dict[str, Any]) -> TrainSpec:
        """Defaults, then the YAML file, then the flags given on the command line. The algorithm's
        own settings are those of the chosen algorithm (the flag's, else the file's, else GRPO),
        the only one imported."""
        from mmnp.trainers.algorithms import option_flags

        shared = {name: kind for name, kind, _ in TRAIN_FIELDS}
        loaded = _read_yaml(yaml_path) if yaml_path is not None else {}
        values = {key.replace("-", "_"): _convert(yaml_path, key, value, shared[key.replace("-", "_")])
                  for key, value in loaded.items() if key.replace("-", "_") in shared}
        algo = cli.get("algo") or values.get("algo") or cls.algo
        own = {name: kind for name, (kind, _, _) in option_flags(algo).items()}
        options: dict[str, Any] = {}
        for key, value in loaded.items():
            name = key.replace("-", "_")
            if name in own:
                options[name] = _convert(yaml_path, key, value, own[name])
            elif name not in shared:
                raise UsageError(f"{yaml_path}: unknown setting {key!r} for --algo {algo}; settings: "
                                 f"{', '.join(sorted(shared | own))}")
        for key, value in cli.items():
            if value is not None:  # a name that is no shared setting is an option, refused by validate if foreign
                (values if key in shared else options)[key] = value
        spec = cls(**values, options=options)
        spec.validate()
        return spec

    def validate(self) -> None:
        """Checks that need no model: every number in its range, the algorithm exists and owns
        every option given."""
        from mmnp.trainers.algorithms import get_algorithm, own_options
        from mmnp.trainers.base import check_loss_settings
        from mmnp.trainers.rewards import get_reward

        for name, low, what in _LOWER_BOUNDS:
            value = getattr(self, name)
            if value is not None and not value >= low:
                raise UsageError(f"--{name.replace('_', '-')} {value}: must be {what}")
        check_image_size(self.image_size)
        if self.temperature is not None and not self.temperature > 0:
            raise UsageError(f"--temperature {self.temperature}: must be positive")
        if not self.model:
            raise UsageError("--model is required (a local path or hub id; `mmnp tiny-model` makes a local one)")
        fields = own_options(self.algo)  # an unknown --algo: the line listing the choices
        own = {f.name for f in fields}
        get_reward(self.reward)
        if self.modality not in ("text", "image"):
            raise UsageError(f"--modality {self.modality!r}: choose text or image")
        foreign = sorted(set(self.options) - own)
        if foreign:
            raise UsageError(f"--{foreign[0].replace('_', '-')} is not a setting of --algo {self.algo} "
                             f"(its own: {', '.join(sorted(own)) or 'none'})")
        for f in fields:  # a setting the algorithm cannot run without declares what it takes (DISA's --logz)
            if "required" in f.metadata and not self.options.get(f.name):
                raise UsageError(f"--algo {self.algo} needs --{f.name.replace('_', '-')} {f.metadata['required']}")
        check_loss_settings(get_algorithm(self.algo), self.beta)
        self._check_curriculum()
        self.generator_overrides()  # before the model loads
        if self.loss_type not in LOSS_TYPES:
            raise UsageError(f"--loss-type {self.loss_type!r}: choose one of {', '.join(LOSS_TYPES)} (TRL's)")
        self._check_generation_batch()

    def _check_curriculum(self) -> None:
        """A curriculum draws its instances level by level without end, so the settings of a fixed
        training set mean nothing with it; its own settings mean nothing without it. Either is
        refused rather than ignored (--params applies on top of every level)."""
        schedule = curriculum_spec(self)
        defaults = {f.name: f.default for f in fields(TrainSpec)}
        if schedule is None:
            given = [f.name for f in fields(CurriculumSpec)
                     if f.name != "curriculum" and getattr(self, f.name) != defaults[f.name]]
            if given:
                flag = given[0].replace("_", "-")
                raise UsageError(f"--{flag} is a curriculum setting: add --curriculum fixed, linear or adaptive, "
                                 f"or drop --{flag}")
            return
        if self.data is not None:
            raise UsageError("--curriculum generates its instances level by level; drop --data")
        for name in ("difficulty", "count"):
            if getattr(self, name) != defaults[name]:
                raise UsageError(f"--curriculum draws its instances level by level (--curriculum-start to "
                                 f"--curriculum-top) without end; drop --{name}")

    def generator_overrides(self) -> dict[str, dict]:
        """Each task's generator overrides from --params, checked as `mmnp generate --param` checks them
        on every difficulty (or curriculum level) they will generate; {} without --params or with --data
        (refused where the data is read)."""
        from mmnp.levels import level_name
        from mmnp.trainers.data import generator_overrides, parse_params

        params = parse_params(self.params)
        if not params or self.data is not None:
            return {}
        schedule = curriculum_spec(self)
        difficulties = (self.difficulty.split(",") if schedule is None else
                        [level_name(level) for level in range(schedule.curriculum_start, schedule.curriculum_top + 1)])
        return generator_overrides(self.tasks, difficulties, params, 1 if schedule else self.count, self.seed)

    def _check_generation_batch(self) -> None:
        """TRL's rule (GRPOConfig.__post_init__): the generation batch, per_device_train_batch_size x
        processes x steps_per_generation (default: gradient_accumulation_steps), holds whole groups,
        so num_generations divides it. The processes are the launcher's WORLD_SIZE (1 without one)."""
        steps = self.steps_per_generation or self.gradient_accumulation_steps
        processes = int(os.environ.get("WORLD_SIZE") or 1)
        batch = self.per_device_train_batch_size * processes * steps
        if batch % self.num_generations:
            spread = f" x {processes} processes" if processes > 1 else ""
            raise UsageError(f"--num-generations {self.num_generations} must divide the generation batch "
                             f"(whole groups): --per-device-train-batch-size {self.per_device_train_batch_size}{spread}"
                             f" x steps per generation {steps} = {batch} completions; make it a multiple of "
                             f"{self.num_generations}")


# TRL 1.16's GRPOConfig.loss_type values (its help names them; TRL keeps no list in code:
# tests/test_cli.py checks this against the help of the TRL installed).
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")


def model_identity(name: str) -> str:
    """What names a model across runs: a local folder's resolved path (so `tiny`, `./tiny` and a
    link to it are one model), else the name as given (a hub id)."""
    path = Path(name).expanduser()
    return str(path.resolve()) if path.is_dir() else name


def same_model(recorded: str, given: str) -> bool:
    """Whether `given` names the model `recorded` (a name or a `model_identity`) named: the same
    folder (whatever path reaches it) when both are local folders, the same hub id when neither is."""
    a, b = Path(recorded).expanduser(), Path(given).expanduser()
    if a.is_dir() and b.is_dir():
        return os.path.samefile(a, b)
    return model_identity(recorded) == model_identity(given)


_LOWER_BOUNDS = (("max_steps", 1, "at least 1"), ("num_generations", 2, "at least 2 (GRPO's advantage compares "
                                                                             "completions within a group)"),
                 ("per_device_train_batch_size", 1, "at least 1"), ("gradient_accumulation_steps", 1, "at least 1"),
                 ("steps_per_generation", 1, "at least 1"), ("num_iterations", 1, "at least 1"),
                 ("count", 1, "at least 1"), ("max_completion_length", 1, "at least 1"),
                 ("learning_rate", 0.0, ">= 0"), ("beta", 0.0, ">= 0"), ("logging_steps", 1, "at least 1"),
                 ("save_steps", 1, "at least 1"))


def _read_yaml(path: str | Path) -> dict[str, Any]:
    """The --config file's mapping of settings, or one line naming the file and what is wrong."""
    import yaml

    try:
        loaded = yaml.safe_load(Path(path).read_text()) or {}
    except OSError as e:
        raise UsageError(f"--config {path}: cannot be read ({e.strerror or e})") from None
    except yaml.YAMLError as e:
        raise UsageError(f"--config {path}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(loaded, dict):
        raise UsageError(f"{path}: expected a mapping of settings")
    return loaded


def _convert(path: str | Path, key: str, value: Any, kind: type) -> Any:
    """A YAML value as the setting's type, or one line naming the file, the key and what is
    expected. YAML 1.1 (PyYAML) reads `1e-6` as a string and `1.0e-6` as a float: both are
    the number meant; `abc` for a number, or a list for a string, is refused."""
    if value is None:
        return None
    where = f"{path}: {key}: "
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise UsageError(where + f"expected true or false, got {value!r}")
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise UsageError(where + f"expected a number, got {value!r}")
        try:
            number = float(value)
            if kind is int and number != int(number):
                raise ValueError
        except (TypeError, ValueError, OverflowError):
            raise UsageError(where + f"expected {'an integer' if kind is int else 'a number'}, got {value!r}") from None
        return int(number) if kind is int else number
    if kind is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        raise UsageError(where + f"expected text, got {value!r}")
    return value


def _base_type(hint: Any) -> type:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if args else hint


TRAIN_FIELDS: list[tuple[str, type, str]] = [
    (f.name, _base_type(typing.get_type_hints(TrainSpec)[f.name]), f.metadata["help"]) for f in fields(TrainSpec)
    if f.name != "options"
]
