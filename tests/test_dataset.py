from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import mmnp
from mmnp.dataset import IN_PROGRESS, GenerateSpec, find_instance, generate_dataset, load_dataset
from mmnp.errors import DataError, UsageError

SPEC = GenerateSpec(tasks=("tsp", "knapsack", "graph_coloring"), difficulties=("easy", "medium"), count=3, seed=5,
                    time_limit=1.0)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_byte_identical_whatever_the_worker_count(tmp_path):
    generate_dataset(tmp_path / "one", SPEC, workers=1)
    generate_dataset(tmp_path / "two", SPEC, workers=2)
    assert _tree(tmp_path / "one") == _tree(tmp_path / "two")


def test_layout_records_and_manifest(small_dataset):
    manifest = json.loads((small_dataset / "manifest.json").read_text())
    assert manifest["total"] == sum(sum(c.values()) for c in manifest["counts"].values())
    for rel, digest in manifest["files"].items():
        if rel.endswith(".jsonl"):
            assert hashlib.sha256((small_dataset / rel).read_bytes()).hexdigest() == digest
    instances = list(load_dataset(small_dataset))
    assert len(instances) == manifest["total"]
    for inst in instances:
        record = inst.to_record()
        for key in ("id", "task", "difficulty", "seed", "params", "instance", "hash", "prompt", "image", "image_prompt"):
            assert record[key] is not None
        assert set(record["reference"]["heuristic"]) == {"objective", "solution"}
        optimal = record["reference"]["optimal"]
        assert set(optimal) == {"objective", "solution", "proven"} | ({"bound"} if not optimal["proven"] else set())
        assert (small_dataset / inst.image).read_bytes().startswith(b"\x89PNG")
        assert inst.prompt.rstrip().splitlines()[-1].startswith("Answer: ")
        # the instance regenerates from its stored seed
        task = mmnp.get_task(inst.task)
        assert task.generate(inst.difficulty, inst.seed).hash == inst.hash
        assert inst.id.startswith(f"{inst.task}-{inst.difficulty}-")
    assert len({i.id for i in instances}) == len(instances)


def test_load_filters_and_find(small_dataset):
    only = list(load_dataset(small_dataset, tasks=["knapsack"], difficulties=["medium"]))
    assert {(i.task, i.difficulty) for i in only} == {("knapsack", "medium")} and len(only) == 2
    assert find_instance(small_dataset, only[1].id) == only[1]
    with pytest.raises(KeyError, match="no instance 'knapsack-medium-0099'"):
        find_instance(small_dataset, "knapsack-medium-0099")
    with pytest.raises(DataError, match="no readable manifest.json"):
        list(load_dataset(small_dataset / "knapsack"))


def test_existing_output_is_protected(tmp_path):
    out = tmp_path / "data"
    small = GenerateSpec(tasks=("knapsack",), difficulties=("easy",), count=2, seed=0, images=False, optimal=False)
    generate_dataset(out, small)
    other = GenerateSpec(tasks=("knapsack",), difficulties=("easy",), count=2, seed=1, images=False, optimal=False)
    with pytest.raises(UsageError, match="--overwrite"):
        generate_dataset(out, other)
    assert generate_dataset(out, small)["arguments"]["seed"] == 0  # same spec: already complete, untouched
    assert generate_dataset(out, other, overwrite=True)["arguments"]["seed"] == 1
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    with pytest.raises(UsageError, match="did not write"):
        generate_dataset(foreign, small, overwrite=True)
    assert (foreign / "thesis.tex").read_text() == "precious"


def test_interrupted_generation_resumes_to_the_same_bytes(tmp_path):
    generate_dataset(tmp_path / "clean", SPEC)

    def crash(done: int, total: int) -> None:
        if done == 10:  # mid-way through the fourth shard
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        generate_dataset(tmp_path / "crashed", SPEC, progress=crash)
    partial = tmp_path / "crashed"
    assert (partial / IN_PROGRESS).exists() and not (partial / "manifest.json").exists()
    assert len(list(partial.rglob("*.jsonl"))) == 3
    with pytest.raises(DataError, match="rerun the same"):
        list(load_dataset(partial))
    seen = []
    generate_dataset(partial, SPEC, progress=lambda done, total: seen.append(total))
    assert seen[-1] == SPEC.count * 3  # only the three unfinished shards were generated
    assert _tree(tmp_path / "clean") == _tree(partial)


def test_bad_specs_fail_before_any_work(tmp_path):
    with pytest.raises(ValueError, match="belongs to none of the tasks"):
        GenerateSpec(tasks=("knapsack",), difficulties=("easy",), count=1, seed=0, params={"colours": "3"})
    with pytest.raises(ValueError, match="expected an integer or a range"):
        GenerateSpec(tasks=("tsp",), difficulties=("easy",), count=1, seed=0, params={"tsp.n": "many"})
    with pytest.raises(ValueError, match="--count"):
        GenerateSpec(tasks=("tsp",), difficulties=("easy",), count=0, seed=0)
    assert not any(tmp_path.iterdir())


def test_param_overrides_reach_the_instances(tmp_path):
    spec = GenerateSpec(tasks=("tsp", "knapsack"), difficulties=("easy",), count=2, seed=0, images=False,
                        optimal=False, params={"n": "8", "knapsack.max_weight": "20"})
    generate_dataset(tmp_path, spec)
    for inst in load_dataset(tmp_path):
        assert inst.params["n"] == 8
        if inst.task == "knapsack":
            assert max(inst.data["weights"]) <= 20


def test_hard_family_params_pass_the_size_guard_and_reach_the_instances(tmp_path):
    """Number magnitudes cost no memory: they have their own limit instead of 10 x the presets'
    (which still caps n); an unknown family and numbers no heuristic serves fail in one line."""
    spec = GenerateSpec(tasks=("knapsack", "subset_sum"), difficulties=("easy",), count=2, seed=0, images=False,
                        optimal=False, params={"knapsack.family": "spanner", "knapsack.max_weight": "1_000_000",
                                               "subset_sum.min_value": str(10**9), "subset_sum.max_value": str(10**10)})
    generate_dataset(tmp_path / "ok", spec)
    for inst in load_dataset(tmp_path / "ok"):
        if inst.task == "knapsack":
            assert inst.params["family"] == "spanner" and max(inst.data["weights"]) > 1000
        else:
            assert all(10**9 <= x <= 10**10 for x in inst.data["numbers"])
    for params, words in (({"subset_sum.max_value": str(10**16)}, "at most 1_000_000_000_000_000"),
                          ({"subset_sum.n": "1000"}, "10 x its largest preset value"),
                          ({"knapsack.family": "hard"}, "expected one of weak, strong")):
        with pytest.raises(UsageError, match=words):
            GenerateSpec(tasks=("knapsack", "subset_sum"), difficulties=("easy",), count=1, seed=0, params=params)
    too_many = GenerateSpec(tasks=("subset_sum",), difficulties=("easy",), count=1, seed=0, images=False, optimal=False,
                            params={"n": "60", "min_value": str(10**11), "max_value": str(10**12)})
    with pytest.raises(UsageError, match="subset_sum-easy-0000: .*use fewer or smaller numbers"):
        generate_dataset(tmp_path / "bad", too_many)


def test_readme_states_the_canonical_benchmark_hash(tmp_path):
    """The preset's benchmark_hash depends only on ids and instance data, so it can be
    checked without images or exact solving; the README must quote the real one."""
    import re

    from mmnp.dataset import PRESETS
    from mmnp.registry import resolve_tasks

    preset = PRESETS["mm-np-bench-v1"]
    spec = GenerateSpec(tasks=tuple(t.name for t in resolve_tasks(preset["tasks"])),
                        difficulties=preset["difficulties"], count=preset["count"], seed=preset["seed"],
                        images=False, optimal=False)
    manifest = generate_dataset(tmp_path / "v1", spec, workers=2)
    assert all(set(c.values()) == {34} for c in manifest["counts"].values())
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    stated = re.search(r"benchmark_hash.*?\n\n\s+([0-9a-f]{64})", readme, re.S).group(1)
    assert manifest["benchmark_hash"] == stated
