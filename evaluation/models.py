"""The one model-loading layer: transformers causal LMs and vision-language models, and vLLM
engines, for evaluation (`hf:`, `vllm:` backends) and DISA's proposal engines alike.

torch, transformers and vLLM are imported inside the functions, so importing this module costs
nothing; a missing dependency is a one-line error naming the extra to install.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
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


# What a model folder holds that loading reads (configs, weights, tokenizer and chat template,
# remote code); a README or a log beside them is not the model.
MODEL_FILES = (".json", ".safetensors", ".bin", ".pt", ".pth", ".model", ".txt", ".jinja", ".py", ".tiktoken",
               ".gguf", ".msgpack", ".h5")


def weights_fingerprint(path: str) -> str | None:
    """SHA-256 over the model files (`MODEL_FILES`) of a local model folder (its top level: what
    `from_pretrained` and vLLM read; names, sizes and contents), None for a name that is not a
    local folder. Resumed runs compare it, so that weights replaced under the same path (a
    retrained checkpoint) never mix two models in one score. Reads every byte: ~1-2 GB/s."""
    folder = Path(path)
    if not folder.is_dir():
        return None
    whole = hashlib.sha256()
    for file in sorted(f for f in folder.iterdir() if f.is_file() and f.suffix in MODEL_FILES):
        digest = hashlib.sha256()
        with open(file, "rb") as f:
            while chunk := f.read(1 << 23):
                digest.update(chunk)
        whole.update(f"{file.name} {file.stat().st_size} {digest.hexdigest()}\n".encode())
    return whole.hexdigest()


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
        processor = load_processor(path)
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


def torchvision_available() -> bool:
    """Whether torchvision imports: transformers needs it for video processors (and prefers it for
    image processors). PyPI's torchvision does not import beside a CPU torch from another index, so
    CPU machines run without it."""
    import importlib.util

    if importlib.util.find_spec("torchvision") is None:
        return False
    from transformers.utils import is_torchvision_available

    return is_torchvision_available()


def load_processor(path: str, **tokenizer_kwargs: Any):
    """The model's processor (`AutoProcessor`). Without torchvision, a processor that also holds a
    video processor (Qwen2-VL, Qwen2.5-VL: image processor + tokenizer + video processor) is built
    without that part, around transformers' PIL image processor: the same image preprocessing and
    tokens, only videos refused. With torchvision installed (GPU machines) nothing changes."""
    from transformers import AutoProcessor

    if torchvision_available():
        return AutoProcessor.from_pretrained(path, **tokenizer_kwargs)
    base = _processor_class(path)
    if base is None or "video_processor" not in base.get_attributes():
        return AutoProcessor.from_pretrained(path, **tokenizer_kwargs)
    from transformers import AutoImageProcessor, AutoTokenizer

    attributes = [a for a in base.get_attributes() if a != "video_processor"]
    if attributes != ["image_processor", "tokenizer"]:
        raise UsageError(f"{path}: {base.__name__} needs torchvision, which is not installed; install the "
                         "torchvision that matches your torch")
    tokenizer = AutoTokenizer.from_pretrained(path, **tokenizer_kwargs)
    template = base.get_processor_dict(path)[0].get("chat_template") or tokenizer.chat_template
    return image_only_processor(base)(AutoImageProcessor.from_pretrained(path), tokenizer, chat_template=template)


def _processor_class(path: str):
    """The transformers processor class a model folder names (processor_config.json), or None."""
    import json
    from pathlib import Path

    import transformers

    config = Path(path) / "processor_config.json"
    name = json.loads(config.read_text()).get("processor_class") if config.is_file() else None
    return getattr(transformers, name, None) if isinstance(name, str) else None


def image_only_processor(base: type) -> type:
    """`base` (a processor with an image processor, a tokenizer and a video processor) without its
    video processor. It saves as `base` does, with a video processor entry equal to the image
    processor's settings, so a machine with torchvision loads the folder with `AutoProcessor`."""

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        base.__init__(self, image_processor, tokenizer, None, chat_template=chat_template, **kwargs)

    def to_dict(self) -> dict:
        output = base.to_dict(self)
        image = dict(output["image_processor"])
        kind = re.sub(r"ImageProcessor(Pil|Fast)?$", "VideoProcessor", image.pop("image_processor_type"))
        output["video_processor"] = {**image, "video_processor_type": kind}
        output["processor_class"] = base.__name__
        return output

    return type(base.__name__, (base,), {"__init__": __init__, "to_dict": to_dict, "__module__": __name__,
                                         "__doc__": f"{base.__name__} without its video processor (no torchvision)."})


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
