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

# Every registered task (built-ins and `mmnp.tasks` plug-ins), or those MMNP_TEST_TASKS names
# (comma-separated): how tests/test_task_plugin.py runs the conformance suite on a plug-in task.
TASK_NAMES = ([n.strip() for n in os.environ["MMNP_TEST_TASKS"].split(",") if n.strip()]
              if os.environ.get("MMNP_TEST_TASKS") else [t.name for t in mmnp.list_tasks()])


@pytest.fixture(params=TASK_NAMES)
def task(request):
    return mmnp.get_task(request.param)


SMALL_COUNT, SMALL_DIFFICULTIES = 2, ("easy", "medium")  # small_dataset: instances per task and difficulty
SMALL_PER_DIFFICULTY = SMALL_COUNT * len(TASK_NAMES)  # its instances per difficulty, from the registry
SMALL_TOTAL = SMALL_PER_DIFFICULTY * len(SMALL_DIFFICULTIES)


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory) -> Path:
    """Two instances per task and difficulty, with images and exact references."""
    out = tmp_path_factory.mktemp("data") / "bench"
    spec = GenerateSpec(tasks=tuple(TASK_NAMES), difficulties=SMALL_DIFFICULTIES, count=SMALL_COUNT, seed=0,
                        time_limit=2.0)
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
