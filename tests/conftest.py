from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests import their helper modules by name
# A fresh `datasets` cache per run: a cache keyed by a reused pytest tmp path could serve a
# previous run's rows (set before any test module imports `datasets`).
os.environ["HF_DATASETS_CACHE"] = tempfile.mkdtemp(prefix="mmnp-hf-datasets-")
os.environ["MMNP_CACHE"] = tempfile.mkdtemp(prefix="mmnp-cache-")  # generated harness task folders

import mmnp  # noqa: E402
from mmnp.dataset import GenerateSpec, generate_dataset  # noqa: E402

TASK_NAMES = [t.name for t in mmnp.list_tasks()]


@pytest.fixture(params=TASK_NAMES)
def task(request):
    return mmnp.get_task(request.param)


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory) -> Path:
    """Two instances per task and difficulty, with images and exact references."""
    out = tmp_path_factory.mktemp("data") / "bench"
    spec = GenerateSpec(tasks=tuple(TASK_NAMES), difficulties=("easy", "medium"), count=2, seed=0, time_limit=2.0)
    generate_dataset(out, spec, workers=1)
    return out


@pytest.fixture(scope="session")
def tiny_text(tmp_path_factory) -> Path:
    """A tiny Qwen2 text model, warm-started so its answers parse now and then."""
    pytest.importorskip("torch", reason="needs the train extra")
    from mmnp.trainers.tiny_model import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "text", warm_steps=100)


@pytest.fixture(scope="session")
def tiny_vlm(tmp_path_factory) -> Path:
    """A tiny Qwen2-VL vision-language model (processor and all), warm-started likewise."""
    pytest.importorskip("torch", reason="needs the train extra")
    from mmnp.trainers.tiny_model import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "vlm", vision=True, warm_steps=100)
