"""`mmnp sft`: the supervised cold start before RL. TRL's SFTTrainer distils the best
reference solution of each training instance (text or image prompt -> `Answer: [...]`)
into a model; the loss covers the completion only. The saved folder is a plain
checkpoint: `mmnp train --model DIR` continues from it, `mmnp eval --model hf:DIR` scores it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from mmnp.errors import UsageError
from mmnp.files import check_new_folder, write_whole_folder


@dataclass
class SFTSpec:
    model: str
    out: str
    tasks: str = "all"
    difficulty: str = "easy,medium"
    modality: str = "text"
    count: int = 256
    params: str | None = None
    seed: int = 3
    max_steps: int = 300
    batch_size: int = 8
    learning_rate: float = 1e-4
    max_length: int = 2048
    image_size: int = 768
    report_to: str = "none"

    def validate(self) -> None:
        if self.modality not in ("text", "image"):
            raise UsageError(f"--modality {self.modality!r}: choose text or image")
        if self.max_steps < 1 or self.batch_size < 1 or self.count < 1:
            raise UsageError("--max-steps, --batch-size and --count must be at least 1")


def sft(spec: SFTSpec) -> Path:
    """Fine-tune `spec.model` on reference answers and save it (with its processor) to `spec.out`."""
    import torch
    from transformers import AutoConfig, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from mmnp.evaluation.models import load_processor
    from mmnp.trainers.data import parse_params, train_dataset

    spec.validate()
    check_new_folder(Path(spec.out))  # before anything loads; the model then appears whole (`write_whole_folder`)
    vision = getattr(AutoConfig.from_pretrained(spec.model), "vision_config", None) is not None
    if spec.modality == "image" and not vision:
        raise UsageError(f"{spec.model} has no vision tower: distil it with --modality text")
    processing = load_processor(spec.model) if vision else AutoTokenizer.from_pretrained(spec.model)
    dataset = train_dataset(spec.tasks, spec.difficulty.split(","), spec.count, spec.seed, spec.modality,
                            image_size=spec.image_size, params=parse_params(spec.params), completions=True)
    if not vision:
        dataset = dataset.remove_columns([c for c in dataset.column_names if c not in ("prompt", "completion")])
    gpu = torch.cuda.is_available()

    def train_into(folder: Path) -> None:
        config = SFTConfig(output_dir=str(folder), max_steps=spec.max_steps, per_device_train_batch_size=spec.batch_size,
                           learning_rate=spec.learning_rate, max_length=spec.max_length, seed=spec.seed,
                           report_to=spec.report_to, save_strategy="no", logging_steps=10, use_cpu=not gpu,
                           bf16=bool(gpu and torch.cuda.is_bf16_supported()), completion_only_loss=True,
                           lr_scheduler_type="cosine", warmup_steps=min(10, spec.max_steps // 10),
                           remove_unused_columns=not vision, dataset_kwargs={"skip_prepare_dataset": False})
        trainer = SFTTrainer(model=spec.model, args=config, train_dataset=dataset, processing_class=processing)
        trainer.train()
        trainer.save_model(str(folder))
        processing.save_pretrained(str(folder))
        (folder / "mmnp_sft.json").write_text(json.dumps(asdict(spec), indent=1))

    out = Path(spec.out)
    write_whole_folder(out, train_into)
    return out
