"""What `mmnp train` can be told: one dataclass, whose fields are both the CLI flags
(--max-steps) and the YAML keys (max_steps), so the two never drift. Importable without
torch, so `mmnp --help` works on the base install."""

from __future__ import annotations

import typing
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

ALGORITHMS = ("grpo", "dmpo", "progrpo", "flowrl", "disa")
REWARD_SHAPES = ("quality", "feasible", "shaped")


def _f(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass
class TrainSpec:
    algo: str = _f("grpo", "grpo, dmpo, progrpo, flowrl or disa.")
    model: str = _f("", "Model path or hub id (`mmnp tiny-model` makes a local one).")
    output_dir: str = _f("runs/mmnp", "Checkpoints, metrics.csv and TensorBoard logs.")
    tasks: str = _f("all", "Comma-separated tasks, or all.")
    difficulty: str = _f("easy,medium", "Comma-separated difficulties.")
    modality: str = _f("text", "text, or image (vision-language models).")
    data: str | None = _f(None, "A folder from `mmnp generate`; else instances are generated from --seed.")
    count: int = _f(64, "Instances per task and difficulty when generating.")
    seed: int = _f(1, "Generation and training seed (keep it away from the test set's).")
    reward: str = _f("quality", "quality (QR), feasible (0/1) or shaped (format bonus + QR - penalty).")
    system_prompt: str | None = _f(None, "A system message for every prompt.")
    max_steps: int = _f(200, "Optimisation steps.")
    num_generations: int = _f(8, "Completions per prompt (the group size G).")
    per_device_train_batch_size: int = _f(8, "Completions per device per micro-batch.")
    gradient_accumulation_steps: int = _f(1, "Micro-batches per optimisation step.")
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
    dmpo_lambda: float = _f(0.5, "DMPO: weight of L_DM.")
    dmpo_alpha: float = _f(1.0, "DMPO: Boltzmann temperature.")
    progrpo_alpha: float = _f(0.3, "ProGRPO: re-weighting strength.")
    progrpo_fraction: float = _f(0.2, "ProGRPO: share of lowest-probability tokens in a confidence.")
    flowrl_beta: float = _f(15.0, "FlowRL: reward scale.")
    flowrl_w_max: float = _f(10.0, "FlowRL: importance-weight clip.")
    logz: str | None = _f(None, "DISA: the folder of `mmnp disa estimate` and `fit` (beta and reward come from it).")

    @classmethod
    def merged(cls, yaml_path: str | Path | None, cli: dict[str, Any]) -> TrainSpec:
        """Defaults, then the YAML file, then the flags given on the command line."""
        import yaml

        names = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        if yaml_path is not None:
            loaded = yaml.safe_load(Path(yaml_path).read_text()) or {}
            if not isinstance(loaded, dict):
                raise ValueError(f"{yaml_path}: expected a mapping of settings")
            for key, value in loaded.items():
                name = key.replace("-", "_")
                if name not in names:
                    raise ValueError(f"{yaml_path}: unknown setting {key!r}; settings: {', '.join(sorted(names))}")
                values[name] = value
        values.update({k: v for k, v in cli.items() if v is not None})
        spec = cls(**values)
        spec.validate()
        return spec

    def validate(self) -> None:
        if not self.model:
            raise ValueError("--model is required (a local path or hub id; `mmnp tiny-model` makes a local one)")
        if self.algo not in ALGORITHMS:
            raise ValueError(f"--algo {self.algo!r}: choose one of {', '.join(ALGORITHMS)}")
        if self.reward not in REWARD_SHAPES:
            raise ValueError(f"--reward {self.reward!r}: choose one of {', '.join(REWARD_SHAPES)}")
        if self.modality not in ("text", "image"):
            raise ValueError(f"--modality {self.modality!r}: choose text or image")
        if self.algo == "disa" and not self.logz:
            raise ValueError("--algo disa needs --logz DIR from `mmnp disa fit`")


def _base_type(hint: Any) -> type:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if args else hint


TRAIN_FIELDS: list[tuple[str, type, str]] = [
    (f.name, _base_type(typing.get_type_hints(TrainSpec)[f.name]), f.metadata["help"]) for f in fields(TrainSpec)
]
