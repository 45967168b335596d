"""What lmms-eval calls: the picture and prompt of a row, the integrity check, and mmnp's scoring."""

from __future__ import annotations

import json

from mmnp.core import content_hash
from mmnp.errors import DataError
from mmnp.lm_eval_tasks.utils import process_results  # the same sr/qr as the text tasks

__all__ = ["checked_docs", "doc_to_text", "doc_to_visual", "process_results"]


def checked_docs(dataset):
    """The split, refused when a row's instance does not hash to its `hash` (an edited export)."""
    for number, (task, instance, digest) in enumerate(zip(dataset["task"], dataset["instance"], dataset["hash"])):
        if content_hash(task, json.loads(instance)) != digest:
            raise DataError(f"mmnp-export row {number} of {task}: the instance does not hash to its hash column; "
                            "the export was edited: export it again")
    return dataset


def doc_to_visual(doc: dict) -> list:
    return [doc["image"].convert("RGB")]


def doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    return doc["image_prompt"]
