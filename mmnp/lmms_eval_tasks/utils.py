"""What lmms-eval calls: the picture and prompt of a row, the integrity check, and mmnp's scoring."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Callable

from mmnp.errors import DataError
from mmnp.lm_eval_tasks.utils import process_results  # the same sr/qr as the text tasks

__all__ = ["checked_docs", "doc_to_text", "doc_to_visual", "process_results"]

DATA = "mmnp-export"  # the task folder's utils.py sets the export it reads (mmnp.harness)


def _checked(data: str) -> dict[str, tuple]:
    """The export at `data`, through the one integrity check every mmnp reader runs (its rows
    re-derive the source dataset's hashes), as id -> what a row must show; checked once per state
    of its files (lmms-eval asks once per task)."""
    files = sorted(Path(data).rglob("*")) if Path(data).is_dir() else []
    return _checked_state(data, tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files if f.is_file()))


@lru_cache(maxsize=4)
def _checked_state(data: str, state: tuple) -> dict[str, tuple]:
    from mmnp.export import load_export

    export = load_export(data)
    return {i.id: (i.task, i.prompt, i.image_prompt, i.hash, float(i.reference_objective),
                   hashlib.sha256(export.image(i)).hexdigest()) for i in export.instances}


def checked_docs_for(data: str) -> Callable:
    """`process_docs` for the export at `data`: the split lmms-eval loaded, refused unless every
    row is one the checked export holds, picture included."""

    def checked_docs(dataset):
        from datasets import Image

        expected = _checked(data)
        encoded = dataset.cast_column("image", Image(decode=False))  # the PNG bytes as stored, not re-encoded
        for number, row in enumerate(encoded):
            seen = (row["task"], row["prompt"], row["image_prompt"], row["hash"], row["reference_objective"],
                    hashlib.sha256(row["image"]["bytes"] or b"").hexdigest())
            if expected.get(row["id"]) != seen:
                raise DataError(f"{data}: row {number} ({row.get('id')!r}) is not the checked export's; the export "
                                "was edited or mixed with another: export it again")
        return dataset

    return checked_docs


checked_docs = checked_docs_for(DATA)


def doc_to_visual(doc: dict) -> list:
    return [doc["image"].convert("RGB")]


def doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    return doc["image_prompt"]
