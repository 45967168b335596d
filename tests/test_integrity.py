"""Dataset integrity and containment: every reader refuses data that differs from its manifest,
says where, and an edited set is usable only on purpose and then marked as modified."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import mmnp
from mmnp.cli import app
from mmnp.dataset import (
    IN_PROGRESS,
    PRESETS,
    GenerateSpec,
    dataset_identity,
    find_instance,
    generate_dataset,
    load_dataset,
    open_dataset,
    parse_instance_id,
    preset_of,
    preset_spec,
    select_instances,
)
from mmnp.errors import DataError, UsageError

runner = CliRunner()
SPEC = GenerateSpec(tasks=("knapsack", "tsp"), difficulties=("easy",), count=3, seed=4, optimal=True, time_limit=0.5,
                    image_size=128)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pristine") / "data"
    generate_dataset(out, SPEC)
    return out


@pytest.fixture
def data(pristine, tmp_path) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(pristine, copy)
    return copy


def _edit_line(path: Path, number: int, edit) -> None:
    lines = path.read_text().splitlines()
    record = json.loads(lines[number - 1])
    edit(record)
    lines[number - 1] = json.dumps(record, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n")


def test_intact_dataset_identity(pristine):
    manifest = json.loads((pristine / "manifest.json").read_text())
    identity = dataset_identity(pristine)
    assert identity == {"path": str(pristine), "benchmark_hash": manifest["benchmark_hash"],
                        "references_hash": manifest["references_hash"], "preset": None, "modified": False,
                        "content_hash": manifest["benchmark_hash"]}
    assert manifest["ortools_version"] and manifest["format_version"] == 2
    assert len(manifest["records"]["knapsack/easy.jsonl"]) == 3


def test_edited_reference_is_refused_with_file_and_line(data, pristine):
    shard = data / "knapsack" / "easy.jsonl"
    _edit_line(shard, 2, lambda r: r["reference"]["heuristic"].update(objective=1))
    for read in (lambda: list(load_dataset(data)), lambda: find_instance(data, "tsp-easy-0000"),
                 lambda: select_instances("all", ["easy"], data=data)):
        with pytest.raises(DataError, match=rf"{shard}:2: the reference of knapsack-easy-0001 differs"):
            read()
    args = ["verify", "--data", str(data), "--id", "knapsack-easy-0001", "--answer", "Answer: [0]"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and "easy.jsonl:2: the reference" in result.output and "Traceback" not in result.output

    # on purpose: usable, marked modified, never with the canonical hashes
    identity = dataset_identity(data, allow_modified=True)
    canonical = dataset_identity(pristine)
    assert identity["modified"] is True and identity["preset"] is None
    assert identity["benchmark_hash"] == canonical["benchmark_hash"]  # the instances themselves are unchanged
    assert identity["references_hash"] != canonical["references_hash"]
    assert identity["content_hash"] not in (canonical["content_hash"], canonical["benchmark_hash"])
    inst = find_instance(data, "knapsack-easy-0001", allow_modified=True)
    assert inst.reference_objective == 1
    result = runner.invoke(app, ["verify", "--data", str(data), "--id", inst.id, "--allow-modified",
                                 "--answer", "Answer: [0]", "--json"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("damage, message", [
    (lambda p: p.write_text("\n".join(p.read_text().splitlines()[1:]) + "\n"),
     r"easy.jsonl:1: holds 'knapsack-easy-0001' where 'knapsack-easy-0000' belongs"),
    (lambda p: p.write_text("\n".join(p.read_text().splitlines()[:2]) + "\n"),
     r"easy.jsonl: holds 2 records, manifest.json says 3 \(line 3\)"),
    (lambda p: p.write_text(p.read_text().replace('"instance":{', '"instance":{"x":1,', 1)),
     r"easy.jsonl:1: the instance data of knapsack-easy-0000 was edited"),
    (lambda p: p.write_text(p.read_text()[:-40] + "\n"), r"easy.jsonl:3: not valid JSON"),
    (lambda p: p.unlink(), r"easy.jsonl: missing"),
])
def test_damage_is_located(data, damage, message):
    damage(data / "knapsack" / "easy.jsonl")
    with pytest.raises(DataError, match=message):
        open_dataset(data)


def test_broken_manifest_names_file_and_line(data):
    text = (data / "manifest.json").read_text()
    (data / "manifest.json").write_text(text.replace('"counts"', '"counts" oops', 1))
    line = text[: text.index('"counts"')].count("\n") + 1
    with pytest.raises(DataError, match=rf"manifest.json:{line}: not valid JSON"):
        load_dataset(data)


def test_image_paths_stay_inside_the_dataset(data, tmp_path):
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG private")
    for bad in (str(secret), "../secret.png", "knapsack/../../secret.png"):
        _edit_line(data / "knapsack" / "easy.jsonl", 1, lambda r: r.update(image=bad))
        with pytest.raises(DataError, match="not a path inside the dataset folder"):
            select_instances("knapsack", ["easy"], data=data, allow_modified=True)
    # a link inside the folder that points outside it
    _edit_line(data / "knapsack" / "easy.jsonl", 1, lambda r: r.update(image="knapsack/images/link.png"))
    (data / "knapsack" / "images" / "link.png").symlink_to(secret)
    with pytest.raises(DataError, match="leads outside the dataset folder"):
        select_instances("knapsack", ["easy"], data=data, allow_modified=True)


def test_changed_image_is_refused_when_read_and_marks_the_set_modified(data, pristine):
    png = data / "tsp" / "images" / "tsp-easy-0001.png"
    png.write_bytes(png.read_bytes() + b"x")
    selection = select_instances("tsp", ["easy"], data=data)  # the records are intact
    assert selection.image(selection.instances[0]).startswith(b"\x89PNG")
    with pytest.raises(DataError, match="tsp-easy-0001.png: the image of tsp-easy-0001 differs"):
        selection.image(selection.instances[1])
    identity = dataset_identity(data, allow_modified=True)
    assert identity["modified"] and identity["benchmark_hash"] == dataset_identity(pristine)["benchmark_hash"]
    assert identity["content_hash"] != dataset_identity(pristine)["content_hash"]


def test_rerunning_generate_repairs_a_damaged_dataset(data, pristine):
    _edit_line(data / "knapsack" / "easy.jsonl", 3, lambda r: r["reference"]["heuristic"].update(objective=1))
    (data / "tsp" / "images" / "tsp-easy-0002.png").unlink()
    said = []
    generate_dataset(data, SPEC, notify=said.append)
    assert len(said) == 2 and any("knapsack/easy.jsonl:3" in s for s in said)
    assert any("tsp-easy-0002.png" in s for s in said)
    assert _tree(data) == _tree(pristine)
    said.clear()
    generate_dataset(data, SPEC, notify=said.append)
    assert said == []


def test_overwrite_removes_only_what_the_manifest_lists(data):
    (data / "notes.md").write_text("mine")
    (data / "results").mkdir()
    (data / "results" / "results.json").write_text("{}")
    (data / "knapsack" / "my-plot.png").write_bytes(b"mine")
    other = GenerateSpec(tasks=("subset_sum",), difficulties=("easy",), count=1, seed=0, optimal=False, images=False)
    generate_dataset(data, other, overwrite=True)
    left = set(_tree(data))
    assert {"notes.md", "results/results.json", "knapsack/my-plot.png", "subset_sum/easy.jsonl"} <= left
    assert not any(p.startswith("tsp") or p in ("knapsack/easy.jsonl", "knapsack/images") for p in left)
    assert not (data / "tsp").exists() and not (data / "knapsack" / "images").exists()
    assert [i.task for i in load_dataset(data)] == ["subset_sum"]


def test_a_killed_writers_temporary_file_never_wedges_the_folder(tmp_path):
    out = tmp_path / "data"
    out.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stray = out / f".{IN_PROGRESS}.tmp{dead.stdout.strip()}"
    stray.write_text("{")
    spec = GenerateSpec(tasks=("knapsack",), difficulties=("easy",), count=1, seed=0, optimal=False, images=False)
    generate_dataset(out, spec)
    assert not stray.exists() and set(_tree(out)) == {"manifest.json", "knapsack/easy.jsonl"}


def test_preset_is_named_only_for_its_exact_data():
    spec = preset_spec("mm-np-bench-v1")
    manifest = {"arguments": spec.to_json(), "benchmark_hash": PRESETS["mm-np-bench-v1"]["benchmark_hash"]}
    assert preset_of(manifest) == "mm-np-bench-v1"
    assert preset_of({**manifest, "benchmark_hash": "0" * 64}) is None
    assert preset_of({**manifest, "arguments": {**spec.to_json(), "optimal": False}}) is None
    assert preset_of({**manifest, "arguments": {**spec.to_json(), "seed": 1}}) is None
    version, references = "9.15.6755", "1" * 64  # a release whose references are recorded for this version
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(PRESETS["mm-np-bench-v1"], "references_hash", {version: references})
        assert preset_of({**manifest, "ortools_version": version, "references_hash": references}) == "mm-np-bench-v1"
        assert preset_of({**manifest, "ortools_version": version, "references_hash": "0" * 64}) is None
        assert preset_of({**manifest, "ortools_version": "0.0", "references_hash": "0" * 64}) == "mm-np-bench-v1"


def test_instance_ids_round_trip_and_bad_ids_are_usage_errors(pristine):
    assert parse_instance_id("meeting_scheduling-hard-0033") == ("meeting_scheduling", "hard", 33)
    for inst in load_dataset(pristine):
        assert parse_instance_id(inst.id) == (inst.task, inst.difficulty, int(inst.id[-4:]))
    for bad in ("tsp-easy", "tsp-easy-3", "../tsp-easy-0001", "tsp-easy-0001 "):
        with pytest.raises(UsageError, match="not an instance id"):
            parse_instance_id(bad)


def test_reward_record_is_what_rewards_read(pristine):
    from mmnp.rewards import score

    inst = next(iter(load_dataset(pristine)))
    record = inst.to_reward_record()
    assert set(record) == {"id", "task", "instance", "reference_objective", "best_objective"}
    answer = mmnp.get_task(inst.task).format_answer(inst.reference["heuristic"]["solution"])
    verdict, ratio = score(answer, json.dumps(record))
    assert verdict.feasible and ratio == 1.0


SOLVE_AND_INTERRUPT = textwrap.dedent("""
    import os, signal, threading, mmnp
    from mmnp.solvers import min_bisection
    data = mmnp.get_task("min_bisection").generate("L6", 1).data  # CP-SAT cannot close it in 60 s
    hint = min_bisection.heuristic(data)
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        min_bisection.optimal(data, 60.0, hint)
        print("finished")
    except KeyboardInterrupt:
        print("interrupted")
""")


def test_ctrl_c_stops_an_exact_solve():
    """CP-SAT would otherwise catch SIGINT, end the solve early and return its best tour."""
    done = subprocess.run([sys.executable, "-c", SOLVE_AND_INTERRUPT], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "interrupted", done.stdout + done.stderr


GENERATE = textwrap.dedent("""
    import sys
    from mmnp.dataset import GenerateSpec, generate_dataset
    spec = GenerateSpec(tasks=("min_bisection",), difficulties=("hard",), count=int(sys.argv[3]), seed=7,
                        images=False, time_limit=1.5)  # CP-SAT cannot close these: each solve runs its limit
    generate_dataset(sys.argv[1], spec, workers=int(sys.argv[2]),
                     progress=lambda done, total: print("tick", done, flush=True))
""")


def test_interrupted_exact_generation_resumes_to_a_straight_runs_bytes(tmp_path):
    straight, stopped = tmp_path / "straight", tmp_path / "stopped"
    quiet = {"check": True, "stdout": subprocess.DEVNULL, "timeout": 1200}
    subprocess.run([sys.executable, "-c", GENERATE, str(straight), "1", "2"], **quiet)
    proc = subprocess.Popen([sys.executable, "-c", GENERATE, str(stopped), "1", "2"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("tick 1")  # the second instance's exact solve starts now
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=300) != 0
    assert not (stopped / "manifest.json").exists()
    subprocess.run([sys.executable, "-c", GENERATE, str(stopped), "1", "2"], **quiet)
    assert _tree(stopped) == _tree(straight)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_worker_pool_dies_with_a_killed_parent(tmp_path):
    command = [sys.executable, "-c", GENERATE, str(tmp_path / "d"), "2", "40"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()  # the pool is working
    workers = _children(proc.pid)
    assert len(workers) == 2
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 60  # a hang guard, not a timing assertion
    while any(map(_running, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_running, workers))
