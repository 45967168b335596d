"""The leaderboard over real `mmnp eval` outputs: each run checked against its samples and data, with
results.json or samples.jsonl edited to be caught, and, to render shapes no small run makes (levels,
the perception probe), runs edited after they were read."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pytest
from typer.testing import CliRunner

from mmnp.cli import app
from mmnp.errors import DataError, RunError, UsageError
from mmnp.evaluation.leaderboard import make_leaderboard, render_csv, render_html, render_markdown
from mmnp.evaluation.ranking import ANSWERS_UNCHECKED
from mmnp.evaluation.runs import Run, collect

HOSTILE_MODEL = '<img src=x onerror="document.title=\'pwned\'">$\\frac$'
HOSTILE_RESPONSE = '<script>document.title="pwned"</script>Answer: [0, 1]'
OTHER_HASH = "f" * 64
runner = CliRunner()


def _unchecked(model: str) -> str:
    """The model cell of a run counted on its stored verdicts, its data not at hand."""
    return f"{model} ({ANSWERS_UNCHECKED})"

def _eval(model: str, data: Path, out: Path, *extra: str) -> None:
    result = runner.invoke(app, ["eval", "--model", model, "--data", str(data), "--difficulty", "easy,medium",
                                 "--modality", "both", "--samples", "3", "--temperature", "0.7",
                                 "--output-path", str(out), *extra])
    assert result.exit_code == 0, result.output


def _edit_samples(folder: Path, edit: Callable[[dict], None]) -> None:
    lines = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    for r in lines:
        edit(r)
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))


@pytest.fixture(scope="module")
def results_dir(small_dataset, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("results")
    for model in ("solver:heuristic", "solver:random"):
        _eval(model, small_dataset, out)
    # a third "model" whose name and responses try to inject HTML, script and matplotlib math: its
    # answers scored by `mmnp eval --rescore`, so that its numbers are what its samples earn
    rescored = tmp_path_factory.mktemp("rescored")
    shutil.copytree(out / "solver_random", rescored / "solver_random")
    _edit_samples(rescored / "solver_random", lambda r: r.update(response=HOSTILE_RESPONSE))
    _eval("solver:random", small_dataset, rescored, "--rescore")
    shutil.copytree(rescored / "solver_random", out / "hostile")
    results = json.loads((out / "hostile" / "results.json").read_text())
    results["model"] = HOSTILE_MODEL
    (out / "hostile" / "results.json").write_text(json.dumps(results))
    return out


def _variant(src: Path, root: Path, name: str, edit: Callable[[dict], None]) -> Path:
    """A copy of a model folder under root/name with its results.json edited (where its samples
    cannot tell: the data's name, the run's settings and checks)."""
    dst = root / name
    shutil.copytree(src, dst)
    results = json.loads((dst / "results.json").read_text())
    edit(results)
    (dst / "results.json").write_text(json.dumps(results))
    return dst


def _as_read(src: Path, edit: Callable[[dict], None]) -> list[Run]:
    """The run in `src`, read and checked, then its numbers edited: a shape to render that no small run
    makes (levels, the probe), past the check that would refuse such a results.json on disk."""
    runs = collect([src])
    for run in runs:
        run.results = json.loads(json.dumps(run.results))
        edit(run.results)
        run.model = run.label = run.results["model"]
    return runs


def _results(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())


def _sections(md: str) -> dict[str, str]:
    """Markdown report -> {dataset heading: its text}."""
    return {part.split("\n", 1)[0]: part for part in md.split("\n## ")[1:]}


def _table(text: str, title_start: str) -> list[dict[str, str]]:
    """The rows of the markdown table under the first `### title...` heading."""
    block = text.split(f"### {title_start}", 1)[1].split("\n### ", 1)[0]
    lines = [line for line in block.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split(" | ")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split(" | ")))) for line in lines[2:]]


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _refused(paths: list[Path], capsys: pytest.CaptureFixture[str], **options) -> str:
    """The "not shown" lines `make_leaderboard` prints when it leaves out every run of `paths`: it then
    renders nothing and fails (`mmnp leaderboard` exits 1), so an empty report never passes for one."""
    capsys.readouterr()
    with pytest.raises(DataError, match=r"^no run left to rank \(\d+ read\): each is left out"):
        make_leaderboard(paths, **options)
    return capsys.readouterr().err


def test_markdown_has_the_np_bench_layout(results_dir):
    text = render_markdown(collect([results_dir]))
    header = next(line for line in text.splitlines() if line.startswith("| model | modality | planning SR"))
    for cat in ("planning", "graph", "selection", "partition", "schedule"):
        assert f"{cat} SR" in header and f"{cat} QR" in header
    assert "Overall SR | Overall QR | Macro SR | Macro QR" in header  # METRICS.md: Overall and the macro over tasks
    heuristic = next(line for line in text.splitlines() if line.startswith("| solver:heuristic | text |"))
    assert heuristic.count("100.0") == 14  # SR and QR of 5 categories, Overall and the macro over tasks
    random = _results(results_dir / "solver_random")["metrics"]["image"]
    assert random["macro_over_tasks"]["qr"] != random["overall"]["qr"]  # the two means differ here
    row = next(r for r in _table(text, "Leaderboard") if r["model"] == "solver:random" and r["modality"] == "image")
    assert (row["Overall QR"], row["Macro SR"], row["Macro QR"]) == (
        _pct(random["overall"]["qr"]), _pct(random["macro_over_tasks"]["sr"]), _pct(random["macro_over_tasks"]["qr"]))
    assert "### By difficulty: the mean over the tasks at each difficulty" in text
    assert "pass@3" in text and "distinct@3" in text and "pass@3(opt)" in text
    manifest_hash = json.loads((Path(_results(results_dir / "solver_heuristic")["dataset"]["path"])
                                / "manifest.json").read_text())["benchmark_hash"]
    (head,) = _sections(text)  # one dataset, its hash shown
    assert head.startswith(f"dataset benchmark hash {manifest_hash}")


def test_csv_matches_results_json(results_dir):
    rows = list(csv.DictReader(io.StringIO(render_csv(collect([results_dir / "solver_random"])))))
    results = _results(results_dir / "solver_random")
    overall = next(r for r in rows if r["scope"] == "overall" and r["modality"] == "image")
    assert float(overall["QR"]) == pytest.approx(100 * results["metrics"]["image"]["overall"]["qr"], abs=0.05)
    tasks = {r["name"] for r in rows if r["scope"] == "task"}
    assert tasks == set(results["metrics"]["text"]["tasks"])
    references = results["dataset"].get("references_hash")  # recorded by newer runs: part of the key
    assert {r["dataset"] for r in rows} == {results["dataset"]["benchmark_hash"]
                                            + (f"/references:{references}" if references else "")}


def test_runs_on_different_datasets_are_ranked_apart_unless_mixed(results_dir, tmp_path):
    def other_data(r):
        r["dataset"]["benchmark_hash"] = OTHER_HASH

    other = _variant(results_dir / "solver_random", tmp_path, "other", other_data)
    paths = [results_dir / "solver_heuristic", other]
    md = make_leaderboard(paths)
    sections = _sections(md)
    assert len(sections) == 2
    benchmark = _results(results_dir / "solver_heuristic")["dataset"]["benchmark_hash"]
    ours, theirs = (next(text for head, text in sections.items() if h in head) for h in (benchmark, OTHER_HASH))
    assert {r["model"] for r in _table(ours, "Leaderboard")} == {"solver:heuristic"}
    assert {r["model"] for r in _table(theirs, "Leaderboard")} == {_unchecked("solver:random")}  # its data: not here

    mixed = make_leaderboard(paths, mix_datasets=True)
    (head, text), = _sections(mixed).items()
    assert head.startswith("MIXED datasets")
    rows = _table(text, "Leaderboard")
    assert {(r["model"], r["dataset"][:12]) for r in rows} == {("solver:heuristic", benchmark[:12]),
                                                               (_unchecked("solver:random"), OTHER_HASH[:12])}
    assert [r["model"] for r in rows][0] == "solver:heuristic"  # one ranking, best Overall QR first


def test_runs_with_other_references_are_ranked_apart(results_dir, tmp_path):
    """Same instances, different reference solutions (QR's denominator): not one ranking."""
    def references(digest):
        return lambda r: r["dataset"].update(references_hash=digest)

    ours = _variant(results_dir / "solver_heuristic", tmp_path, "ours", references("a" * 64))
    theirs = _variant(results_dir / "solver_random", tmp_path, "theirs", references("b" * 64))
    sections = _sections(make_leaderboard([ours, theirs]))
    assert len(sections) == 2
    for digest, model in (("a" * 64, "solver:heuristic"), ("b" * 64, "solver:random")):
        head = next(h for h in sections if f"references hash {digest} · best of 3 samples" in h)
        assert {r["model"] for r in _table(sections[head], "Leaderboard")} == {_unchecked(model)}


def test_modified_data_is_marked_with_its_own_content_hash(results_dir, tmp_path):
    content = "c" * 64

    def modified(references: str):
        return lambda r: r["dataset"].update(modified=True, content_hash=content, benchmark_hash=content,
                                             references_hash=references)

    edited = _variant(results_dir / "solver_heuristic", tmp_path, "edited", modified("a" * 64))
    md = make_leaderboard([results_dir / "solver_random", edited])
    sections = _sections(md)
    head = next(h for h in sections if "MODIFIED" in h)
    assert f"content hash {content}, references hash {'a' * 64}" in head and "benchmark hash" not in head
    assert {r["model"] for r in _table(sections[head], "Leaderboard")} == {_unchecked("solver:heuristic")}
    plain = next(text for h, text in sections.items() if h != head)
    assert {r["model"] for r in _table(plain, "Leaderboard")} == {"solver:random"}  # never under the canonical hash
    page = make_leaderboard([edited], format="csv")
    assert {r["dataset"] for r in csv.DictReader(io.StringIO(page))} == {f"modified:{content}/references:{'a' * 64}"}
    # the same edited instances with other edited references: QR measured against other numbers
    other = _variant(results_dir / "solver_heuristic", tmp_path, "other", modified("b" * 64))
    sections = _sections(make_leaderboard([edited, other]))
    assert len(sections) == 2 and all("MODIFIED" in h for h in sections)


def test_a_run_on_part_of_the_dataset_is_ranked_apart(results_dir, small_dataset, tmp_path):
    """--tasks or --limit evaluate part of a dataset: its Overall is not the benchmark's, so the
    run is marked a subset and never ranked beside runs on the whole of it."""
    result = runner.invoke(app, ["eval", "--model", "solver:heuristic", "--data", str(small_dataset), "--tasks",
                                 "knapsack", "--difficulty", "easy,medium", "--modality", "both", "--samples", "3",
                                 "--temperature", "0.7", "--limit", "1", "--output-path", str(tmp_path)])
    assert result.exit_code == 0, result.output
    selection = _results(tmp_path / "solver_heuristic")["dataset"]["selection"]
    assert selection["instances"] == 2 and selection["of"] > 2 and selection["tasks"] == ["knapsack"]
    assert "selection" not in _results(results_dir / "solver_random")["dataset"]  # the whole dataset: none
    sections = _sections(make_leaderboard([results_dir / "solver_random", tmp_path / "solver_heuristic"]))
    assert len(sections) == 2
    head = next(h for h in sections if "SUBSET" in h)
    assert f"SUBSET: 2 of {selection['of']} instances (tasks knapsack; difficulties easy,medium; at most 1 per task " \
           "and difficulty)" in head
    assert {r["model"] for r in _table(sections[head], "Leaderboard")} == {"solver:heuristic"}


def _failing(results_dir: Path, data: Path, root: Path, failures: int) -> Path:
    """solver:random's run with its first `failures` samples failed calls, scored by `mmnp eval --rescore`."""
    shutil.copytree(results_dir / "solver_random", root / "solver_random")
    left = [failures]

    def fail(r: dict) -> None:
        if left[0] > 0:
            left[0] -= 1
            r.update(failed=True, error="HTTP 503", response=None)

    _edit_samples(root / "solver_random", fail)
    _eval("solver:random", data, root, "--rescore", "--max-fail-rate", "1")
    return root / "solver_random"


def test_incomplete_runs_are_left_out_with_a_line_or_marked(results_dir, small_dataset, tmp_path, capsys):
    def legacy(r):  # an older results.json: neither complete nor failed_samples, failures only in usage
        r.pop("failed_samples")
        r.pop("complete")

    root = tmp_path / "runs"
    _variant(_failing(results_dir, small_dataset, tmp_path / "a", 37), root, "broken",
             lambda r: r.update(timestamp="2026-11-30T12:00:00Z"))
    _variant(_failing(results_dir, small_dataset, tmp_path / "b", 5), root, "legacy", legacy)
    shutil.copytree(results_dir / "solver_heuristic", root / "solver_heuristic")

    md = make_leaderboard([root])
    assert {r["model"] for r in _table(md, "Leaderboard")} == {"solver:heuristic"}
    assert f"left out solver:random ({root / 'broken'}): incomplete: 37 failed samples" in md
    assert f"left out solver:random ({root / 'legacy'}): incomplete: 5 failed samples" in md
    assert "--include-incomplete" in md

    make_leaderboard([root], format="csv")
    err = capsys.readouterr().err
    assert err.count("not shown:") == 2 and "incomplete: 37 failed samples" in err

    md = make_leaderboard([root], include_incomplete=True)
    models = {r["model"] for r in _table(md, "Leaderboard")}
    assert f"solver:random ({root / 'broken'}) (incomplete: 37 failed samples)" in models
    assert f"solver:random ({root / 'legacy'}) (incomplete: 5 failed samples)" in models
    assert "solver:heuristic" in models and "left out" not in md
    runs = {r["folder"]: r for r in _table(md, "Runs")}
    assert runs[str(root / "broken")]["complete"] == "incomplete: 37 failed samples"
    assert runs[str(root / "broken")]["timestamp"] == "2026-11-30T12:00:00Z"
    assert runs[str(root / "solver_heuristic")]["complete"] == "yes"


def test_a_run_claiming_complete_over_failed_samples_is_refused(results_dir, small_dataset, tmp_path, capsys):
    """A results.json edited to say complete over failed samples is not taken at its word."""
    claimed = _variant(_failing(results_dir, small_dataset, tmp_path / "a", 5), tmp_path, "claimed",
                       lambda r: r.update(complete=True, failed_samples=0))
    assert (f"left out solver:random ({claimed}): {claimed / 'results.json'}: failed_samples is 0, its samples "
            "give 5; the file was edited or belongs to other samples; rerun its `mmnp eval` command with --rescore") in (
        _refused([claimed], capsys, include_incomplete=True))


def test_missing_and_unreadable_results_are_named(results_dir, tmp_path, capsys):
    root = tmp_path / "runs"
    shutil.copytree(results_dir / "solver_heuristic", root / "solver_heuristic")
    unfinished = root / "unfinished"
    unfinished.mkdir()
    (unfinished / "samples.jsonl").write_text("")
    truncated = root / "truncated"
    truncated.mkdir()
    (truncated / "results.json").write_text('{"model": "x",\n "metrics": {')
    wrong = _variant(results_dir / "solver_random", root, "wrong", lambda r: r["metrics"]["text"]["tasks"]["tsp"]
                     .update(qr="high"))
    nan = _variant(results_dir / "solver_random", root, "nan", lambda r: r["metrics"]["image"]["overall"]
                   .update(sr=float("nan")))
    (root / "notes").mkdir()

    md = make_leaderboard([root], format="md")
    expected = [f"{unfinished}: no results.json (the run never finished",
                f"{truncated / 'results.json'}: line 2 column 14: not valid JSON",
                f"{wrong / 'results.json'}: metrics.text.tasks.tsp.qr is 'high', not a number",
                f"{nan / 'results.json'}: metrics.image.overall.sr is 'nan', not a number",
                f"{root / 'notes'}: no results.json (not a model folder"]
    for line in expected:
        assert line in md
    assert {r["model"] for r in _table(md, "Leaderboard")} == {"solver:heuristic"}

    make_leaderboard([root], format="html", out=tmp_path / "board.html")
    err = capsys.readouterr().err
    assert all(line in err for line in expected) and err.count("not shown:") == len(expected)
    assert "error" not in err

    with pytest.raises(DataError, match="no readable results.json: .*line 2 column 14"):
        make_leaderboard([truncated])


def test_older_results_are_read_and_marked(results_dir, tmp_path):
    def old(r):
        for key in ("complete", "failed_samples", "image_probe", "timestamp"):
            r.pop(key, None)
        r["dataset"] = {"path": r["dataset"]["path"], "benchmark_hash": r["dataset"]["benchmark_hash"]}
        for block in r["metrics"].values():
            for group in [block["overall"], *block["tasks"].values()]:
                for key in ("sr_se", "qr_se", "sr_at_1_se", "qr_at_1_se"):
                    group.pop(key, None)

    def no_dataset(r):
        old(r)
        r.pop("dataset")

    older = _variant(results_dir / "solver_random", tmp_path, "older", old)
    older_heuristic = _variant(results_dir / "solver_heuristic", tmp_path, "older_heuristic", old)
    anonymous = _variant(results_dir / "solver_random", tmp_path, "anonymous", no_dataset)
    md = make_leaderboard([older_heuristic, older, anonymous], stderr=True)
    sections = _sections(md)
    benchmark = _results(older)["dataset"]["benchmark_hash"]
    known = next(text for head, text in sections.items() if head.startswith(f"dataset benchmark hash {benchmark} · "))
    rows = _table(known, "Leaderboard")
    assert {r["model"] for r in rows if r["modality"] == "text"} == {"solver:heuristic", "solver:random"}
    unrecorded = "(image delivery not recorded (an older mmnp, or an edited results.json))"  # no probe, no clean mark
    assert {r["model"] for r in rows if r["modality"] == "image"} == {f"solver:heuristic {unrecorded}",
                                                                     f"solver:random {unrecorded}"}
    assert "Note: written by an older mmnp that did not record whether the data was checked" in known
    unknown = next(text for head, text in sections.items()
                   if head.startswith("unknown dataset (its results.json records no benchmark hash) · "))
    assert {r["model"] for r in _table(unknown, "Leaderboard") if r["modality"] == "text"} == {
        _unchecked("solver:random")}
    task_row = next(r for r in _table(known, "By task") if r["model"] == "solver:random" and r["task"] == "tsp")
    assert task_row["QR"].endswith(" ± n/a")  # no standard error recorded: none invented


def test_standard_errors_in_markdown_and_csv(results_dir):
    results = _results(results_dir / "solver_random")
    overall = results["metrics"]["text"]["overall"]
    tsp = results["metrics"]["text"]["tasks"]["tsp"]
    assert tsp["qr_se"] > 0
    md = make_leaderboard([results_dir / "solver_random"], stderr=True)
    row = next(r for r in _table(md, "Leaderboard") if r["modality"] == "text")
    assert row["Overall QR"] == f"{_pct(overall['qr'])} ± {_pct(overall['qr_se'])}"
    task = next(r for r in _table(md, "By task") if r["modality"] == "text" and r["task"] == "tsp")
    assert task["QR"] == f"{_pct(tsp['qr'])} ± {_pct(tsp['qr_se'])}" and task["SR@1"].count("±") == 1
    plain = make_leaderboard([results_dir / "solver_random"])
    assert "±" not in plain

    rows = csv.DictReader(io.StringIO(make_leaderboard([results_dir / "solver_random"], format="csv",
                                                               stderr=True)))
    tsp_row = next(r for r in rows if r["scope"] == "task" and r["name"] == "tsp" and r["modality"] == "text")
    assert tsp_row["QR"] == _pct(tsp["qr"]) and tsp_row["QR ±"] == _pct(tsp["qr_se"])


def _ladder(r: dict) -> None:
    """Rename the run's difficulties to ladder levels (easy -> L2, medium -> L10) and add an L1
    cell per task, as a level-ladder run would have them."""
    for block in (r["metrics"]["text"], r["metrics"]["image"]):
        cells = {}
        for key, cell in block["task_difficulty"].items():
            task, level = key.rsplit("/", 1)
            cells[f"{task}/L1"] = {**cell, "sr": 1.0}
            renamed = {"easy": "L2", "medium": "L10"}[level]
            cells[f"{task}/{renamed}"] = cell
        block["task_difficulty"] = dict(sorted(cells.items()))  # L1, L10, L2: the order is the leaderboard's job
        block["task_difficulty"]["tsp/L2"]["sr"] = 0.3
        block["task_difficulty"]["tsp/L10"]["sr"] = 0.1
        block["task_difficulty"]["knapsack/L2"]["sr"] = 0.9
        block["task_difficulty"]["knapsack/L10"]["sr"] = 0.6
        block["difficulties"] = {"L2": block["difficulties"]["easy"], "L10": block["difficulties"]["medium"]}


def test_levels_per_task_with_the_level_where_a_model_breaks(results_dir, tmp_path):
    ladder = _as_read(results_dir / "solver_random", _ladder)
    md = render_markdown(ladder, stderr=True)
    rows = _table(md, "By level")
    header = list(rows[0])
    assert header.index("L1 SR") < header.index("L2 SR") < header.index("L10 SR") < header.index("breaks at")
    by = {(r["task"], r["modality"]): r for r in rows}
    assert by["tsp", "text"]["breaks at"] == "L2"  # 100 % at L1, 30 % at L2
    assert by["knapsack", "image"]["breaks at"] == "beyond L10"  # never below 50 %
    cell = ladder[0].results["metrics"]["text"]["task_difficulty"]["tsp/L10"]
    assert by["tsp", "text"]["L10 QR"] == f"{_pct(cell['qr'])} ± {_pct(cell['qr_se'])}"
    assert {t for t, _ in by} == set(ladder[0].results["metrics"]["text"]["tasks"])

    page = render_html(ladder)
    for task in ladder[0].results["metrics"]["text"]["tasks"]:
        assert f"<figcaption>{task} by level</figcaption>" in page
    tsp = page.split("<figcaption>tsp by level</figcaption>", 1)[1].split("</figure>", 1)[0]
    assert tsp.index(">L1<") < tsp.index(">L2<") < tsp.index(">L10<")  # level axis in ladder order


def test_perception_probe_beside_text_and_image(results_dir, tmp_path):
    def probe(r):
        r["metrics"]["probe"] = {"overall": {"recognition_accuracy": 0.75, "field_f1": 0.9, "instances": 40},
                                 "tasks": {"tsp": {"recognition_accuracy": 0.5, "field_f1": 0.8, "instances": 4}}}

    probed = _as_read(results_dir / "solver_random", probe)
    results = probed[0].results["metrics"]
    md = render_markdown(probed + collect([results_dir / "solver_heuristic"]))
    rows = {r["task"]: r for r in _table(md, "Perception and reasoning")}
    assert set(rows) == {"overall", *results["text"]["tasks"]}
    overall = rows["overall"]
    assert overall["model"] == "solver:random" and overall["recognition"] == "75.0" and overall["field F1"] == "90.0"
    assert overall["text SR"] == _pct(results["text"]["overall"]["sr"])
    assert overall["image QR"] == _pct(results["image"]["overall"]["qr"])
    assert rows["tsp"]["recognition"] == "50.0" and rows["tsp"]["probe instances"] == "4"
    assert rows["knapsack"]["recognition"] == ""  # the probe has no knapsack figure: none shown
    assert {r["modality"] for r in _table(md, "Leaderboard")} == {"text", "image"}  # the probe is no modality
    csv_rows = list(csv.DictReader(io.StringIO(render_csv(probed))))
    assert {(r["name"], r["recognition"]) for r in csv_rows if r["scope"] == "probe"} == {("overall", "75.0"),
                                                                                           ("tsp", "50.0")}


def test_image_rows_are_marked_when_delivery_was_not_shown(results_dir, tmp_path):
    def skipped(r):
        r["image_probe"] = {"status": "skipped", "detail": "--skip-image-probe given"}

    run = _variant(results_dir / "solver_random", tmp_path, "unprobed", skipped)
    rows = _table(make_leaderboard([run]), "Leaderboard")
    assert {r["modality"]: r["model"] for r in rows} == {
        "text": "solver:random", "image": "solver:random (image delivery skipped: --skip-image-probe given)"}


def test_command_errors_say_where_and_what_to_do(results_dir, tmp_path):
    with pytest.raises(UsageError, match="is a folder; give a file path such as .*leaderboard.html"):
        make_leaderboard([results_dir], format="html", out=tmp_path)
    (tmp_path / "file").write_text("mine")
    with pytest.raises(UsageError, match="is a file, not a folder"):
        make_leaderboard([results_dir], out=tmp_path / "file" / "board.md")
    with pytest.raises(UsageError, match="would overwrite an mmnp file"):
        make_leaderboard([results_dir], out=results_dir / "solver_random" / "results.json")
    with pytest.raises(RunError, match="cannot write --out /proc/board.md: .*choose a writable path"):
        make_leaderboard([results_dir], out=Path("/proc/board.md"))
    with pytest.raises(UsageError, match="--format html needs --out"):
        make_leaderboard([results_dir], format="html")
    with pytest.raises(UsageError, match="--format 'pdf': choose md, csv or html"):
        make_leaderboard([results_dir], format="pdf")
    with pytest.raises(UsageError, match="--modality 'video': no run has it; the runs have image, text"):
        make_leaderboard([results_dir], modality="video")
    with pytest.raises(UsageError, match="does not exist"):
        make_leaderboard([tmp_path / "nothing"])
    with pytest.raises(UsageError, match="samples.jsonl is a file; give a model folder"):
        make_leaderboard([results_dir / "solver_random" / "samples.jsonl"])
    with pytest.raises(UsageError, match="given twice"):
        make_leaderboard([results_dir, results_dir / "solver_random"])
    assert (tmp_path / "file").read_text() == "mine"


def test_a_report_is_refreshed_but_a_users_file_is_never_overwritten(results_dir, tmp_path):
    """--out over a leaderboard mmnp wrote (any format) refreshes it; over anything else it is refused and
    the file kept: notes kept beside results were replaced without a word."""
    for format in ("md", "csv", "html"):
        board = tmp_path / f"board.{format}"
        for _ in range(2):
            make_leaderboard([results_dir], format=format, out=board)
        make_leaderboard([results_dir], format="md", out=board)  # another format's report is one too
    for name, text in (("notes.md", "# My notes\n"), ("thesis.csv", "a,b\n1,2\n"), ("page.html", "<!DOCTYPE html>\n<p>mine")):
        mine = tmp_path / name
        mine.write_text(text)
        with pytest.raises(UsageError, match=f"--out {mine} exists and is not a leaderboard mmnp wrote"):
            make_leaderboard([results_dir], format=name.rsplit(".", 1)[1], out=mine)
        assert mine.read_text() == text


def test_html_escapes_names_and_responses(results_dir, tmp_path):
    def hostile_level(r):
        cells = r["metrics"]["text"]["task_difficulty"]
        cells["tsp/<b>$\\frac$</b>"] = cells.pop("tsp/medium")

    runs = collect([results_dir]) + _as_read(results_dir / "solver_random", hostile_level)
    page = render_html(runs, browser_samples=1)
    assert "<b>$\\frac$</b>" not in page and "&lt;b&gt;$\\frac$&lt;/b&gt;" in page  # a level name, as text
    assert HOSTILE_MODEL not in page and "<script>document.title" not in page
    assert "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=" in page  # the name is shown, as text, in tables and plot legends
    assert page.count("<script>") == 1  # only the report's own sorting script


def test_sample_browser_survives_damaged_samples(results_dir, tmp_path):
    odd, damaged = tmp_path / "odd", tmp_path / "damaged"
    for run in (odd, damaged):
        shutil.copytree(results_dir / "solver_random", run)
    lines = (odd / "samples.jsonl").read_text().splitlines()
    first, second = json.loads(lines[0]), json.loads(lines[1])
    first["response"] = 12345  # a server's content stored as a number
    second["response"] = ["<b>list</b>"]
    second["ratio"] = None
    lines[:2] = [json.dumps(first), json.dumps(second)]
    (odd / "samples.jsonl").write_text("\n".join(lines) + '\n{"key": "torn')
    lines = (damaged / "samples.jsonl").read_text().splitlines()
    lines.insert(5, "{not json")
    (damaged / "samples.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "board.html"
    with pytest.raises(DataError, match=r"no run left to rank \(2 read\)"):  # refused: edited and damaged logs
        make_leaderboard([odd, damaged])
    make_leaderboard([odd, damaged], format="html", out=out, browser_samples=40, include_unverified=True)
    page = out.read_text()
    assert "<pre>12345</pre>" in page and "&lt;b&gt;list&lt;/b&gt;" in page
    damage = page.split(f"<li>{damaged / 'samples.jsonl'}", 1)[1].split("</li>", 1)[0]  # named under "Not shown"
    assert "line 6" in damage and "not a JSON record" in damage


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if exe is None:
        pytest.skip("needs Debian's chromium (installed by .ci/run)")
    return exe


def _load(page: Path, tmp_path: Path, extra: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """(DOM after scripts ran, console errors) from headless Chromium."""
    proc = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
         "--virtual-time-budget=5000", *extra, "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    errors = [line for line in proc.stderr.splitlines() if "CONSOLE" in line and ("Uncaught" in line or "rror" in line)]
    return proc.stdout, errors


def test_console_error_detection_works(tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><p>x</p><script>undefinedFunction()</script></body></html>")
    _, errors = _load(broken, tmp_path)
    assert errors, "a page with a script error must be caught, or the next test proves nothing"


def test_html_report_in_headless_chromium(results_dir, tmp_path):
    report = tmp_path / "report.html"
    def ladder_model(r):
        _ladder(r)
        r["model"] = "ladder-model"

    ladder = _as_read(results_dir / "solver_heuristic", ladder_model)
    report.write_text(render_html(collect([results_dir]) + ladder, browser_samples=1, stderr=True))
    page = report.read_text()
    dom, errors = _load(report, tmp_path)
    assert errors == []
    assert '<table class="sortable" id="leaderboard">' in dom
    assert dom.count("<tr>") > 10 and "solver:heuristic" in dom
    assert "<title>MM-NP-Bench leaderboard</title>" in dom  # no injected script changed it
    # error bars: drawn as elements of the inline plots, in the category bars and the level lines
    plots = dom.split('id="plots"', 1)[1].split("</div>", 1)[0]
    assert len(re.findall(r'<g id="errorbar-\d+"', plots)) >= 4
    level_plot = dom.split("<figcaption>tsp by level</figcaption>", 1)[1].split("</figure>", 1)[0]
    bar = re.search(r'<g id="errorbar-\d+">(.*?)</g>', level_plot, re.S)
    assert bar and "<path" in bar.group(1)
    # sorting: click "Overall QR" twice (descending) and read the top row's model
    probe = page.replace("</body>", "<script>var th=[...document.querySelectorAll('#leaderboard th')]"
                         ".find(h=>h.textContent==='Overall QR');th.click();th.click();"
                         "document.title='top:'+document.querySelector('#leaderboard tbody td').textContent;</script>"
                         "</body>")
    sorted_page = tmp_path / "sorted.html"
    sorted_page.write_text(probe)
    dom, errors = _load(sorted_page, tmp_path)
    assert errors == [] and "<title>top:solver:heuristic</title>" in dom


def test_cli_leaderboard(results_dir, tmp_path):
    out = tmp_path / "board.html"
    result = runner.invoke(app, ["leaderboard", str(results_dir), "--format", "html", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("<!DOCTYPE html>")
    result = runner.invoke(app, ["leaderboard", str(results_dir / "solver_heuristic"), "--modality", "text"])
    assert result.exit_code == 0 and "| solver:heuristic | text |" in result.stdout and "| image |" not in result.stdout
    result = runner.invoke(app, ["leaderboard", str(tmp_path / "nothing")])
    assert result.exit_code == 2 and "does not exist" in result.output


def _cli_has(option: str) -> bool:
    import typer.main

    command = typer.main.get_command(app).commands["leaderboard"]
    return any(option in p.opts for p in command.params)


@pytest.mark.skipif(not _cli_has("--mix-datasets"), reason="`mmnp leaderboard` does not yet take the new options")
def test_cli_leaderboard_options(results_dir, tmp_path):
    other = _variant(results_dir / "solver_random", tmp_path, "other",
                     lambda r: r["dataset"].update(benchmark_hash=OTHER_HASH))
    result = runner.invoke(app, ["leaderboard", str(results_dir / "solver_heuristic"), str(other), "--mix-datasets",
                                 "--stderr", "--include-incomplete"])
    assert result.exit_code == 0, result.output
    assert "MIXED datasets" in result.stdout and " ± " in result.stdout
    result = runner.invoke(app, ["leaderboard", str(results_dir), "--out", str(tmp_path)])
    assert result.exit_code == 2 and "is a folder" in result.output and "Traceback" not in result.output


def test_image_scores_by_picture_kind_in_every_format(results_dir, tmp_path):
    results = _results(results_dir / "solver_random")
    image = results["metrics"]["image"]
    kinds = image["picture_kinds"]
    assert {"drawing", "table", "chart"} <= set(kinds)  # easy and medium pictures of the ten tasks
    md = make_leaderboard([results_dir / "solver_random"])
    rows = {r["scope"]: r for r in _table(md, "Image scores by picture kind")}
    over = lambda groups: sum(g["sr"] * g["instances"] for g in groups.values()) / sum(  # noqa: E731
        g["instances"] for g in groups.values())
    assert rows["all instances"]["image SR"] == _pct(over(image["tasks"]))
    for kind, block in kinds.items():
        assert rows["all instances"][f"{kind} SR"] == _pct(over(block["tasks"]))
        assert rows["all instances"][f"{kind} n"] == str(block["overall"]["instances"])
        for task, g in block["tasks"].items():
            assert rows[task][f"{kind} QR"] == _pct(g["qr"]) and rows[task]["image QR"] == _pct(image["tasks"][task]["qr"])
    assert rows["knapsack"]["drawing SR"] == "" and rows["knapsack"]["table n"] == "4"  # none drawn: blank
    mixed = {cell for cell in image["task_difficulty"] if sum(cell in b["task_difficulty"] for b in kinds.values()) > 1}
    assert {s for s in rows if "/" in s} == mixed  # a level's row only where it mixes kinds
    csv_rows = [r for r in csv.DictReader(io.StringIO(make_leaderboard([results_dir / "solver_random"],
                                                                               format="csv")))
                if r["scope"] == "picture_kind"]
    got = {r["name"]: float(r["SR"]) for r in csv_rows}
    assert got["table/knapsack"] == pytest.approx(100 * kinds["table"]["tasks"]["knapsack"]["sr"], abs=0.05)
    assert got["drawing"] == pytest.approx(100 * over(kinds["drawing"]["tasks"]), abs=0.05)
    page = tmp_path / "board.html"
    make_leaderboard([results_dir / "solver_random"], format="html", out=page, browser_samples=0)
    assert 'id="by-kind"' in page.read_text() and "Image SR and QR by picture kind</figcaption>" in page.read_text()
    text_only = make_leaderboard([results_dir / "solver_random"], modality="text")
    assert "Image scores by picture kind" not in text_only


def test_delivery_of_every_image_sample_is_shown(results_dir, tmp_path):
    def unchecked(r):
        r["image_probe"] = {"status": "unchecked", "samples": {"passed": 30, "unchecked": 10},
                            "detail": "10 of 40 image samples were never checked"}

    def legacy(r):
        r["image_probe"] = {"status": "passed", "detail": "usage.prompt_tokens 900 with the image, 100 without"}

    def endpoint(r):
        r["config"]["endpoint"] = {"base_url": "http://gpu-7:8000/v1", "model": "qwen"}

    md = make_leaderboard([_variant(results_dir / "solver_random", tmp_path, "part", unchecked)])
    rows = {r["modality"]: r["model"] for r in _table(md, "Leaderboard")}
    assert rows["image"] == "solver:random (image delivery unchecked: 10 of 40 image samples were never checked)"
    assert rows["text"] == "solver:random"
    assert _table(md, "Runs")[0]["image delivery"] == "unchecked (30 passed, 10 unchecked)"
    old = _table(make_leaderboard([_variant(results_dir / "solver_random", tmp_path, "old", legacy)]), "Runs")
    assert old[0]["image delivery"].startswith("passed (one probe per run, by an older mmnp")
    served = _table(make_leaderboard([_variant(results_dir / "solver_random", tmp_path, "ep", endpoint)]),
                    "Runs")
    assert served[0]["endpoint"] == "http://gpu-7:8000/v1"


def test_a_huge_model_name_is_cut_in_every_report(results_dir, tmp_path):
    huge = "m" * 50_000_000

    def rename(r):
        r["model"] = huge
        r["dataset"]["preset"] = "p" * 1_000_000

    run = _variant(results_dir / "solver_random", tmp_path, "huge", rename)
    page = tmp_path / "board.html"
    make_leaderboard([run], format="html", out=page, browser_samples=1)
    assert page.stat().st_size < 3_000_000  # was over 1 GB: the name in every row, plot and sample
    text = page.read_text()
    assert "... [cut: 50,000,000 characters]" in text and "m" * 201 not in text
    for fmt in ("md", "csv"):
        out = make_leaderboard([run], format=fmt)
        assert len(out) < 1_000_000 and "[cut: 50,000,000 characters]" in out and "p" * 201 not in out


def test_an_absurd_task_name_is_refused_with_a_line(results_dir, tmp_path):
    def absurd(r):
        r["metrics"]["text"]["tasks"]["t" * 5000] = r["metrics"]["text"]["tasks"]["tsp"]

    run = _variant(results_dir / "solver_random", tmp_path, "absurd", absurd)
    with pytest.raises(DataError, match="metrics.text.tasks has a name of 5,000 characters"):
        make_leaderboard([run])


def test_markdown_shows_html_as_text(results_dir, tmp_path):
    def scripted(r):
        r["timestamp"] = "<script>alert(1)</script>"
        cells = r["metrics"]["text"]["task_difficulty"]
        cells["tsp/<b>bold</b>\nnext"] = cells.pop("tsp/medium")

    runs = collect([results_dir / "hostile"]) + _as_read(results_dir / "solver_random", scripted)
    md = render_markdown(runs)
    assert "<script>" not in md and "<img" not in md and "<b>" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md and "&lt;img src=x onerror=" in md
    by_task = _table(md, "By task")
    assert any(r["model"].startswith("&lt;img src=x") for r in by_task)
    assert all(line.count("|") >= 3 for line in md.splitlines() if line.startswith("| "))  # no row broken in two


@pytest.mark.parametrize("edit, named", [
    (lambda r: r["metrics"]["text"]["overall"].update(sr=1.7), "metrics.text.overall.sr is '1.7', not a share in [0, 1]"),
    (lambda r: r["metrics"]["text"]["overall"].update(qr=-3), "metrics.text.overall.qr is -3, below 0"),
    (lambda r: r["metrics"]["text"]["tasks"]["tsp"].update(instances=-4), "metrics.text.tasks.tsp.instances is -4"),
    (lambda r: r["metrics"]["image"]["overall"]["pass_at_k"].update({"7": 1.0}),
     "metrics.image.overall.pass_at_k has a k outside 1..3"),
    (lambda r: r["metrics"]["text"]["overall"].update(distinct=4.0), "distinct is 4.0, more than the run's 3 samples"),
    (lambda r: r["metrics"]["text"]["overall"].update(rounds={"1": {"sr": 1.7, "qr": 0.5}}),
     "metrics.text.overall.rounds is not SR and QR per round"),
    (lambda r: r["metrics"].update(probe={"overall": {"recognition_accuracy": 1.7, "field_f1": 0.5, "instances": 2}}),
     "metrics.probe.overall lacks recognition_accuracy and field_f1 as shares in [0, 1]"),
])
def test_impossible_figures_are_refused_never_ranked(results_dir, tmp_path, edit, named):
    bad = _variant(results_dir / "solver_random", tmp_path, "bad", edit)
    with pytest.raises(DataError, match=re.escape(named)):
        make_leaderboard([bad])


def test_a_category_a_run_lacks_is_no_bar_at_zero(results_dir, tmp_path, monkeypatch):
    """In a mixed board a run without a category has no bar there (a bar at 0 reads as a measured failure)."""
    from matplotlib.axes import Axes

    bars, real = [], Axes.bar

    def bar(self, x, height, *args, **kwargs):
        bars.append((kwargs.get("label"), list(height)))
        return real(self, x, height, *args, **kwargs)

    def graph_only(r):
        r["model"] = "graph-only"
        for block in r["metrics"].values():
            block["categories"] = {"graph": block["categories"]["graph"]}

    partial = _as_read(results_dir / "solver_heuristic", graph_only)
    monkeypatch.setattr(Axes, "bar", bar)
    render_html(partial + collect([results_dir / "solver_random"]), browser_samples=0)
    from mmnp.core import CATEGORIES

    graph = CATEGORIES.index("graph")
    drawn = [heights for label, heights in bars  # the category plot's bars: each category, then overall
             if label and label.startswith("graph-only") and len(heights) == len(CATEGORIES) + 1]
    assert len(drawn) == 4, bars  # SR and QR, text and image
    for heights in drawn:
        assert heights[graph] > 0 and heights[-1] > 0
        assert all(math.isnan(h) for i, h in enumerate(heights[:-1]) if i != graph), heights


def test_the_sample_browser_shows_only_the_instances_a_run_answered(tmp_path):
    data, out = tmp_path / "data", tmp_path / "results"
    generate = ["generate", "--tasks", "knapsack", "--difficulty", "easy", "--count", "2", "--no-optimal",
                "--out", str(data)]
    assert runner.invoke(app, [*generate, "--seed", "0"]).exit_code == 0
    evaluated = runner.invoke(app, ["eval", "--model", "solver:heuristic", "--data", str(data), "--difficulty", "easy",
                                    "--output-path", str(out)])
    assert evaluated.exit_code == 0, evaluated.output
    page = render_html(collect([out]), browser_samples=2)
    assert page.count('alt="instance"') == 2 and "has changed since the run" not in page
    assert runner.invoke(app, [*generate, "--seed", "5", "--overwrite"]).exit_code == 0  # other instances, same ids
    page = render_html(collect([out]), browser_samples=2)
    assert 'alt="instance"' not in page and "has changed since the run" in page
    shutil.rmtree(data)
    page = render_html(collect([out]), browser_samples=2)
    assert 'alt="instance"' not in page and f"its dataset {data} is not there" in page
    assert page.count('<span class="ok">stored verdict, not verified again: feasible') == 2  # said so, not passed off


def test_a_run_records_its_dataset_by_absolute_path(small_dataset, tmp_path, monkeypatch):
    """So that its report finds the dataset from wherever it is made."""
    monkeypatch.chdir(small_dataset.parent)
    out = tmp_path / "r"
    evaluated = runner.invoke(app, ["eval", "--model", "solver:heuristic", "--data", small_dataset.name, "--tasks",
                                    "knapsack", "--difficulty", "easy", "--output-path", str(out)])
    assert evaluated.exit_code == 0, evaluated.output
    assert _results(out / "solver_heuristic")["dataset"]["path"] == str(small_dataset)
    monkeypatch.chdir(tmp_path)
    assert render_html(collect([out]), browser_samples=1).count('alt="instance"') == 1


# -- a run's numbers are what its samples earn, on its data -------------------------------------------

def _run(out: Path, *args: str) -> Path:
    """`mmnp eval ARGS --output-path OUT`, which must succeed; its model folder."""
    result = runner.invoke(app, ["eval", *args, "--output-path", str(out)])
    assert result.exit_code == 0, result.output
    return next(p for p in out.iterdir() if p.is_dir())


def test_an_edited_results_json_is_refused_or_shown_as_its_samples_earn_it(results_dir, small_dataset, tmp_path):
    forged = _variant(results_dir / "solver_random", tmp_path, "forged",
                      lambda r: r["metrics"]["text"]["overall"].update(sr=1.0, qr=0.95))
    earned = _results(results_dir / "solver_random")["metrics"]["text"]["overall"]
    md = make_leaderboard([forged, results_dir / "solver_heuristic"])
    assert {r["model"] for r in _table(md, "Leaderboard")} == {"solver:heuristic"}
    assert (f"left out solver:random ({forged}): {forged / 'results.json'}: metrics.text.overall.qr is 0.95, its "
            f"samples give {earned['qr']:.6g}; the file was edited or belongs to other samples; rerun its `mmnp eval` "
            "command with --rescore to rewrite results.json from its samples") in md

    md = make_leaderboard([forged, results_dir / "solver_heuristic"], include_unverified=True)
    row = next(r for r in _table(md, "Leaderboard") if r["modality"] == "text" and "random" in r["model"])
    assert row["model"] == "solver:random (UNVERIFIED: results.json disagrees with its samples)"
    assert (row["Overall SR"], row["Overall QR"]) == (_pct(earned["sr"]), _pct(earned["qr"]))  # never 100.0 / 95.0
    runs = {r["model"]: r for r in _table(md, "Runs")}
    assert runs["solver:random"]["verified"] == "UNVERIFIED: results.json disagrees with its samples"
    assert runs["solver:heuristic"]["verified"] == f"yes: every answer verified again on its dataset {small_dataset}"
    said = runner.invoke(app, ["leaderboard", str(forged)]).output
    assert "(--include-unverified shows it marked, with the numbers its samples earn)" in " ".join(said.split())
    shown = runner.invoke(app, ["leaderboard", str(forged), "--include-unverified"])
    assert shown.exit_code == 0 and "solver:random (UNVERIFIED: results.json disagrees with its samples)" in shown.output


def test_a_run_without_its_samples_is_not_ranked(results_dir, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(results_dir / "solver_random", bare)
    (bare / "samples.jsonl").unlink()
    md = make_leaderboard([bare, results_dir / "solver_heuristic"])
    assert {r["model"] for r in _table(md, "Leaderboard")} == {"solver:heuristic"}
    assert (f"left out solver:random ({bare}): {bare / 'samples.jsonl'}: not there, so results.json's numbers cannot "
            "be recomputed") in md
    md = make_leaderboard([bare], include_unverified=True)
    assert {r["model"] for r in _table(md, "Leaderboard")} == {"solver:random (UNVERIFIED: no samples.jsonl)"}


def test_a_run_that_answered_nothing_is_told_to_run_again(little, tmp_path, capsys):
    """An endpoint down from the first request: eval writes results.json (complete: false) and no sample;
    the leaderboard says so and asks for the run again, not for a results folder kept whole."""
    result = runner.invoke(app, ["eval", "--model", "openai:fake", "--base-url", "http://127.0.0.1:9/v1", "--data",
                                 str(little), "--max-retries", "0", "--output-path", str(tmp_path / "down")])
    assert result.exit_code == 1 and "the first request" in result.output, result.output
    folder = tmp_path / "down" / "openai_fake"
    line = _refused([folder], capsys)
    assert (f"left out openai:fake ({folder}): {folder / 'samples.jsonl'}: not there: the run answered no sample "
            "(incomplete: 8 instances without samples); run the same `mmnp eval` command again") in line
    assert "keep a results folder whole" not in line and "--include-unverified" not in line
    (folder / "samples.jsonl").touch()  # an empty log, shown with both flags: a report of "(no results)", exit 0
    shown = runner.invoke(app, ["leaderboard", str(folder), "--include-unverified", "--include-incomplete"])
    assert shown.exit_code == 1 and "it answered no sample, so it has no figure to show" in " ".join(
        shown.output.split()), shown.output


def test_a_cut_off_last_sample_is_blamed_on_samples_jsonl_and_a_rerun_repairs_it(results_dir, small_dataset,
                                                                                  tmp_path, capsys):
    """A samples.jsonl whose last line is cut short (an interrupted write, a truncated copy) lacks that sample:
    the line left out names that file and line, not results.json, and the rerun it asks for ranks the run again."""
    shutil.copytree(results_dir / "solver_random", tmp_path / "solver_random")
    log = tmp_path / "solver_random" / "samples.jsonl"
    lines = len(log.read_text().splitlines())
    with log.open("r+b") as f:
        f.truncate(log.stat().st_size - 100)
    err = _refused([tmp_path / "solver_random"], capsys)
    assert (f"{log}, line {lines}: cut short, the file ending inside it (an interrupted write or a truncated copy), "
            "so its sample is not counted (results.json's ") in err
    assert ("run the same `mmnp eval` command again (not --rescore): it drops that line and asks again every sample "
            "the log lacks") in err and "the file was edited" not in err
    md = make_leaderboard([tmp_path / "solver_random"], include_unverified=True, include_incomplete=True)
    assert {r["model"] for r in _table(md, "Leaderboard")} == {
        "solver:random (UNVERIFIED: samples.jsonl cut short) (incomplete: 1 instance without samples)"}
    _eval("solver:random", small_dataset, tmp_path)  # the same command as made it
    assert {r["model"] for r in _table(make_leaderboard([tmp_path / "solver_random"]), "Leaderboard")} == {
        "solver:random"}


def test_the_exit_status_says_whether_any_run_is_left_to_rank(results_dir, little, tmp_path):
    """With every run left out nothing is rendered or written and the command fails (exit 1) after the lines
    saying why, so a script can tell; with one run left to rank it succeeds, the others' lines in the report."""
    bare = tmp_path / "bare"
    shutil.copytree(results_dir / "solver_random", bare)
    (bare / "samples.jsonl").unlink()
    page = tmp_path / "board.html"
    for extra in ([], ["--format", "csv"], ["--format", "html", "--out", str(page)]):
        result = runner.invoke(app, ["leaderboard", str(bare), *extra])
        assert result.exit_code == 1 and result.stdout == "", (extra, result.output)
        err = result.stderr
        assert f"not shown: left out solver:random ({bare}): {bare / 'samples.jsonl'}: not there" in err
        assert err.endswith('error: no run left to rank (1 read): each is left out; the "not shown" lines above say '
                            "why and what to do\n")
    assert not page.exists()
    result = runner.invoke(app, ["leaderboard", str(bare), str(results_dir / "solver_heuristic")])
    assert result.exit_code == 0 and "| solver:heuristic | text |" in result.stdout
    assert f"left out solver:random ({bare})" in result.stdout
    # --modality image: the one run with image scores left out, the one left to rank without any
    text_only = _run(tmp_path / "text", "--model", "solver:heuristic", "--data", str(little), "--modality", "text")
    result = runner.invoke(app, ["leaderboard", str(bare), str(text_only), "--modality", "image"])
    assert result.exit_code == 1 and result.stdout == "", result.output
    assert ("error: no run left to rank (2 read): each is left out or has no image scores (without --modality those "
            "are ranked)") in result.stderr


def test_an_edited_sample_is_caught_and_the_browser_shows_its_verdict_now(results_dir, small_dataset, tmp_path,
                                                                         capsys):
    """One infeasible answer's record edited to feasible with ratio 5, results.json recomputed from the
    edited log as a careful forger would: the answer, verified again on the dataset, says otherwise."""
    from mmnp.dataset import select_instances
    from mmnp.evaluation.runner import EvalConfig, compute_results
    from mmnp.samplelog import SampleLog

    run = tmp_path / "edited"
    shutil.copytree(results_dir / "solver_random", run)
    edited: list[str] = []

    def promote(r: dict) -> None:
        if not edited and r["modality"] == "text" and r["parsed"] and not r["feasible"] and not r["failed"]:
            edited.append(r["key"])
            r.update(feasible=True, objective=1, ratio=5.0, violations=[])

    _edit_samples(run, promote)
    instances = select_instances("all", ["easy", "medium"], data=small_dataset).instances
    results = _results(run)
    results.update(compute_results(SampleLog(run / "samples.jsonl"), instances,
                                   EvalConfig("solver:random", ("text", "image"), 3)))
    (run / "results.json").write_text(json.dumps(results))
    (key,) = edited

    assert (f"left out solver:random ({run}): {run / 'samples.jsonl'}: sample {key} records feasible true, but its "
            f"answer verifies to false on its dataset {small_dataset}: the log was edited") in _refused([run], capsys)
    page = render_html(collect([run]), browser_samples=40, include_unverified=True)
    summary = page.split(f"solver:random · {key} · ", 1)[1].split("</summary>", 1)[0]
    assert summary.startswith('<span class="bad">infeasible') and "ratio 0.000" in summary and "5.000" not in summary


def test_a_run_generated_on_the_fly_is_verified_on_its_instances_made_again(tmp_path, capsys):
    folder = _run(tmp_path / "fly", "--model", "solver:random", "--tasks", "knapsack,tsp", "--difficulty", "easy",
                  "--count", "2", "--samples", "2", "--temperature", "0.7")
    runs = _table(make_leaderboard([folder]), "Runs")
    assert runs[0]["verified"] == "yes: every answer verified again on its instances generated again from seed 0 by " \
                                  f"mmnp {_results(folder)['mmnp_version']}"
    _edit_samples(folder, lambda r: r.update(ratio=r["ratio"] + 0.5) if r["sample"] == 1 else None)
    err = _refused([folder], capsys)
    assert "records ratio" in err and "on its instances generated again from seed 0" in err


def test_a_few_instances_cannot_pass_for_the_whole_dataset(results_dir, small_dataset, tmp_path):
    """A run on 2 instances with the dataset block of a run on all 40 copied in: with the dataset at hand its
    samples are counted on it; without, against another run on the same dataset."""
    few = _run(tmp_path / "few", "--model", "solver:heuristic", "--data", str(small_dataset), "--tasks", "knapsack",
               "--difficulty", "easy,medium", "--limit", "1", "--modality", "both", "--samples", "3",
               "--temperature", "0.7")
    whole = _results(results_dir / "solver_heuristic")["dataset"]
    forged = _variant(few, tmp_path, "forged", lambda r: r.update(dataset=whole))
    md = make_leaderboard([forged, results_dir / "solver_random"])
    assert {r["model"] for r in _table(md, "Leaderboard")} == {"solver:random"}
    assert f"left out solver:heuristic ({forged}): {forged / 'results.json'}: missing_instances is 0, its samples " \
           "give 76" in md

    def moved(r: dict) -> None:
        r["dataset"]["path"] = str(tmp_path / "moved")

    away, full = (_variant(src, tmp_path, name, moved) for src, name in ((forged, "away"),
                                                                        (results_dir / "solver_random", "full")))
    md = make_leaderboard([away, full])
    assert {r["model"] for r in _table(md, "Leaderboard")} == {_unchecked("solver:random")}
    assert f"left out solver:heuristic ({away}): {away}: its samples answer 2 instances, {full} answers 40" in md
    assert f"answers not verified again, their data not being at hand: solver:random (its dataset {tmp_path / 'moved'} " \
           "is not there)" in md
    assert _table(md, "Runs")[0]["verified"].startswith("numbers recomputed from samples.jsonl; answers not verified")


def test_without_its_data_a_run_is_counted_against_its_dataset_block(small_dataset, tmp_path, capsys):
    """A run on 1 instance whose dataset block says its selection holds 2 (the data moved away): the one
    its samples do not answer is missing, so results.json's complete run is not what its samples give."""
    one = _run(tmp_path / "one", "--model", "solver:heuristic", "--data", str(small_dataset), "--tasks", "knapsack",
               "--difficulty", "easy", "--limit", "1")

    def claims_two(r: dict) -> None:
        r["dataset"]["selection"]["instances"] = 2
        r["dataset"]["path"] = str(tmp_path / "moved")

    two = _variant(one, tmp_path, "two", claims_two)
    assert (f"left out solver:heuristic ({two}): {two / 'results.json'}: missing_instances is 0, its samples give 1"
            in _refused([two], capsys))
    other_task = _variant(one, tmp_path, "other_task", lambda r: claims_two(r) or r["dataset"]["selection"].update(
        tasks=["tsp"], instances=1))
    assert f"{other_task / 'results.json'}: missing_instances is 0, its samples give 1" in _refused([other_task], capsys)


@pytest.fixture(scope="module")
def protocols(small_dataset, tmp_path_factory) -> dict[str, Path]:
    """solver:random on the whole small dataset, text only, at best of 1 and of 10 samples, and at 3
    samples with up to 2 answers each (--rounds 2)."""
    root = tmp_path_factory.mktemp("protocols")
    common = ["--model", "solver:random", "--data", str(small_dataset), "--difficulty", "easy,medium",
              "--temperature", "0.7"]
    return {"one": _run(root / "one", *common, "--samples", "1"), "ten": _run(root / "ten", *common, "--samples", "10"),
            "fed": _run(root / "fed", *common, "--samples", "3", "--rounds", "2")}


def test_runs_under_other_protocols_are_ranked_apart(results_dir, protocols):
    """Best of 1, 3 or 10 samples, and one answer or several with the verifier's feedback, are other
    measurements: never one ranking. The Runs table says n and rounds."""
    one, ten, fed = protocols["one"], protocols["ten"], protocols["fed"]
    md = make_leaderboard([results_dir / "solver_random", one, ten, fed])
    heads = list(_sections(md))
    assert len(heads) == 4 and len({h.split(" · ")[0] for h in heads}) == 1  # one dataset, four protocols
    assert {h.split(" · ")[1] for h in heads} == {
        "best of 3 samples, one answer per sample (temperature 0.7, top-p 1, max tokens 4096)",
        "best of 1 sample, one answer per sample (temperature 0.7, top-p 1, max tokens 4096)",
        "best of 10 samples, one answer per sample (temperature 0.7, top-p 1, max tokens 4096)",
        "best of 3 samples, up to 2 answers per sample with the verifier's feedback (--rounds 2) (temperature 0.7, "
        "top-p 1, max tokens 4096)"}
    runs = [r for text in _sections(md).values() for r in _table(text, "Runs")]
    assert {(r["folder"], r["n"], r["rounds"]) for r in runs} == {
        (str(results_dir / "solver_random"), "3", "1"), (str(one), "1", "1"), (str(ten), "10", "1"), (str(fed), "3", "2")}
    assert "nan" not in md
    mixed = make_leaderboard([one, ten], mix_datasets=True)  # mixing datasets never mixes protocols
    assert len(_sections(mixed)) == 2


def test_csv_pass_at_k_goes_by_k_with_blanks_where_a_run_has_no_figure(protocols):
    rows = list(csv.DictReader(io.StringIO(make_leaderboard([protocols["one"], protocols["ten"]], format="csv"))))
    columns = list(rows[0])
    passes = [c for c in columns if re.fullmatch(r"pass@\d+", c)]
    assert passes == [f"pass@{k}" for k in range(1, 11)]  # by k: pass@2 before pass@10, side by side
    assert columns.index(passes[-1]) - columns.index(passes[0]) == 9
    assert {(r["n"], r["rounds"]) for r in rows} == {("1", "1"), ("10", "1")}
    assert {r["pass@10"] for r in rows if r["n"] == "1"} == {""}  # a figure the run has not: blank
    assert {r["instances"] for r in rows if r["scope"] == "overall"} == {"40"}  # counts stay counts, not 40.0


def test_two_subsets_of_one_dataset_are_told_apart_when_mixed(small_dataset, tmp_path):
    folders = [_run(tmp_path / task, "--model", "solver:heuristic", "--data", str(small_dataset), "--tasks", task,
                    "--difficulty", "easy,medium", "--limit", "1") for task in ("knapsack", "tsp")]
    md = make_leaderboard(folders, mix_datasets=True)
    labels = {r["dataset"] for r in _table(md, "Leaderboard")}
    assert len(labels) == 2 and all(re.fullmatch(r"[0-9a-f]{12}/[0-9a-f]{8} subset [0-9a-f]{8}", x) for x in labels)


# -- one results folder, several runs into it: only the samples of the run results.json describes count --

@pytest.fixture(scope="module")
def little(tmp_path_factory) -> Path:
    """Knapsack and TSP, two instances per difficulty (easy, medium), with pictures, no exact references."""
    data = tmp_path_factory.mktemp("little") / "data"
    made = runner.invoke(app, ["generate", "--tasks", "knapsack,tsp", "--difficulty", "easy,medium", "--count", "2",
                               "--no-optimal", "--seed", "0", "--out", str(data)])
    assert made.exit_code == 0, made.output
    return data


def test_earlier_runs_into_the_folder_do_not_refuse_a_run_whose_data_moved(little, tmp_path):
    """--tasks knapsack then --tasks tsp, the whole data then --limit 1, --difficulty easy then medium, each
    into one folder, the data then moved away: each last run is counted on its own selection's samples."""
    data = tmp_path / "data"
    shutil.copytree(little, data)
    common = ["--model", "solver:random", "--data", str(data), "--samples", "2", "--temperature", "0.7"]
    for name, first, second in (("tasks", ["--tasks", "knapsack"], ["--tasks", "tsp"]),
                                ("limit", [], ["--limit", "1"]),
                                ("levels", ["--difficulty", "easy"], ["--difficulty", "medium"])):
        _run(tmp_path / name, *common, *first)
        _run(tmp_path / name, *common, *second)
    data.rename(tmp_path / "moved")
    folders = [tmp_path / name / "solver_random" for name in ("tasks", "limit", "levels")]
    md = make_leaderboard(folders)
    assert "left out" not in md and len(_sections(md)) == 3
    assert {r["verified"][:33] for text in _sections(md).values() for r in _table(text, "Runs")} == {
        "numbers recomputed from samples.j"}
    forged = _variant(folders[1], tmp_path, "forged", lambda r: r["metrics"]["text"]["overall"].update(sr=1.0))
    rows = list(csv.DictReader(io.StringIO(make_leaderboard([forged], format="csv", include_unverified=True))))
    assert {r["instances"] for r in rows if r["scope"] == "overall"} == {"4"}  # its selection's, not the log's 8


def test_a_run_without_probe_after_one_with_it_is_ranked(little, tmp_path):
    """--probe transcribe, then the same run without it into the same folder (and --rescore): the log's probe
    samples are the first run's; results.json, without a probe block, counts none."""
    common = ["--model", "solver:random", "--data", str(little), "--modality", "image", "--tasks", "knapsack"]
    _run(tmp_path / "r", *common, "--probe", "transcribe")
    folder = _run(tmp_path / "r", *common)
    assert "probe" not in _results(folder)["metrics"]
    for extra in ((), ("--rescore",)):
        _run(tmp_path / "r", *common, *extra)
        md = make_leaderboard([folder])
        assert "left out" not in md
        assert _table(md, "Runs")[0]["verified"] == f"yes: every answer verified again on its dataset {little}"


def test_a_later_run_cut_short_in_the_folder_does_not_refuse_the_finished_one(little, tmp_path):
    """A complete --limit 1 run, then a whole run against a failing endpoint killed before it wrote
    results.json (here: the finished run's results.json put back): the log's failed calls are not its own."""
    from fake_openai import FakeOpenAI

    down: list[bool] = []
    every_other = lambda number, text: (500, 0.0) if down and number % 2 else None  # noqa: E731
    with FakeOpenAI(lambda text, png: "Answer: [0]", fault=every_other) as server:
        common = ["--model", "openai:fake", "--base-url", server.url, "--data", str(little), "--max-retries", "0",
                  "--model-args", "backoff=0.01", "--max-fail-rate", "1"]
        folder = _run(tmp_path / "r", *common, "--limit", "1")
        finished = (folder / "results.json").read_text()
        down.append(True)
        _run(tmp_path / "r", *common)  # every other call fails
        (folder / "results.json").write_text(finished)
    assert any(r["failed"] for r in map(json.loads, (folder / "samples.jsonl").read_text().splitlines()))
    md = make_leaderboard([folder])
    assert "left out" not in md and {r["model"] for r in _table(md, "Leaderboard")} == {"openai:fake"}


def test_runs_with_other_sample_shaping_options_are_ranked_apart_and_cut_answers_marked(little, tmp_path):
    """`--model-args` options that change what a sample is (a picture's detail, the response cap) make
    another protocol, as max tokens does; a run whose answers were cut at the cap says so on its row."""
    from fake_openai import FakeOpenAI

    with FakeOpenAI(lambda text, png: "Answer: [0, 1]") as server:
        common = ["--model", "openai:fake", "--base-url", server.url, "--data", str(little), "--difficulty", "easy"]
        plain = _run(tmp_path / "plain", *common)
        low = _run(tmp_path / "low", *common, "--model-args", "image_detail=low")
        cut = _run(tmp_path / "cut", *common, "--model-args", "max_response_chars=8")
    md = make_leaderboard([plain, low, cut])
    heads = list(_sections(md))
    assert len(heads) == 3
    assert sum('backend options {"image_detail": "low"}' in h for h in heads) == 1
    assert sum('backend options {"max_response_chars": 8}' in h for h in heads) == 1
    shown = [r["model"] for text in _sections(md).values() for r in _table(text, "Leaderboard")]
    assert sorted(shown) == ["openai:fake", "openai:fake",
                             "openai:fake (answers cut: 4 at the response size cap (max_response_chars))"]


def test_pictures_drawn_again_as_other_bytes_still_have_their_answers_verified(tmp_path, monkeypatch, capsys):
    """A run made on the fly, read where the renderer draws other bytes (another Pillow or fonts): its
    messages cannot be checked, its answers are verified, and an edited verdict is still caught."""
    import mmnp.dataset

    folder = _run(tmp_path / "fly", "--model", "solver:random", "--tasks", "knapsack", "--difficulty", "easy",
                  "--count", "2", "--modality", "both", "--samples", "2", "--temperature", "0.7")
    monkeypatch.setattr(mmnp.dataset, "draw", lambda *args, **kwargs: b"a picture drawn by another Pillow")
    md = make_leaderboard([folder])
    assert "left out" not in md
    assert _table(md, "Runs")[0]["verified"].startswith(
        "yes: every answer verified again on its instances generated again from seed 0 by mmnp ")
    assert "the messages of 4 sample(s) not checked: their pictures, drawn again here, are not byte for byte" in md
    _edit_samples(folder, lambda r: r.update(ratio=r["ratio"] + 0.5) if r["modality"] == "image" else None)
    assert "records ratio" in _refused([folder], capsys)


def test_samples_made_on_other_data_are_shown_with_the_numbers_they_earn(little, tmp_path):
    """A run's results.json given another dataset's block (same ids, other instances) and a better score: left
    out, and shown when asked with what its own samples earn, never the claim."""
    other = tmp_path / "other"
    made = runner.invoke(app, ["generate", "--tasks", "knapsack", "--difficulty", "easy", "--count", "2",
                               "--no-optimal", "--seed", "5", "--out", str(other)])
    assert made.exit_code == 0, made.output
    common = ["--model", "solver:random", "--tasks", "knapsack", "--difficulty", "easy", "--temperature", "0.7",
              "--samples", "2"]
    run = _run(tmp_path / "run", *common, "--data", str(little))
    block = _results(_run(tmp_path / "there", *common, "--data", str(other)))["dataset"]
    earned = _results(run)["metrics"]["text"]["overall"]
    forged = _variant(run, tmp_path, "forged", lambda r: r.update(dataset=block) or r["metrics"]["text"][
        "overall"].update(sr=1.0, qr=1.0))
    md = make_leaderboard([forged], include_unverified=True)
    assert "UNVERIFIED: samples not made on its dataset" in md
    row = next(r for r in _table(md, "Leaderboard") if r["modality"] == "text")
    assert (row["Overall SR"], row["Overall QR"]) == (_pct(earned["sr"]), _pct(earned["qr"]))


def _forged_with_honest_verdicts(data: Path, tmp_path: Path, modalities: tuple[str, ...]) -> tuple[Path, Path, dict]:
    """solver:heuristic's run on `data`, and solver:random's with the heuristic's verdicts in its samples and
    the results its samples then give, by mmnp's own code (not yet written: the caller edits them first)."""
    from mmnp.dataset import select_instances
    from mmnp.evaluation.runner import VERDICT_FIELDS, EvalConfig, compute_results
    from mmnp.samplelog import SampleLog

    common = ["--data", str(data), "--modality", "both" if len(modalities) > 1 else modalities[0], "--samples", "1"]
    honest = _run(tmp_path / "honest", "--model", "solver:heuristic", *common)
    forged = _run(tmp_path / "forged", "--model", "solver:random", *common)
    verdicts = {r["key"]: r for r in map(json.loads, (honest / "samples.jsonl").read_text().splitlines())}
    _edit_samples(forged, lambda r: r.update({name: verdicts[r["key"]][name] for name in VERDICT_FIELDS}))
    results = _results(forged)
    results.update(compute_results(SampleLog(forged / "samples.jsonl"), select_instances(
        "knapsack,tsp", ["easy", "medium"], data=data).instances, EvalConfig("solver:random", modalities, 1)))
    return honest, forged, results


@pytest.mark.parametrize("dodge", [
    lambda r, gone: r["dataset"].update(path=str(gone)),
    lambda r, gone: r["dataset"].update(path="hf://someone/mmnp-data"),
    lambda r, gone: r["config"].update(messages_template="mmnp-chat-0 (an older mmnp)"),
], ids=["moved", "hub", "template"])
def test_a_forged_run_cannot_dodge_its_data_by_its_dataset_path_or_template(little, tmp_path, dodge):
    """solver:random's answers with solver:heuristic's verdicts, results.json recomputed from them by mmnp's own
    code, its data named where it is not (or its messages template another): data of the same hashes, opened
    for another run on the board, verifies its answers all the same."""
    honest, forged, results = _forged_with_honest_verdicts(little, tmp_path, ("text",))
    dodge(results, tmp_path / "gone")
    (forged / "results.json").write_text(json.dumps(results))
    md = make_leaderboard([forged, honest])
    assert {r["model"] for r in _table(md, "Leaderboard")} == {"solver:heuristic"}
    assert f"left out solver:random ({forged}): {forged / 'samples.jsonl'}: sample " in md and " records " in md


def test_a_run_counted_on_its_stored_verdicts_alone_says_so_on_every_row(little, tmp_path):
    """solver:random's answers with solver:heuristic's verdicts and results.json recomputed from them, its data
    moved away and no run on the same data beside it: nothing can verify its answers, so every row that shows
    its numbers (markdown, CSV, HTML) says that they are its stored verdicts' and not verified; the honest
    run's rows, verified on its data, say nothing of the kind."""
    data = tmp_path / "data"
    shutil.copytree(little, data)
    honest, forged, results = _forged_with_honest_verdicts(data, tmp_path, ("text", "image"))
    (forged / "results.json").write_text(json.dumps(results))
    assert make_leaderboard([forged, honest]).count(ANSWERS_UNCHECKED) == 0  # its data here: left out instead
    data.rename(tmp_path / "moved")
    md = make_leaderboard([forged])
    row = next(r for r in _table(md, "Leaderboard") if r["modality"] == "text")
    assert row["model"] == _unchecked("solver:random") and row["Overall SR"] == _pct(results["metrics"]["text"][
        "overall"]["sr"])  # the forged numbers, shown only as what they are
    assert all(r["model"].startswith(_unchecked("solver:random")) for r in _table(md, "By task"))
    rows = list(csv.DictReader(io.StringIO(make_leaderboard([forged], format="csv"))))
    assert {r["scope"] for r in rows} >= {"overall", "task", "picture_kind"}  # the picture kinds' rows too
    assert all(r["model"].startswith(_unchecked("solver:random")) for r in rows)
    # a run with every table (feedback rounds, the perception probe), its data moved away likewise
    data = tmp_path / "data"
    shutil.copytree(little, data)
    fed = _run(tmp_path / "fed", "--model", "solver:random", "--data", str(data), "--modality", "both",
               "--rounds", "2", "--probe", "transcribe", "--samples", "2", "--temperature", "0.7")
    data.rename(tmp_path / "moved_too")
    md = make_leaderboard([fed])
    titles = [line[4:] for line in md.splitlines() if line.startswith("### ")]
    assert any(t.startswith("Feedback rounds") for t in titles) and any(t.startswith("Perception") for t in titles)
    for title in titles:
        if title != "Runs":  # the one table naming where its numbers come from, in its `verified` column
            assert all(r["model"].startswith(_unchecked("solver:random")) for r in _table(md, title)), title
    rows = list(csv.DictReader(io.StringIO(make_leaderboard([fed], format="csv"))))
    assert "probe" in {r["scope"] for r in rows} and all(r["model"].startswith(_unchecked("solver:random"))
                                                         for r in rows)
    html = make_leaderboard([forged], format="html", out=tmp_path / "board.html") or \
        (tmp_path / "board.html").read_text()
    assert ANSWERS_UNCHECKED in html


# -- picture kinds weigh instances, legends tell runs apart, the CSV holds what md shows ----------------

def test_a_picture_kinds_score_is_the_mean_over_its_instances():
    """Drawings of four max_clique instances (graph, three solved) and two each of min_bisection
    (partition) and longest_cycle (planning), all failed: shown over the instances, 3/8, where the
    mean of the categories stored in results.json (as an older mmnp stored it, so its runs stay
    verified) makes the four instances of the two small tasks weigh 2/3. Its standard error
    combines the tasks' alike."""
    from mmnp.evaluation.metrics import instance_metrics
    from mmnp.evaluation.runner import _by_kind
    from mmnp.evaluation.tables import ALL_INSTANCES, _kind_scopes
    from mmnp.registry import list_tasks

    def row(task: str, solved: bool) -> dict:
        sample = {"feasible": solved, "ratio": float(solved), "opt_ratio": float(solved), "failed": False,
                  "parsed": True, "canonical": [1]}
        return {"task": task, "difficulty": "easy", "kind": "drawing", "metrics": instance_metrics([sample])}

    rows = [row("max_clique", True)] * 3 + [row("max_clique", False)] + [row("min_bisection", False)] * 2 + \
        [row("longest_cycle", False)] * 2
    kinds = _by_kind(rows, {t.name: t.category for t in list_tasks()})
    assert kinds["drawing"]["overall"]["sr"] == pytest.approx((3 / 4) / 3)  # the categories' mean, stored
    image = {"picture_kinds": kinds, "tasks": kinds["drawing"]["tasks"], "task_difficulty": {}}
    scope, total, split = next(_kind_scopes(image))
    shown = split["drawing"]
    assert scope == ALL_INSTANCES and shown["sr"] == pytest.approx(3 / 8) == total["sr"] and shown["instances"] == 8
    clique_se = kinds["drawing"]["tasks"]["max_clique"]["sr_se"]
    assert clique_se > 0 and shown["sr_se"] == pytest.approx(4 * clique_se / 8)  # the failed tasks' SE is 0


def test_csv_has_the_category_and_round_rows_markdown_shows(results_dir, protocols):
    rows = list(csv.DictReader(io.StringIO(make_leaderboard([results_dir / "solver_random"], format="csv"))))
    results = _results(results_dir / "solver_random")
    for m in ("text", "image"):
        categories = {r["name"]: r for r in rows if r["scope"] == "category" and r["modality"] == m}
        assert set(categories) == set(results["metrics"][m]["categories"])
        for name, r in categories.items():
            assert float(r["SR"]) == pytest.approx(100 * results["metrics"][m]["categories"][name]["sr"], abs=0.05)
    md = make_leaderboard([protocols["fed"]])
    shown = _table(md, "Feedback rounds")[0]
    rounds = {r["name"]: r for r in csv.DictReader(io.StringIO(make_leaderboard([protocols["fed"]], format="csv")))
              if r["scope"] == "rounds"}
    assert set(rounds) == {"round 1", "round 2"}
    for r in (1, 2):
        assert rounds[f"round {r}"]["SR"] == shown[f"SR round {r}"]
        assert rounds[f"round {r}"]["QR"] == shown[f"QR round {r}"]


def test_plot_labels_keep_the_distinguishing_tail_and_never_repeat():
    from mmnp.evaluation.html_report import _label, _unique

    head = "organisation/" + "a-very-long-experiment-name-" * 3
    one, two = _label(head + "checkpoint-1000"), _label(head + "checkpoint-2000")
    assert len(one) == 60 and one.startswith("organisation/") and one.endswith("checkpoint-1000")
    assert one != two and two.endswith("checkpoint-2000")
    assert _unique(["a", "b", "a", "a #3"]) == ["a #1", "b", "a #3'", "a #3"]


def test_every_series_of_a_plot_has_its_own_label_and_look(results_dir, monkeypatch):
    """Twelve checkpoints of one long-named model (24 series, text and image; 12 in the picture-kind plot):
    no two share a legend label or a look (colour with marker and line style, or bars' colour and hatch)."""
    import copy

    from mmnp.evaluation import html_report

    figures = []
    real = html_report._Plotter.svg

    def keep(self, fig):
        figures.append(fig)
        return real(self, fig)

    monkeypatch.setattr(html_report._Plotter, "svg", keep)
    base = collect([results_dir / "solver_random"])[0]
    runs = []
    for i in range(1, 13):
        run = copy.copy(base)
        run.model = run.label = f"organisation/{'long-experiment-name-' * 4}checkpoint-{1000 * i}"
        runs.append(run)
    render_html(runs, browser_samples=0)
    assert figures
    for fig in figures:
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is None:
                continue
            handles, labels = ax.get_legend_handles_labels()
            modalities = ("image",) if len(labels) == 12 else ("text", "image")  # the picture-kind plot: image
            assert {"checkpoint-" + label.rsplit("checkpoint-", 1)[1] for label in labels} == {
                f"checkpoint-{1000 * i} [{m}]" for i in range(1, 13) for m in modalities}
            looks = set()
            for h in handles:
                if hasattr(h, "patches"):  # bars: colour and hatch
                    looks.add((tuple(h.patches[0].get_facecolor()), h.patches[0].get_hatch()))
                else:  # lines (an error bar's data line): colour, marker, line style
                    line = h.lines[0] if hasattr(h, "lines") else h
                    looks.add((line.get_color(), line.get_marker(), line.get_linestyle()))
            assert len(looks) == len(labels), looks
