"""Where evaluated instances come from: a generated dataset, or generation on the fly."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from mmnp.core import Instance
from mmnp.dataset import select_instances


def load_instances(data: Path | None, tasks: str, difficulties: list[str], count: int, seed: int,
                   limit: int | None, need_images: bool, allow_modified: bool = False,
                   ) -> tuple[list[Instance], Callable[[Instance], bytes], dict]:
    """(instances, image loader, dataset identity for results.json); see `mmnp.dataset.select_instances`."""
    selection = select_instances(tasks, difficulties, data=data, count=count, seed=seed, limit=limit,
                                 allow_modified=allow_modified)
    return selection.instances, selection.image, selection.identity
