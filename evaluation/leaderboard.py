"""Leaderboards over `mmnp eval` outputs: markdown, CSV, and a self-contained HTML report
(sortable tables, plots with error bars, a sample browser with the answer drawn over each instance).

A ranking compares runs on the same data only: runs are grouped by dataset (its benchmark hash,
or its own content hash when it was evaluated modified on purpose), each group with its own
tables and the hash above them, unless `mix_datasets` asks for one ranking. Runs that are not
complete (failed samples, instances without samples) are left out with a line saying which, or
shown marked with `include_incomplete`. A results folder that cannot be read is named, one line
each, never skipped in silence.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from mmnp.core import CATEGORIES, Instance
from mmnp.errors import DataError, MMNPError, RunError, UsageError
from mmnp.evaluation.metrics import STDERR, level_key
from mmnp.evaluation.schema import DELIVERY_WARNINGS, PROBE, RESULTS, check_results
from mmnp.evaluation.schema import number as _number

if TYPE_CHECKING:
    import pandas as pd

BREAK_SR = 0.5  # "breaks at": the lowest level whose SR falls below this
FORMATS = ("md", "csv", "html")
NAME_CAP = 200  # characters of a name (model, preset, hash) a report shows; a longer one is cut, saying so
CELL_CAP = 300  # characters of any table cell or line of text a report shows
TEXT_CAP = 20_000  # characters of a prompt, response or verdict the HTML sample browser shows


def cap(text: str, limit: int = NAME_CAP) -> str:
    """`text` cut to `limit` characters, saying so: a 50 MB model name must not make a 1 GB report."""
    return text if len(text) <= limit else f"{text[:limit]}... [cut: {len(text):,} characters]"


# -- reading results folders -------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    """What a run was evaluated on, from results.json's `dataset` block."""

    benchmark_hash: str  # "unknown" when results.json records none
    content_hash: str | None
    modified: bool
    preset: str | None
    recorded: bool  # False: written by an mmnp that did not record integrity (no modified/content_hash)
    references_hash: str | None = None  # the reference solutions QR is measured against
    origin: str | None = None  # "generated on the fly, seed S" for runs without a dataset folder

    @classmethod
    def of(cls, results: dict) -> Dataset:
        d = results.get("dataset") if isinstance(results.get("dataset"), dict) else {}

        def text(key: str) -> str | None:
            value = d.get(key)
            return cap(value) if isinstance(value, str) and value else None

        generated = d.get("generated") if isinstance(d.get("generated"), dict) else None
        return cls(benchmark_hash=text("benchmark_hash") or "unknown", content_hash=text("content_hash"),
                   modified=d.get("modified") is True, preset=text("preset"),
                   recorded="modified" in d and "content_hash" in d, references_hash=text("references_hash"),
                   origin=f"generated on the fly, seed {generated.get('seed')}" if generated else None)

    @property
    def known(self) -> bool:
        return (self.content_hash if self.modified else self.benchmark_hash) not in (None, "unknown")

    @property
    def key(self) -> str:
        """Runs with equal keys were evaluated on the same data: the same instances and, where
        recorded, the same references (QR is measured against them)."""
        if self.modified:
            return f"modified:{self.content_hash}"
        return self.benchmark_hash + (f"/references:{self.references_hash}" if self.references_hash else "")

    def short(self) -> str:
        if self.modified:
            return "modified " + (self.content_hash or "unknown").removeprefix("modified-")[:12]
        return self.benchmark_hash[:12] + (f"/{self.references_hash[:8]}" if self.references_hash else "")

    def describe(self) -> str:
        if self.modified:
            return (f"MODIFIED dataset: content hash {self.content_hash or 'unknown'} (edited from benchmark hash "
                    f"{self.benchmark_hash}; evaluated on purpose, not comparable with that benchmark)")
        if self.benchmark_hash == "unknown":
            return "unknown dataset (its results.json records no benchmark hash)"
        name = self.preset or self.origin
        references = f", references hash {self.references_hash}" if self.references_hash else ""
        return f"dataset {name + ', ' if name else ''}benchmark hash {self.benchmark_hash}{references}"


@dataclass
class Run:
    model: str
    folder: Path
    results: dict
    label: str = ""  # the model as shown: its name, plus its folder when two shown runs share a name

    def __post_init__(self) -> None:
        self.label = self.label or self.model

    def modalities(self) -> list[str]:
        return [m for m, metrics in self.results["metrics"].items() if m != PROBE and metrics]

    @property
    def dataset(self) -> Dataset:
        return Dataset.of(self.results)

    def probe(self) -> dict | None:
        block = self.results["metrics"].get(PROBE)
        return block if block and isinstance(block.get("overall"), dict) else None

    def incomplete(self) -> str | None:
        """Why the run's numbers do not cover every sample (None when they do). Results from an
        older mmnp count failed calls from `usage.failed_calls`."""
        r = self.results
        failed = r.get("failed_samples")
        if not isinstance(failed, int):
            failed = (r.get("usage") or {}).get("failed_calls", 0) if isinstance(r.get("usage"), dict) else 0
        missing = r.get("missing_instances", 0)
        parts = []
        if isinstance(failed, int) and failed > 0:
            parts.append(f"{failed} failed sample{'s' * (failed != 1)}")
        if isinstance(missing, int) and missing > 0:
            parts.append(f"{missing} instance{'s' * (missing != 1)} without samples")
        if r.get("complete") is False and not parts:
            parts.append("results.json says complete: false")
        return "incomplete: " + ", ".join(parts) if parts else None

    def image_warning(self) -> str | None:
        """Set when the image scores count samples whose picture was not shown to reach the model
        (some failed the check, were never checked, or an older run skipped its probe)."""
        probe = self.results.get("image_probe")
        if isinstance(probe, dict) and probe.get("status") in DELIVERY_WARNINGS:
            detail = str(probe.get("detail") or "")[:80]
            return f"image delivery {probe['status']}" + (f": {detail}" if detail else "")
        return None

    def delivery(self) -> str:
        """The runs table's image-delivery cell: the status and how many image samples it covers."""
        probe = self.results.get("image_probe") if isinstance(self.results.get("image_probe"), dict) else {}
        status, samples = _text(probe.get("status")), probe.get("samples")
        if isinstance(samples, dict) and samples:
            return f"{status} (" + ", ".join(f"{n} {k}" for k, n in sorted(samples.items())) + ")"
        if status == "passed":
            return "passed (one probe per run, by an older mmnp: samples not checked one by one)"
        return status

    def endpoint(self) -> str:
        config = self.results.get("config") if isinstance(self.results.get("config"), dict) else {}
        endpoint = config.get("endpoint") if isinstance(config.get("endpoint"), dict) else {}
        return _text(endpoint.get("base_url"))


def read_run(folder: Path) -> Run | str:
    """The run in `folder`, or one line saying why its results.json cannot be used."""
    file = folder / RESULTS
    redo = "run the same `mmnp eval` command with --rescore to rewrite it"
    try:
        results = json.loads(file.read_text(encoding="utf-8"))
    except OSError as e:
        return f"{file}: cannot be read ({e.strerror or e}); check that it is a readable file"
    except UnicodeDecodeError as e:
        return f"{file}: byte {e.start} is not UTF-8 text; {redo}"
    except json.JSONDecodeError as e:
        return f"{file}: line {e.lineno} column {e.colno}: not valid JSON ({e.msg}); {redo}"
    except RecursionError:
        return f"{file}: JSON nested too deep; {redo}"
    problem = check_results(results)
    if problem:
        return f"{file}: {problem}; {redo}"
    return Run(cap(results["model"]), folder, results)


def gather(paths: list[Path]) -> tuple[list[Run], list[str]]:
    """(runs, one line per results folder that holds no readable results.json) under `paths`:
    each a model folder, its results.json, or a folder of model folders."""
    runs, problems, seen = [], [], set()
    for path in map(Path, paths):
        if path.is_file() and path.name == RESULTS:
            path = path.parent
        if (path / RESULTS).exists():
            folders = [path]
        elif (path / "samples.jsonl").exists() or (path / "run.json").exists():
            folders = []
            problems.append(f"{path}: no {RESULTS} (the run never finished; run the same `mmnp eval` command "
                            "again to finish it)")
        elif path.is_dir():
            try:
                subfolders = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
            except OSError as e:
                raise DataError(f"{path}: cannot be listed ({e.strerror or e}); check its permissions") from None
            folders = [p for p in subfolders if (p / RESULTS).exists()]
            for p in subfolders:
                if p not in folders:
                    began = (p / "samples.jsonl").exists() or (p / "run.json").exists()
                    problems.append(f"{p}: no {RESULTS} (" + ("the run never finished; run the same `mmnp eval` "
                                    "command again to finish it)" if began else "not a model folder of `mmnp eval`)"))
            if not subfolders:
                raise UsageError(f"{path} holds no {RESULTS}; give the --output-path of `mmnp eval` "
                                 "or one of its model folders")
        elif path.exists():
            raise UsageError(f"{path} is a file; give a model folder of `mmnp eval`, its {RESULTS}, or the "
                             "--output-path holding model folders")
        else:
            raise UsageError(f"{path} does not exist; give the --output-path of `mmnp eval` or one of its model folders")
        for folder in folders:
            if folder.resolve() in seen:
                raise UsageError(f"{folder} was given twice; give each results folder once")
            seen.add(folder.resolve())
            run = read_run(folder)
            if isinstance(run, str):
                problems.append(run)
            else:
                runs.append(run)
    return runs, problems


def collect(paths: list[Path]) -> list[Run]:
    """The readable runs under `paths`; refused when there is none."""
    runs, problems = gather(paths)
    if not runs:
        raise DataError("no readable results.json: " + "; ".join(problems))
    return runs


# -- grouping ------------------------------------------------------------------------------


@dataclass
class Group:
    """Runs ranked together: one dataset, or several with `mix_datasets`."""

    runs: list[Run]
    dataset: Dataset | None  # None: mixed datasets
    notes: list[str] = field(default_factory=list)

    def heading(self) -> str:
        if self.dataset is None:
            return "MIXED datasets (--mix-datasets): runs on different data ranked together"
        return self.dataset.describe()


@dataclass
class Board:
    """What a report shows: the groups, and one line per run or folder it does not show."""

    groups: list[Group]
    left_out: list[str]
    modality: str | None

    @classmethod
    def build(cls, runs: list[Run], problems: list[str] = (), modality: str | None = None,
              mix_datasets: bool = False, include_incomplete: bool = False) -> Board:
        left_out = list(problems)
        shown = []
        for run in runs:
            reason = run.incomplete()
            if reason and not include_incomplete:
                left_out.append(f"left out {run.model} ({run.folder}): {reason}; run the same `mmnp eval` command "
                                "again to retry, or pass --include-incomplete to show it marked")
            else:
                shown.append(run)
        by_key: dict[str, list[Run]] = {}
        for run in shown:
            # a run whose data is unknown cannot be shown to match any other
            key = run.dataset.key if run.dataset.known else f"unknown:{run.folder}"
            by_key.setdefault(key, []).append(run)
        if mix_datasets and len(by_key) > 1:
            groups = [Group(shown, None, [f"{len(by_key)} datasets: " + "; ".join(
                f"{rs[0].dataset.short()} ({', '.join(r.model for r in rs)})" for rs in by_key.values())])]
        else:
            groups = [Group(rs, rs[0].dataset) for rs in by_key.values()]
        for g in groups:
            names = [r.model for r in g.runs]
            for r in g.runs:
                r.label = f"{r.model} ({r.folder})" if names.count(r.model) > 1 else r.model
            legacy = [r.label for r in g.runs if not r.dataset.recorded]
            if legacy:
                g.notes.append(f"written by an older mmnp that did not record whether the data was checked or "
                               f"modified: {', '.join(legacy)}")
        return cls(groups, left_out, modality)

    @property
    def mixed(self) -> bool:
        return any(g.dataset is None for g in self.groups)


def _rows(group: Group, modality: str | None) -> Iterator[tuple[Run, str, dict, str]]:
    """(run, modality, its metrics, the row's model cell with any marks)."""
    for run in group.runs:
        for m in run.modalities():
            if modality is None or m == modality:
                marks = [run.incomplete(), run.image_warning() if m == "image" else None]
                name = run.label + "".join(f" ({mark})" for mark in marks if mark)
                yield run, m, run.results["metrics"][m], name


# -- tables ----------------------------------------------------------------------------------


def _pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.1f}"


def _cells(group: dict | None, key: str, title: str, se: str | None) -> dict[str, str]:
    """{title: value in %} plus its standard error: "52.3 ± 4.1" (se="inline") or a
    separate "title ±" column (se="column"); n/a where none is recorded."""
    group = group or {}
    value = group.get(key)
    if se is None or key not in STDERR:
        return {title: _pct(value)}
    error = group.get(STDERR[key])
    if se == "column":
        return {title: _pct(value), f"{title} ±": _pct(error)}
    if value is None:
        return {title: ""}
    return {title: _pct(value) + (" ± " + _pct(error) if error is not None else " ± n/a")}


def _frame(records: list[dict]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(records)


def _who(run: Run, name: str, m: str | None, mixed: bool) -> dict:
    row = {"model": name}
    if m is not None:
        row["modality"] = m
    if mixed:
        row["dataset"] = run.dataset.short()
    return row


def leaderboard_frame(group: Group, modality: str | None, se: str | None = None) -> pd.DataFrame:
    """NP-Bench's layout: per category SR and QR, then Overall, one row per (model, modality),
    best Overall QR first."""
    ranked = []
    for run, m, metrics, name in _rows(group, modality):
        row = _who(run, name, m, group.dataset is None)
        for cat in CATEGORIES:
            c = metrics["categories"].get(cat)
            row.update(_cells(c, "sr", f"{cat} SR", se))
            row.update(_cells(c, "qr", f"{cat} QR", se))
        row.update(_cells(metrics["overall"], "sr", "Overall SR", se))
        row.update(_cells(metrics["overall"], "qr", "Overall QR", se))
        ranked.append((-metrics["overall"]["qr"], len(ranked), row))
    return _frame([row for *_, row in sorted(ranked, key=lambda t: t[:2])])


def detail_frame(group: Group, modality: str | None, scope: str, se: str | None = None) -> pd.DataFrame:
    """One row per (model, modality, task | difficulty | overall) with every scalar metric,
    pass@k and distinct@n."""
    records = []
    for run, m, metrics, name in _rows(group, modality):
        groups = {"overall": {"overall": metrics["overall"]}, "task": metrics["tasks"],
                  "difficulty": metrics["difficulties"], "task_difficulty": metrics["task_difficulty"]}[scope]
        for key, g in groups.items():
            records.append(_detail_row({**_who(run, name, m, group.dataset is None), scope: key}, g, se))
    return _frame(records)


def _detail_row(row: dict, g: dict, se: str | None) -> dict:
    """`row` (who and where) with every scalar metric of the group `g`, pass@k and distinct@n."""
    n = max(map(int, g["pass_at_k"]), default=1)
    for metric, title in (("sr", "SR"), ("qr", "QR"), ("sr_at_1", "SR@1"), ("qr_at_1", "QR@1")):
        row.update(_cells(g, metric, title, se))
    row["opt"] = _pct(g["opt_ratio"])
    for k, v in g["pass_at_k"].items():
        row[f"pass@{k}"] = _pct(v)
    row[f"pass@{n}(opt)"] = _pct(g["pass_at_k_opt"].get(str(n)))
    row[f"distinct@{n}"] = f"{g['distinct']:.2f}"
    row["fail %"] = _pct(g["fail_rate"])
    row["instances"] = g["instances"]
    return row


def _kinds_in(group: Group) -> list[str]:
    """The picture kinds of the group's image runs, in `mmnp.render.PICTURE_KINDS` order."""
    from mmnp.render import PICTURE_KINDS

    found = {k for run in group.runs for k in ((run.results["metrics"].get("image") or {}).get("picture_kinds") or {})}
    return [k for k in PICTURE_KINDS if k in found] + sorted(found - set(PICTURE_KINDS))


def _kind_scopes(image: dict) -> Iterator[tuple[str, dict, dict[str, dict | None]]]:
    """(scope, the total's group, each kind's group) overall, per task, and per task and level
    where the level mixes kinds (there the kinds compare at one difficulty)."""
    kinds = image["picture_kinds"]
    yield "overall", image["overall"], {k: b["overall"] for k, b in kinds.items()}
    for task, total in image["tasks"].items():
        yield task, total, {k: b["tasks"].get(task) for k, b in kinds.items()}
    for cell, total in image["task_difficulty"].items():
        split = {k: b["task_difficulty"].get(cell) for k, b in kinds.items()}
        if sum(g is not None for g in split.values()) > 1:
            yield cell, total, split


def kind_frame(group: Group, se: str | None = None) -> pd.DataFrame:
    """Image SR and QR per picture kind beside the total: overall, per task, and per task and level
    where a level mixes kinds, so perception of a drawing is not averaged with reading a list."""
    order = _kinds_in(group)
    records = []
    for run, _, image, name in _rows(group, "image"):
        if not image.get("picture_kinds"):
            continue
        for scope, total, split in _kind_scopes(image):
            row = {**_who(run, name, None, group.dataset is None), "scope": scope}
            row.update(_cells(total, "sr", "image SR", se))
            row.update(_cells(total, "qr", "image QR", se))
            for kind in order:
                g = split.get(kind)
                row.update(_cells(g, "sr", f"{kind} SR", se))
                row.update(_cells(g, "qr", f"{kind} QR", se))
                row[f"{kind} n"] = g["instances"] if g else ""
            records.append(row)
    return _frame(records)


def _levels_by_task(group: Group, modality: str | None) -> dict[str, list[str]]:
    """Task -> its levels (difficulty names) in order, for tasks evaluated at two or more."""
    levels: dict[str, set[str]] = {}
    for _, _, metrics, _ in _rows(group, modality):
        for cell in metrics["task_difficulty"]:
            task, level = cell.split("/", 1)
            levels.setdefault(task, set()).add(level)
    return {t: sorted(ls, key=level_key) for t, ls in levels.items() if len(ls) > 1}


def breaks_at(metrics: dict, task: str, levels: list[str]) -> str:
    """The lowest of `levels` where the task's SR falls below BREAK_SR ("beyond" the last when none)."""
    present = [lv for lv in levels if f"{task}/{lv}" in metrics["task_difficulty"]]
    for level in present:
        if metrics["task_difficulty"][f"{task}/{level}"]["sr"] < BREAK_SR:
            return level
    return f"beyond {present[-1]}" if present else ""


def level_frame(group: Group, modality: str | None, se: str | None = None) -> pd.DataFrame:
    """SR and QR per task and level, one row per (task, model, modality), with the level where
    the model breaks (SR below 50 %)."""
    by_task = _levels_by_task(group, modality)
    columns = sorted({lv for ls in by_task.values() for lv in ls}, key=level_key)
    records = []
    for task, levels in by_task.items():
        for run, m, metrics, name in _rows(group, modality):
            row = {"task": task, **_who(run, name, m, group.dataset is None)}
            for level in columns:
                cell = metrics["task_difficulty"].get(f"{task}/{level}")
                row.update(_cells(cell, "sr", f"{level} SR", se))
                row.update(_cells(cell, "qr", f"{level} QR", se))
            row["breaks at"] = breaks_at(metrics, task, levels)
            records.append(row)
    return _frame(records)


def probe_frame(group: Group, se: str | None = None) -> pd.DataFrame:
    """Text SR/QR, image SR/QR and the perception probe's recognition side by side, overall and
    per task: the modality gap split into perception (recognition) and reasoning."""
    records = []
    for run in group.runs:
        probe = run.probe()
        if probe is None:
            continue
        metrics = run.results["metrics"]
        text, image = metrics.get("text") or {}, metrics.get("image") or {}
        tasks = list(dict.fromkeys([*(text.get("tasks") or {}), *(image.get("tasks") or {}),
                                    *(probe.get("tasks") or {})]))
        for task in ["overall", *tasks]:
            pick = (lambda block: block.get("overall")) if task == "overall" else (
                lambda block: (block.get("tasks") or {}).get(task))
            t, i, p = pick(text), pick(image), pick(probe)
            row = {**_who(run, run.label + (f" ({run.incomplete()})" if run.incomplete() else ""), None,
                          group.dataset is None), "task": task}
            row.update(_cells(t, "sr", "text SR", se))
            row.update(_cells(t, "qr", "text QR", se))
            row.update(_cells(i, "sr", "image SR", se))
            row.update(_cells(i, "qr", "image QR", se))
            row["SR gap (text - image)"] = f"{100 * (t['sr'] - i['sr']):+.1f}" if t and i else ""
            row["recognition"] = _pct(p and p["recognition_accuracy"])
            row["field F1"] = _pct(p and p["field_f1"])
            row["probe instances"] = p.get("instances", "") if p else ""
            records.append(row)
    return _frame(records)


def runs_frame(group: Group) -> pd.DataFrame:
    """Where each shown number comes from: one row per run with its folder, endpoint, time, version,
    samples, completeness and image-delivery check (blank where results.json predates them)."""
    records = []
    for run in group.runs:
        r = run.results
        config = r.get("config") if isinstance(r.get("config"), dict) else {}
        probe = r.get("image_probe") if isinstance(r.get("image_probe"), dict) else {}
        records.append({**_who(run, run.label, None, group.dataset is None), "folder": str(run.folder),
                        "endpoint": run.endpoint(), "timestamp": _text(r.get("timestamp")),
                        "mmnp": _text(r.get("mmnp_version")), "samples": _text(config.get("samples")),
                        "complete": run.incomplete() or "yes", "image delivery": run.delivery() if probe else ""})
    return _frame(records)


def _md(text, limit: int = CELL_CAP) -> str:
    """Text from results.json as markdown shows it literally: capped, HTML escaped (a `<script>` in a
    model name is text, not markup), on one line, its pipes escaped (they would end a table cell)."""
    text = html.escape(cap(str(text), limit), quote=False)
    return " ".join(text.splitlines()).replace("|", "\\|")


def _markdown(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(no results)\n"
    cols = list(frame.columns)
    lines = ["| " + " | ".join(map(_md, cols)) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(_md(row[c]) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def _sections(board: Board, group: Group, se: str | None) -> list[tuple[str, pd.DataFrame, str]]:
    """(title, table, id stem) of one group's tables, in report order."""
    m = board.modality
    unit = "in %" + (", ± standard error over instances" if se else "")
    sections = [(f"Leaderboard (NP-Bench layout: SR and QR {unit}, best of n samples)", leaderboard_frame(group, m, se),
                 "leaderboard"),
                ("Overall: avg@n, pass@k, optimality, diversity and failures", detail_frame(group, m, "overall", se),
                 "overall"),
                ("By task", detail_frame(group, m, "task", se), "by-task"),
                ("By difficulty", detail_frame(group, m, "difficulty", se), "by-difficulty")]
    if _levels_by_task(group, m):
        sections.append((f"By level: SR and QR per task and level; breaks at = the lowest level with SR below "
                         f"{100 * BREAK_SR:.0f} %", level_frame(group, m, se), "by-level"))
    if m in (None, "image") and _kinds_in(group):
        sections.append(("Image scores by picture kind (drawing, edge_list, table, chart): SR and QR over the "
                         "instances of each kind beside the total; task/level rows where a level mixes kinds",
                         kind_frame(group, se), "by-kind"))
    if m is None and any(r.probe() for r in group.runs):
        sections.append(("Perception and reasoning: text and image SR/QR beside the perception probe's "
                         "recognition accuracy and field F1", probe_frame(group, se), "probe"))
    rounds = rounds_frame(group, m)
    if not rounds.empty:
        sections.append(("Feedback rounds (--rounds): overall SR@r and QR@r, a sample's answer at round r being "
                         "its last up to r", rounds, "rounds"))
    sections.append(("Runs", runs_frame(group), "runs"))
    return sections


def rounds_frame(group: Group, modality: str | None) -> pd.DataFrame:
    """Overall SR@r and QR@r per run and modality, for runs made with --rounds K > 1."""
    records = []
    for run in group.runs:
        for m in run.modalities() if modality is None else [modality]:
            rounds = ((run.results["metrics"].get(m) or {}).get("overall") or {}).get("rounds")
            if not isinstance(rounds, dict):
                continue
            row = _who(run, run.label, m, group.dataset is None)
            for r in sorted(rounds, key=int):
                row[f"SR round {r}"] = _pct(rounds[r].get("sr"))
                row[f"QR round {r}"] = _pct(rounds[r].get("qr"))
            records.append(row)
    return _frame(records)


def _markdown_board(board: Board, stderr: bool) -> str:
    parts = ["# MM-NP-Bench leaderboard\n"]
    if board.left_out:
        parts.append("Not shown:\n\n" + "".join(f"- {_md(line, 2 * CELL_CAP)}\n" for line in board.left_out))
    for group in board.groups:
        parts.append(f"## {_md(group.heading(), 2 * CELL_CAP)}\n")
        parts.extend(f"Note: {_md(note, 2 * CELL_CAP)}\n" for note in group.notes)
        for title, frame, _ in _sections(board, group, "inline" if stderr else None):
            parts.append(f"### {title}\n\n{_markdown(frame)}")
    if not board.groups:
        parts.append("(no results)\n")
    return "\n".join(parts)


def _csv_board(board: Board, stderr: bool) -> str:
    """Long format: one row per (model, modality, scope, name) with every metric, each row
    carrying its run's dataset key, whether that data was modified and whether the run is complete."""
    import pandas as pd

    frames = []
    for group in board.groups:
        for run in group.runs:
            alone = Group([run], run.dataset)
            ours = [detail_frame(alone, board.modality, scope, "column" if stderr else None)
                    .rename(columns={scope: "name"}).assign(scope=scope)
                    for scope in ("overall", "task", "difficulty", "task_difficulty")]
            image = run.results["metrics"].get("image") or {}
            if board.modality in (None, "image") and image.get("picture_kinds"):
                ours.append(pd.DataFrame([_detail_row({"model": run.label, "modality": "image", "name": kind + (
                    "" if scope == "overall" else f"/{scope}"), "scope": "picture_kind"}, g, "column" if stderr else None)
                    for scope, _, split in _kind_scopes(image) for kind, g in split.items() if g is not None]))
            probe = run.probe() if board.modality is None else None
            if probe:
                ours.append(pd.DataFrame([{"model": run.label, "modality": PROBE, "name": name, "scope": "probe",
                                           "recognition": _pct(p["recognition_accuracy"]),
                                           "field F1": _pct(p["field_f1"]), "instances": p.get("instances", "")}
                                          for name, p in [("overall", probe["overall"]),
                                                          *(probe.get("tasks") or {}).items()]]))
            for f in ours:
                f.insert(0, "dataset", run.dataset.key)
                f.insert(1, "dataset_modified", run.dataset.modified)
                f.insert(2, "complete", run.incomplete() is None)
            frames.extend(ours)
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True).to_csv(index=False) if frames else ""


def render_markdown(runs: list[Run], modality: str | None = None, *, mix_datasets: bool = False,
                    include_incomplete: bool = False, stderr: bool = False, problems: list[str] = ()) -> str:
    return _markdown_board(Board.build(runs, problems, modality, mix_datasets, include_incomplete), stderr)


def render_csv(runs: list[Run], modality: str | None = None, *, mix_datasets: bool = False,
               include_incomplete: bool = False, stderr: bool = False) -> str:
    """Long format with the dataset key of every row (so mixing is never silent)."""
    return _csv_board(Board.build(runs, (), modality, mix_datasets, include_incomplete), stderr)


# -- HTML ---------------------------------------------------------------------------------

_STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1500px}
table{border-collapse:collapse;margin:8px 0 24px;font-size:13px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}td{white-space:nowrap}
th{background:#f0f0f0;cursor:pointer;user-select:none}th:hover{background:#e0e7ff}
td:first-child,th:first-child{text-align:left}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f7;padding:8px;max-height:320px;overflow:auto;font-size:12px}
details{border:1px solid #ddd;margin:6px 0;padding:4px 8px}summary{cursor:pointer}
.ok{color:#2c7a2c;font-weight:bold}.bad{color:#c62828;font-weight:bold}
.pair{display:flex;gap:12px;flex-wrap:wrap}.pair img{max-width:560px;border:1px solid #ddd}
.plots{display:flex;gap:16px;flex-wrap:wrap;align-items:flex-start}figure{margin:0}
figure svg{max-width:100%;height:auto}figcaption{font-weight:bold;font-size:14px}
.warn{background:#fff4e5;border-left:4px solid #f0a020;padding:6px 10px}
.dataset{font-family:ui-monospace,monospace;font-size:15px}
"""

# Click a header to sort by that column (numbers numerically); no library, no network.
_SCRIPT = """
document.querySelectorAll('table.sortable th').forEach(function (th, col) {
  th.addEventListener('click', function () {
    var table = th.closest('table'), body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var asc = th.dataset.order !== 'asc';
    rows.sort(function (a, b) {
      var x = a.cells[col].textContent, y = b.cells[col].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      var cmp = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : nx - ny;
      return asc ? cmp : -cmp;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    table.querySelectorAll('th').forEach(function (h) { delete h.dataset.order; });
    th.dataset.order = asc ? 'asc' : 'desc';
  });
});
"""


def _table_html(frame: pd.DataFrame, table_id: str) -> str:
    if frame.empty:
        return "<p>(no results)</p>"
    head = "".join(f"<th>{html.escape(cap(str(c), CELL_CAP))}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(cap(str(v), CELL_CAP))}</td>" for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    return f'<table class="sortable" id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _png_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


class _Plotter:
    """Matplotlib figures as inline SVG (text kept as text, escaped by matplotlib; no date, fixed
    ids), error bars tagged `errorbar-N` so a reader (or a test) can find them."""

    def __init__(self) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        self.plt, self.matplotlib, self.bars = plt, matplotlib, 0

    def tag(self, container) -> None:
        for collection in container.lines[2]:
            self.bars += 1
            collection.set_gid(f"errorbar-{self.bars}")

    def svg(self, fig) -> str:
        buf = io.StringIO()
        with self.matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "mmnp"}):
            fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
        self.plt.close(fig)
        text = buf.getvalue()
        return text[text.index("<svg"):]


def _label(text: str) -> str:
    """A name from results.json drawn literally ($ would start matplotlib's math mode)."""
    text = text if len(text) <= 60 else text[:57] + "..."
    return text.replace("$", r"\$")


def _errors(groups: list[dict | None], key: str) -> list[float]:
    """Standard errors in % for matplotlib (NaN draws no bar where none is recorded)."""
    return [100 * g[STDERR[key]] if g and g.get(STDERR[key]) is not None else math.nan for g in groups]


def _plots(board: Board, group: Group, p: _Plotter) -> list[tuple[str, str]]:
    """(title, inline SVG) of one group's plots: SR/QR per category, by difficulty, pass@k and,
    per task evaluated at several levels, SR and QR against level."""
    import numpy as np

    plt = p.plt
    rows = list(_rows(group, board.modality))
    if not rows:
        return []
    labels = [_label(f"{run.label} [{m}]") for run, m, _, _ in rows]
    colors = [f"C{i % 10}" for i in range(len(rows))]
    plots = []

    cats = [c for c in CATEGORIES if any(c in metrics["categories"] for _, _, metrics, _ in rows)] + ["overall"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), sharey=True)
    width = 0.8 / len(rows)
    for ax, key, title in ((axes[0], "sr", "Success rate (SR)"), (axes[1], "qr", "Quality ratio (QR)")):
        for i, (_, _, metrics, _) in enumerate(rows):
            groups = [metrics["overall"] if c == "overall" else metrics["categories"].get(c) for c in cats]
            bars = ax.bar(np.arange(len(cats)) + i * width - 0.4 + width / 2, [100 * (g or {}).get(key, 0) for g in groups],
                          width, yerr=_errors(groups, key), capsize=2, label=labels[i], color=colors[i])
            p.tag(bars.errorbar)
        ax.set_xticks(range(len(cats)), cats)
        ax.set_title(title + ", ± 1 standard error")
        ax.set_ylabel("%")
        ax.grid(axis="y", alpha=0.3)
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    plots.append(("SR and QR per category", p.svg(fig)))

    fig, ax = plt.subplots(figsize=(5, 3.4))
    levels = sorted({d for _, _, metrics, _ in rows for d in metrics["difficulties"]}, key=level_key)
    for label, color, (_, _, metrics, _) in zip(labels, colors, rows):
        groups = [metrics["difficulties"].get(d) for d in levels]
        p.tag(ax.errorbar(range(len(levels)), [100 * g["qr"] if g else math.nan for g in groups],
                          yerr=_errors(groups, "qr"), marker="o", capsize=3, label=label, color=color))
    ax.set_xticks(range(len(levels)), [_label(lv) for lv in levels])
    ax.set_title("QR by difficulty (mean over tasks), ± 1 SE")
    ax.set_ylabel("QR (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    plots.append(("QR by difficulty", p.svg(fig)))

    kinds = _kinds_in(group)
    pictured = [(label, color, metrics) for label, color, (_, m, metrics, _) in zip(labels, colors, rows)
                if m == "image" and metrics.get("picture_kinds")]
    if kinds and pictured:
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), sharey=True)
        width = 0.8 / len(pictured)
        for ax, key, title in ((axes[0], "sr", "Image SR"), (axes[1], "qr", "Image QR")):
            for i, (label, color, metrics) in enumerate(pictured):
                groups = [metrics["overall"]] + [(metrics["picture_kinds"].get(k) or {}).get("overall") for k in kinds]
                bars = ax.bar(np.arange(len(groups)) + i * width - 0.4 + width / 2,
                              [100 * g[key] if g else math.nan for g in groups], width, yerr=_errors(groups, key),
                              capsize=2, label=label, color=color)
                p.tag(bars.errorbar)
            ax.set_xticks(range(len(kinds) + 1), ["all"] + [_label(k) for k in kinds])
            ax.set_title(f"{title} by picture kind, ± 1 SE")
            ax.set_ylabel("%")
            ax.grid(axis="y", alpha=0.3)
        axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        plots.append(("Image SR and QR by picture kind", p.svg(fig)))

    fig, ax = plt.subplots(figsize=(5, 3.4))
    ks = sorted({int(k) for _, _, metrics, _ in rows for k in metrics["overall"]["pass_at_k"]})
    for label, color, (_, _, metrics, _) in zip(labels, colors, rows):
        curve = metrics["overall"]["pass_at_k"]
        ax.plot([int(k) for k in curve], [100 * v for v in curve.values()], marker="o", label=label, color=color)
        opt = metrics["overall"]["pass_at_k_opt"]
        ax.plot([int(k) for k in opt], [100 * v for v in opt.values()], linestyle="--", alpha=0.6, color=color)
    ax.set_title("pass@k (solid: feasible, dashed: best known)")
    ax.set_xticks(ks)
    ax.set_xlabel("k")
    ax.set_ylabel("%")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    plots.append(("pass@k", p.svg(fig)))

    for task, levels in _levels_by_task(group, board.modality).items():
        fig, ax = plt.subplots(figsize=(4.6, 3.2))
        x = np.arange(len(levels))
        for label, color, (_, _, metrics, _) in zip(labels, colors, rows):
            cells = [metrics["task_difficulty"].get(f"{task}/{lv}") for lv in levels]
            for key, style in (("sr", "-"), ("qr", "--")):
                values = [100 * c[key] if c else math.nan for c in cells]
                p.tag(ax.errorbar(x, values, yerr=_errors(cells, key), marker="o", capsize=3, linestyle=style,
                                  color=color, label=label if key == "sr" else None))
        ax.axhline(100 * BREAK_SR, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xticks(x, [_label(lv) for lv in levels])
        ax.set_title(f"{_label(task)}: SR (solid), QR (dashed), ± 1 SE", fontsize=10)
        ax.set_ylabel("%")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        plots.append((f"{task} by level", p.svg(fig)))
    return plots


def instance_of(run: Run, instance_id: str) -> Instance | None:
    """The evaluated instance, from its dataset or regenerated from the run's generation settings;
    None when neither is available (the browser then shows the response without pictures)."""
    from mmnp.dataset import find_instance, instance_seed, parse_instance_id
    from mmnp.registry import get_task

    dataset = run.results.get("dataset") if isinstance(run.results.get("dataset"), dict) else {}
    try:
        if isinstance(dataset.get("path"), str) and Path(dataset["path"]).exists():
            return find_instance(dataset["path"], instance_id, allow_modified=dataset.get("modified") is True)
        generated = dataset.get("generated")
        if isinstance(generated, dict):
            task, difficulty, index = parse_instance_id(instance_id)
            return get_task(task).generate(difficulty, instance_seed(generated["seed"], int(index)), id=instance_id)
    except (KeyError, OSError, ValueError, MMNPError):
        return None
    return None


def read_samples(path: Path) -> tuple[list[dict], str | None]:
    """The latest record per key of a samples.jsonl (`mmnp.records` owns the format), or none
    and a line naming the damage, so one damaged run does not take the report down."""
    from mmnp import records

    try:
        return records.read_samples(path), None
    except DataError as e:
        return [], f"{e}; the sample browser skips this run"
    except OSError as e:
        return [], f"{path}: cannot be read ({e.strerror or e})"


def _text(value) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)


def _verdict(r: dict) -> str:
    if r.get("feasible") is True:
        return f"feasible, objective {_text(r.get('objective'))}"
    if r.get("failed"):
        return "failed call: " + _text(r.get("error"))
    if not r.get("parsed"):
        return "unparsed: " + _text(r.get("parse_error"))
    violations = r.get("violations") if isinstance(r.get("violations"), list) else []
    return "infeasible: " + "; ".join(_text(v.get("message")) if isinstance(v, dict) else _text(v) for v in violations)


def _browser(runs: list[Run], modality: str | None, per_task: int, size: int = 480) -> tuple[str, list[str]]:
    """Per model and task, a few samples (infeasible ones first): the instance, the prompt,
    the response (as text, escaped), the verdict and the answer drawn over the instance;
    and a line per samples.jsonl with damaged lines."""
    from mmnp.registry import get_task, list_tasks

    parts, problems = [], []
    for run in runs:
        path = run.folder / "samples.jsonl"
        if per_task == 0 or not path.exists():
            continue
        records, problem = read_samples(path)
        if problem:
            problems.append(problem)
        shown = set(run.modalities()) if modality is None else {modality}
        for task in [t.name for t in list_tasks()]:
            chosen = sorted((r for r in records if r.get("task") == task and r.get("modality") in shown),
                            key=lambda r: (r.get("feasible") is True, r["key"]))[:per_task]
            for r in chosen:
                inst = instance_of(run, _text(r.get("id")))
                verdict = _verdict(r)
                response = _text(r.get("response"))
                response_shown = cap(response, TEXT_CAP)
                images = ""
                if inst is not None:
                    t = get_task(inst.task)
                    images = (f'<div class="pair"><img alt="instance" src="{_png_uri(t.render(inst, size))}">'
                              f'<img alt="answer overlay" src="{_png_uri(t.render(inst, size, answer=response))}"></div>')
                prompt = cap((inst.prompt if r.get("modality") == "text" else inst.image_prompt) if inst else "",
                             TEXT_CAP)
                ratio = r.get("ratio")
                parts.append(
                    f'<details><summary>{html.escape(run.label)} · {html.escape(cap(_text(r["key"])))} · '
                    f'<span class="{"ok" if r.get("feasible") is True else "bad"}">{html.escape(verdict[:160])}</span>'
                    f'{f" · ratio {ratio:.3f}" if _number(ratio) else ""}</summary>'
                    f"{images}<h4>Prompt ({html.escape(_text(r.get('modality')))})</h4><pre>{html.escape(prompt)}</pre>"
                    f"<h4>Response</h4><pre>{html.escape(response_shown)}</pre>"
                    f"<h4>Verdict</h4><pre>{html.escape(cap(verdict, TEXT_CAP))}</pre></details>")
    return "\n".join(parts) or "<p>(no samples)</p>", problems


def _html_board(board: Board, browser_samples: int, stderr: bool) -> str:
    plotter = _Plotter()
    body = []
    for n, group in enumerate(board.groups):
        suffix = "" if n == 0 else f"-{n + 1}"
        body.append(f'<h2 class="dataset">{html.escape(cap(group.heading(), 2 * CELL_CAP))}</h2>')
        body.extend(f'<p class="warn">{html.escape(cap(note, 2 * CELL_CAP))}</p>' for note in group.notes)
        if group.dataset is not None and group.dataset.modified:
            body.append('<p class="warn">This data was modified: its numbers do not compare with the benchmark.</p>')
        sections = _sections(board, group, "inline" if stderr else None)
        for i, (title, frame, stem) in enumerate(sections):
            body.append(f"<h3>{html.escape(title)}</h3>{_table_html(frame, stem + suffix)}")
            if i == 1:  # plots after the overall table
                figures = "".join(f'<figure><figcaption>{html.escape(t)}</figcaption>{svg}</figure>'
                                  for t, svg in _plots(board, group, plotter))
                body.append(f'<h3>Plots</h3><div class="plots" id="plots{suffix}">{figures}</div>')
    shown = [r for g in board.groups for r in g.runs]
    browser, damaged = _browser(shown, board.modality, browser_samples)
    left_out = board.left_out + damaged
    not_shown = ("<h2>Not shown</h2><ul>" + "".join(f"<li>{html.escape(cap(line, 2 * CELL_CAP))}</li>"
                                                    for line in left_out) + "</ul>" if left_out else "")
    summary = (f"{len(shown)} run(s) on {len(board.groups)} " + ("table(s) of mixed data" if board.mixed else "dataset(s)")
               + ". SR and QR in %, NP-Bench's best-of-n figures; click a column to sort.")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>MM-NP-Bench leaderboard</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<style>{_STYLE}</style></head><body>
<h1>MM-NP-Bench leaderboard</h1>
<p>{html.escape(summary)}</p>
{not_shown}
{"".join(body) or "<p>(no results)</p>"}
<h2>Samples</h2>{browser}
<script>{_SCRIPT}</script>
</body></html>
"""


def render_html(runs: list[Run], modality: str | None = None, browser_samples: int = 2, *, mix_datasets: bool = False,
                include_incomplete: bool = False, stderr: bool = False, problems: list[str] = ()) -> str:
    return _html_board(Board.build(runs, problems, modality, mix_datasets, include_incomplete), browser_samples, stderr)


# -- the command ---------------------------------------------------------------------------


def _check_out(out: Path, fmt: str) -> None:
    if out.is_dir():
        raise UsageError(f"--out {out} is a folder; give a file path such as {out / ('leaderboard.' + fmt)}")
    for parent in out.parents:
        if parent.exists() and not parent.is_dir():
            raise UsageError(f"--out {out}: {parent} is a file, not a folder; choose another path")
    if out.name in (RESULTS, "samples.jsonl", "run.json", "manifest.json"):
        raise UsageError(f"--out {out} would overwrite an mmnp file; choose another name, e.g. leaderboard.{fmt}")


def _write(out: Path, text: str) -> None:
    from mmnp.dataset import atomic_write

    try:
        atomic_write(out, text)
    except OSError as e:
        raise RunError(f"cannot write --out {out}: {e.strerror or e}; choose a writable path with free space") from None


def leaderboard_command_impl(paths: list[Path], format: str = "md", out: Path | None = None,
                             modality: str | None = None, browser_samples: int = 2, mix_datasets: bool = False,
                             include_incomplete: bool = False, stderr: bool = False) -> str | None:
    """All of `mmnp leaderboard`: read the runs, group them by dataset, render, and write `out`
    (returning None) or return the text to print. Lines about what is not shown go to stderr
    (and into md and HTML reports)."""
    from rich.markup import escape

    from mmnp.clikit import console

    if format not in FORMATS:
        raise UsageError(f"--format {format!r}: choose md, csv or html")
    if format == "html" and out is None:
        raise UsageError("--format html needs --out FILE.html")
    if browser_samples < 0:
        raise UsageError(f"--browser-samples {browser_samples}: give 0 or more")
    if out is not None:
        out = Path(out)
        _check_out(out, format)
    runs, problems = gather(paths)
    if not runs:
        raise DataError("no readable results.json: " + "; ".join(problems))
    present = sorted({m for r in runs for m in r.modalities()})
    if modality is not None and modality not in present:
        raise UsageError(f"--modality {modality!r}: no run has it; the runs have {', '.join(present) or 'none'}")
    board = Board.build(runs, problems, modality, mix_datasets, include_incomplete)
    if format == "md":
        text = _markdown_board(board, stderr)
    elif format == "csv":
        text = _csv_board(board, stderr)
    else:
        text = _html_board(board, browser_samples, stderr)
    if not (format == "md" and out is None):  # printed markdown carries these lines itself
        for line in board.left_out:
            console.print(f"[yellow]not shown:[/] {escape(line)}", highlight=False)
    if out is None:
        return text
    _write(out, text)
    console.print(f"[green]wrote[/] {escape(str(out))}", highlight=False)
    return None
