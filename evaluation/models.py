"""The one model-loading layer: transformers causal LMs and vision-language models, and vLLM
engines, for evaluation (`hf:`, `vllm:` backends) and DISA's proposal engines alike.

torch, transformers and vLLM are imported inside the functions, so importing this module costs
nothing; a missing dependency is a one-line error naming the extra to install.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mmnp.errors import UsageError


@dataclass
class LoadedModel:
    """A transformers model ready for generation: `tokenizer` is the processor's for a VLM."""

    model: Any
    tokenizer: Any
    processor: Any | None  # None for a text-only model
    device: str

    @property
    def vision(self) -> bool:
        return self.processor is not None


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_hf(path: str, *, dtype: str = "auto", device: str | None = None, vision: bool | None = None,
            pad_left: bool = True) -> LoadedModel:
    """Load a causal LM (tokenizer) or, when its config has a vision part (or `vision=True`), an
    image-text-to-text model (processor), in eval mode on `device` (default: cuda if available).
    `dtype`: "auto" (the checkpoint's), "float32", "bfloat16", "float16". Left padding and a pad
    token are set, as batched generation needs."""
    try:
        import torch
        from transformers import (
            AutoConfig,
            AutoModelForCausalLM,
            AutoModelForImageTextToText,
            AutoProcessor,
            AutoTokenizer,
        )
    except ImportError as e:
        raise UsageError(f"loading {path} needs torch and transformers ({e}); install them with: "
                         "pip install 'mmnp[train]'") from None
    if dtype != "auto" and not isinstance(getattr(torch, dtype, None), torch.dtype):
        raise UsageError(f"dtype {dtype!r}: use auto, float32, bfloat16 or float16")
    try:
        config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError) as e:
        raise UsageError(f"{path}: not a transformers model folder ({str(e).splitlines()[0]})") from None
    if vision is None:
        vision = getattr(config, "vision_config", None) is not None
    device = device or default_device()
    torch_dtype = "auto" if dtype == "auto" else getattr(torch, dtype)
    if vision:
        processor = AutoProcessor.from_pretrained(path)
        tokenizer = processor.tokenizer
        model = AutoModelForImageTextToText.from_pretrained(path, dtype=torch_dtype)
    else:
        processor = None
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype)
    model.to(device).eval()
    if pad_left:
        tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return LoadedModel(model, tokenizer, processor, device)


def load_vllm(path: str, *, gpu_memory_utilization: float = 0.9, max_model_len: int | None = None,
              tensor_parallel_size: int = 1, dtype: str = "auto", images_per_prompt: int = 1, **engine_args: Any):
    """A vLLM `LLM` engine (GPU machines, the `vllm` extra). `images_per_prompt=0` for text-only use."""
    try:
        from vllm import LLM
    except ImportError:
        raise UsageError("vLLM is not installed: on a GPU machine, pip install 'mmnp[vllm]'") from None
    if not 0 < gpu_memory_utilization <= 1:
        raise UsageError(f"gpu_memory_utilization {gpu_memory_utilization}: use a fraction in (0, 1]")
    if images_per_prompt:
        engine_args["limit_mm_per_prompt"] = {"image": images_per_prompt}
    if max_model_len is not None:
        engine_args["max_model_len"] = max_model_len
    return LLM(model=path, gpu_memory_utilization=gpu_memory_utilization, tensor_parallel_size=tensor_parallel_size,
               dtype=dtype, **engine_args)
