"""`mmnp generate --executor ray` on a local Ray instance: the same per-instance jobs as a local run,
so the same bytes, alone and as one of the --shard parts of a merge. Ray is not in the main test
venv (a heavy install only this executor needs): examples/ray/check_ray.sh runs this file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="Ray tests run in their own venv: examples/ray/check_ray.sh")

ARGS = ["--tasks", "knapsack,tsp,graph_coloring", "--difficulty", "easy", "--count", "3", "--seed", "11",
        "--time-limit", "0.5", "--image-size", "512"]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _generate(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAY_DEDUP_LOGS": "0", "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run([sys.executable, "-m", "mmnp", "generate", *ARGS, *args], capture_output=True, text=True,
                          timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_a_ray_run_gives_the_bytes_of_a_local_run(tmp_path):
    _generate("--workers", "1", "--out", str(tmp_path / "local"))
    _generate("--executor", "ray", "--workers", "2", "--out", str(tmp_path / "ray"))
    assert _tree(tmp_path / "ray") == _tree(tmp_path / "local")


def test_ray_parts_and_local_parts_merge_to_one_runs_bytes(tmp_path):
    _generate("--workers", "1", "--out", str(tmp_path / "local"))
    _generate("--executor", "ray", "--shard", "1/2", "--out", str(tmp_path / "p1"))
    _generate("--workers", "1", "--shard", "2/2", "--out", str(tmp_path / "p2"))
    merged = subprocess.run([sys.executable, "-m", "mmnp", "merge", str(tmp_path / "p1"), str(tmp_path / "p2"),
                             "--out", str(tmp_path / "merged")], capture_output=True, text=True, timeout=300)
    assert merged.returncode == 0, merged.stderr
    assert _tree(tmp_path / "merged") == _tree(tmp_path / "local")
