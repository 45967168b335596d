"""The optional extras a command needs, checked before its work starts: an import deep inside the
work (torch inside a tiny model's writer, pyarrow inside an export's writer) would otherwise end
in a traceback, after output was begun."""

from __future__ import annotations

import importlib.util

from mmnp.errors import UsageError

# extra -> the modules it installs that mmnp imports (pyproject.toml's optional-dependencies)
EXTRAS: dict[str, tuple[str, ...]] = {
    "train": ("torch", "transformers", "trl", "accelerate", "tokenizers"),
    "hf": ("datasets", "pyarrow", "huggingface_hub"),
}
CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


def require_extra(extra: str, what: str) -> None:
    """UsageError, one line naming the first missing module and the install command, unless every
    module of `extra` can be imported (found, not imported: the check costs no import time)."""
    missing = [module for module in EXTRAS[extra] if importlib.util.find_spec(module) is None]
    if missing:
        cpu = f" (on a machine without a GPU, first: {CPU_TORCH})" if "torch" in missing else ""
        raise UsageError(f"{what} needs the {extra} extra (no module named {missing[0]!r}): "
                         f"pip install 'mmnp[{extra}]'{cpu}")
