"""The leaderboard's tables (pandas frames) and the two text reports made of them: markdown (one
table per section, per ranking) and CSV (long format, every row carrying its run's dataset key).

Scores are in %, NP-Bench's layout first (SR and QR per category, then Overall = the mean of the
categories, then the macro mean over tasks), then avg@n, pass@k, optimality, diversity and failures
overall, by task, by difficulty, by level (with the level where a model breaks), by picture kind,
beside the perception probe, per feedback round, and where each run comes from and how its numbers
were checked. A cell a run has no figure for is blank, and pass@k columns go by k.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Iterator

from mmnp.core import CATEGORIES
from mmnp.evaluation.metrics import STDERR, level_key, over_instances
from mmnp.evaluation.ranking import Board, Ranking, marked, rows
from mmnp.evaluation.runs import Run, cap, text_of
from mmnp.evaluation.schema import PROBE

if TYPE_CHECKING:
    import pandas as pd

BREAK_SR = 0.5  # "breaks at": the lowest level whose SR falls below this
CELL_CAP = 300  # characters of any table cell or line of text a report shows
K_COLUMN = re.compile(r"(pass@|distinct@)(\d+)(\(opt\))?")  # pass@k, pass@k(opt), distinct@n


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
    """A table of `records` with its columns in `_ordered` order and blank cells where a record has no
    value (a run with fewer samples has no pass@10: blank, never "nan")."""
    import pandas as pd

    return _tidy(pd.DataFrame(records, dtype=object))


def _tidy(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame[_ordered(list(frame.columns))]
    return frame.astype(object).where(frame.notna(), "")


def _ordered(columns: list[str]) -> list[str]:
    """`columns` in order of first appearance, but each family of k-columns (pass@k, pass@k(opt),
    distinct@n) sorted by k, numerically (pass@2 before pass@10), where its first member stood."""
    families: dict[tuple[str, str], list[str]] = {}
    for column in columns:
        match = K_COLUMN.fullmatch(str(column))
        if match:
            families.setdefault((match[1], match[3] or ""), []).append(column)
    ordered: list[str] = []
    for column in columns:
        match = K_COLUMN.fullmatch(str(column))
        if not match:
            ordered.append(column)
        elif column == families[match[1], match[3] or ""][0]:
            ordered.extend(sorted(families[match[1], match[3] or ""], key=lambda c: int(K_COLUMN.fullmatch(c)[2])))
    return ordered


def _row_start(run: Run, name: str, m: str | None, mixed: bool) -> dict:
    """The cells that open a row: the model, its modality, and its dataset when datasets are mixed."""
    row = {"model": name}
    if m is not None:
        row["modality"] = m
    if mixed:
        row["dataset"] = run.dataset.short()
    return row


def leaderboard_frame(ranking: Ranking, modality: str | None, se: str | None = None) -> pd.DataFrame:
    """NP-Bench's layout: per category SR and QR, then Overall (the mean of the categories) and the
    macro mean over tasks (METRICS.md), one row per (model, modality), best Overall QR first."""
    ranked = []
    for run, m, metrics, name in rows(ranking, modality):
        row = _row_start(run, name, m, ranking.dataset is None)
        for cat in CATEGORIES:
            c = metrics["categories"].get(cat)
            row.update(_cells(c, "sr", f"{cat} SR", se))
            row.update(_cells(c, "qr", f"{cat} QR", se))
        row.update(_cells(metrics["overall"], "sr", "Overall SR", se))
        row.update(_cells(metrics["overall"], "qr", "Overall QR", se))
        row.update(_cells(metrics.get("macro_over_tasks"), "sr", "Macro SR", se))  # blank where an older mmnp kept none
        row.update(_cells(metrics.get("macro_over_tasks"), "qr", "Macro QR", se))
        ranked.append((-metrics["overall"]["qr"], len(ranked), row))
    return _frame([row for *_, row in sorted(ranked, key=lambda t: t[:2])])


def detail_frame(ranking: Ranking, modality: str | None, scope: str, se: str | None = None) -> pd.DataFrame:
    """One row per (model, modality, overall | macro over tasks | category | task | difficulty | task and
    difficulty) with every scalar metric, pass@k and distinct@n."""
    records = []
    for run, m, metrics, name in rows(ranking, modality):
        macro = metrics.get("macro_over_tasks")
        groups = {"overall": {"overall": metrics["overall"]}, "macro": {"macro over tasks": macro} if macro else {},
                  "category": metrics["categories"], "task": metrics["tasks"], "difficulty": metrics["difficulties"],
                  "task_difficulty": metrics["task_difficulty"]}[scope]
        for key, g in groups.items():
            records.append(_detail_row({**_row_start(run, name, m, ranking.dataset is None), scope: key}, g, se))
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


def kinds_in(ranking: Ranking) -> list[str]:
    """The picture kinds of the ranking's image runs, in `mmnp.render.PICTURE_KINDS` order."""
    from mmnp.render import PICTURE_KINDS

    found = {k for run in ranking.runs for k in ((run.results["metrics"].get("image") or {}).get("picture_kinds") or {})}
    return [k for k in PICTURE_KINDS if k in found] + sorted(found - set(PICTURE_KINDS))


ALL_INSTANCES = "all instances"  # the picture-kind rows over every instance of a kind


def _kind_scopes(image: dict) -> Iterator[tuple[str, dict, dict[str, dict | None]]]:
    """(scope, the total's group, each kind's group) over all instances, per task, and per task and
    level where the level mixes kinds (there the kinds compare at one difficulty). The first row
    weighs every instance the same, the total's and each kind's alike (`over_instances` of its
    tasks): the categories' mean would weigh one min_bisection drawing as a third of the drawings."""
    kinds = image["picture_kinds"]
    yield (ALL_INSTANCES, over_instances(image["tasks"].values()),
           {k: over_instances(b["tasks"].values()) for k, b in kinds.items()})
    for task, total in image["tasks"].items():
        yield task, total, {k: b["tasks"].get(task) for k, b in kinds.items()}
    for cell, total in image["task_difficulty"].items():
        split = {k: b["task_difficulty"].get(cell) for k, b in kinds.items()}
        if sum(g is not None for g in split.values()) > 1:
            yield cell, total, split


def kind_frame(ranking: Ranking, se: str | None = None) -> pd.DataFrame:
    """Image SR and QR per picture kind beside the total: overall, per task, and per task and level
    where a level mixes kinds, so perception of a drawing is not averaged with reading a list."""
    order = kinds_in(ranking)
    records = []
    for run, _, image, name in rows(ranking, "image"):
        if not image.get("picture_kinds"):
            continue
        for scope, total, split in _kind_scopes(image):
            row = {**_row_start(run, name, None, ranking.dataset is None), "scope": scope}
            row.update(_cells(total, "sr", "image SR", se))
            row.update(_cells(total, "qr", "image QR", se))
            for kind in order:
                g = split.get(kind)
                row.update(_cells(g, "sr", f"{kind} SR", se))
                row.update(_cells(g, "qr", f"{kind} QR", se))
                row[f"{kind} n"] = g["instances"] if g else ""
            records.append(row)
    return _frame(records)


def levels_by_task(ranking: Ranking, modality: str | None) -> dict[str, list[str]]:
    """Task -> its levels (difficulty names) in order, for tasks evaluated at two or more."""
    levels: dict[str, set[str]] = {}
    for _, _, metrics, _ in rows(ranking, modality):
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


def level_frame(ranking: Ranking, modality: str | None, se: str | None = None) -> pd.DataFrame:
    """SR and QR per task and level, one row per (task, model, modality), with the level where
    the model breaks (SR below 50 %)."""
    by_task = levels_by_task(ranking, modality)
    columns = sorted({lv for ls in by_task.values() for lv in ls}, key=level_key)
    records = []
    for task, levels in by_task.items():
        for run, m, metrics, name in rows(ranking, modality):
            row = {"task": task, **_row_start(run, name, m, ranking.dataset is None)}
            for level in columns:
                cell = metrics["task_difficulty"].get(f"{task}/{level}")
                row.update(_cells(cell, "sr", f"{level} SR", se))
                row.update(_cells(cell, "qr", f"{level} QR", se))
            row["breaks at"] = breaks_at(metrics, task, levels)
            records.append(row)
    return _frame(records)


def probe_frame(ranking: Ranking, se: str | None = None) -> pd.DataFrame:
    """Text SR/QR, image SR/QR and the perception probe's recognition side by side, overall and
    per task: the modality gap split into perception (recognition) and reasoning."""
    records = []
    for run in ranking.runs:
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
            row = {**_row_start(run, marked(run), None, ranking.dataset is None), "task": task}
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


def runs_frame(ranking: Ranking) -> pd.DataFrame:
    """Where each shown number comes from: one row per run with its folder, endpoint, time, version,
    samples n and feedback rounds, completeness, how its numbers were checked against its samples and
    data, and its image-delivery check (blank where results.json predates them)."""
    records = []
    for run in ranking.runs:
        r = run.results
        probe = r.get("image_probe") if isinstance(r.get("image_probe"), dict) else {}
        protocol = run.protocol
        records.append({**_row_start(run, run.label, None, ranking.dataset is None), "folder": str(run.folder),
                        "endpoint": run.endpoint(), "timestamp": text_of(r.get("timestamp")),
                        "mmnp": text_of(r.get("mmnp_version")), "n": text_of(protocol.samples),
                        "rounds": protocol.rounds if protocol.samples is not None else "",
                        "complete": run.incomplete() or "yes", "verified": run.checked,
                        "image delivery": run.delivery() if probe else ""})
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


def report_sections(board: Board, ranking: Ranking, se: str | None) -> list[tuple[str, pd.DataFrame, str]]:
    """(title, table, id stem) of one ranking's tables, in report order."""
    m = board.modality
    unit = "in %" + (", ± standard error over instances" if se else "")
    sections = [(f"Leaderboard (NP-Bench layout: SR and QR {unit}, best of n samples; Overall = mean of the "
                 "categories, Macro = mean of the tasks)", leaderboard_frame(ranking, m, se), "leaderboard"),
                ("Overall: avg@n, pass@k, optimality, diversity and failures", detail_frame(ranking, m, "overall", se),
                 "overall"),
                ("By task", detail_frame(ranking, m, "task", se), "by-task"),
                ("By difficulty: the mean over the tasks at each difficulty (each task weighs the same, not each "
                 "instance)", detail_frame(ranking, m, "difficulty", se), "by-difficulty")]
    if levels_by_task(ranking, m):
        sections.append((f"By level: SR and QR per task and level; breaks at = the lowest level with SR below "
                         f"{100 * BREAK_SR:.0f} %", level_frame(ranking, m, se), "by-level"))
    if m in (None, "image") and kinds_in(ranking):
        sections.append(("Image scores by picture kind (drawing, edge_list, table, chart): SR and QR over the "
                         "instances of each kind beside those over every image instance (each instance weighing "
                         "the same, not the categories' mean of the Overall column); task/level rows where a level "
                         "mixes kinds",
                         kind_frame(ranking, se), "by-kind"))
    if m is None and any(r.probe() for r in ranking.runs):
        sections.append(("Perception and reasoning: text and image SR/QR beside the perception probe's "
                         "recognition accuracy and field F1", probe_frame(ranking, se), "probe"))
    rounds = rounds_frame(ranking, m)
    if not rounds.empty:
        sections.append(("Feedback rounds (--rounds): overall SR and QR at each round r (not SR@1, the mean over "
                         "samples), a sample's answer at round r being its last up to r", rounds, "rounds"))
    sections.append(("Runs", runs_frame(ranking), "runs"))
    return sections


def _rounds_of(run: Run, modality: str | None) -> Iterator[tuple[str, dict]]:
    """(modality, its overall SR and QR at each round) of a run made with --rounds K > 1."""
    for m in run.modalities() if modality is None else [modality]:
        rounds = ((run.results["metrics"].get(m) or {}).get("overall") or {}).get("rounds")
        if isinstance(rounds, dict):
            yield m, rounds


def rounds_frame(ranking: Ranking, modality: str | None) -> pd.DataFrame:
    """Overall SR and QR at each round per run and modality, for runs made with --rounds K > 1."""
    records = []
    for run in ranking.runs:
        for m, rounds in _rounds_of(run, modality):
            row = _row_start(run, marked(run, m), m, ranking.dataset is None)
            for r in sorted(rounds, key=int):
                row[f"SR round {r}"] = _pct(rounds[r].get("sr"))
                row[f"QR round {r}"] = _pct(rounds[r].get("qr"))
            records.append(row)
    return _frame(records)


def markdown_board(board: Board, stderr: bool) -> str:
    """The markdown report: what is not shown, then per ranking its heading, notes and tables."""
    parts = ["# MM-NP-Bench leaderboard\n"]
    if board.left_out:
        parts.append("Not shown:\n\n" + "".join(f"- {_md(line, 2 * CELL_CAP)}\n" for line in board.left_out))
    for ranking in board.rankings:
        parts.append(f"## {_md(ranking.heading(), 2 * CELL_CAP)}\n")
        parts.extend(f"Note: {_md(note, 2 * CELL_CAP)}\n" for note in ranking.notes)
        for title, frame, _ in report_sections(board, ranking, "inline" if stderr else None):
            parts.append(f"### {title}\n\n{_markdown(frame)}")
    if not board.rankings:
        parts.append("(no results)\n")
    return "\n".join(parts)


def csv_board(board: Board, stderr: bool) -> str:
    """Long format: one row per (model, modality, scope, name) with every metric, each row
    carrying its run's dataset key, whether that data was modified, whether the run is complete, its
    protocol (samples n, feedback rounds) and how its numbers were checked (`verified`: answers
    verified again on its data, numbers recomputed from its samples' verdicts, or no)."""
    import pandas as pd

    frames = []
    for ranking in board.rankings:
        for run in ranking.runs:
            alone = Ranking([run], run.dataset, run.protocol)
            ours = [detail_frame(alone, board.modality, scope, "column" if stderr else None)
                    .rename(columns={scope: "name"}).assign(scope=scope)
                    for scope in ("overall", "macro", "category", "task", "difficulty", "task_difficulty")]
            image = run.results["metrics"].get("image") or {}
            if board.modality in (None, "image") and image.get("picture_kinds"):
                ours.append(_frame([_detail_row({"model": marked(run, "image"), "modality": "image", "name": kind + (
                    "" if scope == ALL_INSTANCES else f"/{scope}"), "scope": "picture_kind"}, g, "column" if stderr else None)
                    for scope, _, split in _kind_scopes(image) for kind, g in split.items() if g is not None]))
            ours.append(_frame([{"model": marked(run, m), "modality": m, "name": f"round {r}", "scope": "rounds",
                                 "SR": _pct(rounds[r].get("sr")), "QR": _pct(rounds[r].get("qr"))}
                                for m, rounds in _rounds_of(run, board.modality) for r in sorted(rounds, key=int)]))
            probe = run.probe() if board.modality is None else None
            if probe:
                ours.append(_frame([{"model": marked(run), "modality": PROBE, "name": name, "scope": "probe",
                                           "recognition": _pct(p["recognition_accuracy"]),
                                           "field F1": _pct(p["field_f1"]), "instances": p.get("instances", "")}
                                          for name, p in [("overall", probe["overall"]),
                                                          *(probe.get("tasks") or {}).items()]]))
            protocol = run.protocol
            for f in ours:
                f.insert(0, "dataset", run.dataset.key)
                f.insert(1, "dataset_modified", run.dataset.modified)
                f.insert(2, "complete", run.incomplete() is None)
                f.insert(3, "n", "" if protocol.samples is None else protocol.samples)
                f.insert(4, "rounds", "" if protocol.samples is None else protocol.rounds)
                f.insert(5, "verified", run.verified)
            frames.extend(ours)
    frames = [f for f in frames if not f.empty]
    return _tidy(pd.concat(frames, ignore_index=True)).to_csv(index=False) if frames else ""
