"""The leaderboard as one self-contained HTML page: sortable tables, plots with error bars (inline
SVG), and a sample browser showing, per model and task, a few samples with the instance's picture,
the prompt, the response, the verdict and the answer drawn over the instance. The verdict shown is
the answer's, verified now on the instance (never the one samples.jsonl stores, which an edit could
have changed); without the instance, the stored one, said so.

Everything from results.json or a model's response is escaped (text, never markup); the page loads
nothing (a Content-Security-Policy allows only inline style, script and data: images).
"""

from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from mmnp.core import CATEGORIES, Instance
from mmnp.errors import DataError
from mmnp.evaluation.metrics import STDERR, level_key, over_instances
from mmnp.evaluation.ranking import Board, Ranking, rows
from mmnp.evaluation.runs import Run, cap, text_of
from mmnp.evaluation.schema import number as _number
from mmnp.evaluation.tables import BREAK_SR, CELL_CAP, kinds_in, levels_by_task, report_sections

if TYPE_CHECKING:
    import pandas as pd

TEXT_CAP = 20_000  # characters of a prompt, response or verdict the HTML sample browser shows

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


def _label(text: str, limit: int | None = 60) -> str:
    """A name from results.json drawn literally ($ would start matplotlib's math mode), cut in the middle
    to `limit` characters (None: whole): run names share heads (`org/model/checkpoint-1000`, `-2000`)
    and differ in their tails, so both ends survive."""
    if limit is not None and len(text) > limit:
        head = (limit - 3) // 2
        text = text[:head] + "..." + text[len(text) - (limit - 3 - head):]
    return text.replace("$", r"\$")


def _unique(labels: list[str]) -> list[str]:
    """The legend labels, each repeated one numbered (`name #2`), so no two series share a legend entry."""
    out: list[str] = []
    for i, label in enumerate(labels):
        if labels.count(label) > 1 or label in out:
            label = f"{label} #{i + 1}"
            while label in out or label in labels:
                label += "'"
        out.append(label)
    return out


_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--")


def _style(i: int) -> tuple[str, str, str]:
    """Series i's colour, marker (lines) and hatch (bars): matplotlib's 10 colours, then again with the
    next marker and hatch, so 80 series are told apart (a colour alone repeats after 10)."""
    return f"C{i % 10}", _MARKERS[i // 10 % len(_MARKERS)], _HATCHES[i // 10 % len(_HATCHES)]


def _errors(groups: list[dict | None], key: str) -> list[float]:
    """Standard errors in % for matplotlib (NaN draws no bar where none is recorded)."""
    return [100 * g[STDERR[key]] if g and g.get(STDERR[key]) is not None else math.nan for g in groups]


@dataclass(frozen=True)
class _Series:
    """One plotted line or bar series: a (run, modality) row of the ranking."""

    label: str
    color: str
    marker: str
    hatch: str
    modality: str
    metrics: dict


def _plots(board: Board, ranking: Ranking, p: _Plotter) -> list[tuple[str, str]]:
    """(title, inline SVG) of one ranking's plots: SR/QR per category, by difficulty, by picture kind,
    pass@k and, per task evaluated at several levels, SR and QR against level."""
    found = list(rows(ranking, board.modality))
    # a long name is cut, never its marks
    labels = _unique([_label(run.label) + _label(f"{name[len(run.label):]} [{m}]", None)
                      for run, m, _, name in found])
    series = [_Series(label, *_style(i), m, metrics)
              for i, (label, (_, m, metrics, _)) in enumerate(zip(labels, found))]
    if not series:
        return []
    plots = [("SR and QR per category", _category_plot(series, p)), ("QR by difficulty", _difficulty_plot(series, p))]
    kinds = kinds_in(ranking)
    pictured = [s for s in series if s.modality == "image" and s.metrics.get("picture_kinds")]
    if kinds and pictured:
        plots.append(("Image SR and QR by picture kind", _kind_plot(pictured, kinds, p)))
    plots.append(("pass@k", _pass_at_k_plot(series, p)))
    for task, levels in levels_by_task(ranking, board.modality).items():
        plots.append((f"{task} by level", _level_plot(series, task, levels, p)))
    return plots


def _category_plot(series: list[_Series], p: _Plotter) -> str:
    """SR and QR per category and overall, one bar per series, with standard errors."""
    cats = [c for c in CATEGORIES if any(c in s.metrics["categories"] for s in series)] + ["overall"]

    def groups(s: _Series) -> list[dict | None]:
        return [s.metrics["overall"] if c == "overall" else s.metrics["categories"].get(c) for c in cats]

    return _sr_qr_bars(series, groups, cats, ("Success rate (SR), ± 1 standard error",
                                              "Quality ratio (QR), ± 1 standard error"), (13, 4.2), p)


def _sr_qr_bars(series: list[_Series], groups_of: Callable[[_Series], list[dict | None]], labels: list[str],
                titles: tuple[str, str], size: tuple[float, float], p: _Plotter) -> str:
    """SR (left) and QR (right) of each series' `groups_of` groups, one bar per series and group,
    with standard errors; a group without a figure (a category or kind the run did not have) has
    no bar, never a bar at 0, which would read as a measured failure."""
    import numpy as np

    fig, axes = p.plt.subplots(1, 2, figsize=size, sharey=True)
    width = 0.8 / len(series)
    for ax, key, title in ((axes[0], "sr", titles[0]), (axes[1], "qr", titles[1])):
        for i, s in enumerate(series):
            groups = groups_of(s)
            bars = ax.bar(np.arange(len(groups)) + i * width - 0.4 + width / 2,
                          [100 * (g or {}).get(key, math.nan) for g in groups], width, yerr=_errors(groups, key),
                          capsize=2, label=s.label, color=s.color, hatch=s.hatch, edgecolor="white", linewidth=0)
            p.tag(bars.errorbar)
        ax.set_xticks(range(len(labels)), labels)
        ax.set_title(title)
        ax.set_ylabel("%")
        ax.grid(axis="y", alpha=0.3)
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return p.svg(fig)


def _difficulty_plot(series: list[_Series], p: _Plotter) -> str:
    """QR (mean over tasks) against difficulty, one line per series."""
    fig, ax = p.plt.subplots(figsize=(5, 3.4))
    levels = sorted({d for s in series for d in s.metrics["difficulties"]}, key=level_key)
    for s in series:
        groups = [s.metrics["difficulties"].get(d) for d in levels]
        p.tag(ax.errorbar(range(len(levels)), [100 * g["qr"] if g else math.nan for g in groups],
                          yerr=_errors(groups, "qr"), marker=s.marker, capsize=3, label=s.label, color=s.color))
    ax.set_xticks(range(len(levels)), [_label(lv) for lv in levels])
    ax.set_title("QR by difficulty (mean over tasks), ± 1 SE")
    ax.set_ylabel("QR (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return p.svg(fig)


def _kind_plot(pictured: list[_Series], kinds: list[str], p: _Plotter) -> str:
    """Image SR and QR over every image instance and over the instances of each picture kind (each
    instance weighing the same: `tables.ALL_INSTANCES`), one bar per image series."""
    def groups(s: _Series) -> list[dict | None]:
        kinds_of = s.metrics["picture_kinds"]
        return [over_instances(s.metrics["tasks"].values())] + [
            over_instances(kinds_of[k]["tasks"].values()) if k in kinds_of else None for k in kinds]

    return _sr_qr_bars(pictured, groups, ["All"] + [_label(k) for k in kinds],
                       ("Image SR over each kind's instances, ± 1 SE",
                        "Image QR over each kind's instances, ± 1 SE"), (11, 3.4), p)


def _pass_at_k_plot(series: list[_Series], p: _Plotter) -> str:
    """pass@k curves: feasible (solid) and best known (dashed)."""
    fig, ax = p.plt.subplots(figsize=(5, 3.4))
    ks = sorted({int(k) for s in series for k in s.metrics["overall"]["pass_at_k"]})
    for s in series:
        curve = s.metrics["overall"]["pass_at_k"]
        ax.plot([int(k) for k in curve], [100 * v for v in curve.values()], marker=s.marker, label=s.label,
                color=s.color)
        opt = s.metrics["overall"]["pass_at_k_opt"]
        ax.plot([int(k) for k in opt], [100 * v for v in opt.values()], linestyle="--", alpha=0.6, color=s.color)
    ax.set_title("pass@k (solid: feasible, dashed: best known)")
    ax.set_xticks(ks)
    ax.set_xlabel("k")
    ax.set_ylabel("%")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return p.svg(fig)


def _level_plot(series: list[_Series], task: str, levels: list[str], p: _Plotter) -> str:
    """One task's SR (solid) and QR (dashed) against level, with the line where a model breaks."""
    import numpy as np

    fig, ax = p.plt.subplots(figsize=(4.6, 3.2))
    x = np.arange(len(levels))
    for s in series:
        cells = [s.metrics["task_difficulty"].get(f"{task}/{lv}") for lv in levels]
        for key, style in (("sr", "-"), ("qr", "--")):
            values = [100 * c[key] if c else math.nan for c in cells]
            p.tag(ax.errorbar(x, values, yerr=_errors(cells, key), marker=s.marker, capsize=3, linestyle=style,
                              color=s.color, label=s.label if key == "sr" else None))
    ax.axhline(100 * BREAK_SR, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xticks(x, [_label(lv) for lv in levels])
    ax.set_title(f"{_label(task)}: SR (solid), QR (dashed), ± 1 SE", fontsize=10)
    ax.set_ylabel("%")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return p.svg(fig)


def run_instances(run: Run) -> tuple[Callable[[str], Instance | None], str | None]:
    """Where the browser finds a run's evaluated instances: those its answers were verified on
    (`runs.verify`: its dataset, unchanged since the run, or generated again from its seed); else
    nowhere, and a line saying why (an answer drawn over another instance, with a verdict beside it,
    would be a false page)."""
    if run.instances is not None:
        return run.instances.get, None
    why = run.data_note or "its answers were not verified on its data"
    return (lambda instance_id: None), f"{run.label}: {why}; samples shown without instances, with their stored verdicts"


def _browser_samples(path: Path) -> tuple[list[dict], str | None]:
    """The latest record per key of a samples.jsonl (`mmnp.samplelog` owns the format), or none
    and a line naming the damage, so one damaged run does not take the report down."""
    from mmnp import samplelog

    try:
        return samplelog.read_samples(path), None
    except DataError as e:
        return [], f"{e}; the sample browser skips this run"
    except OSError as e:
        return [], f"{path}: cannot be read ({e.strerror or e})"


def _verified(r: dict, inst: Instance) -> dict:
    """The sample's verdict as its answer earns it on `inst` now (`runner.score`, as `mmnp eval` scores)."""
    from mmnp.evaluation.backend import Completion
    from mmnp.evaluation.runner import score

    failed = r.get("failed") is True
    completion = Completion(None if failed else text_of(r.get("response")),
                            error=(text_of(r.get("error")) or "failed call") if failed else None)
    sample = r.get("sample") if type(r.get("sample")) is int else 0
    return score(inst, text_of(r.get("modality")), sample, completion)


def _verdict(r: dict) -> str:
    if r.get("feasible") is True:
        return f"feasible, objective {text_of(r.get('objective'))}"
    if r.get("failed"):
        return "failed call: " + text_of(r.get("error"))
    if not r.get("parsed"):
        return "unparsed: " + text_of(r.get("parse_error"))
    violations = r.get("violations") if isinstance(r.get("violations"), list) else []
    return "infeasible: " + "; ".join(text_of(v.get("message")) if isinstance(v, dict) else text_of(v) for v in violations)


def _browser(runs: list[Run], modality: str | None, per_task: int, size: int = 480) -> tuple[str, list[str]]:
    """Per model and task, a few samples (infeasible ones first): the instance, the prompt,
    the response (as text, escaped), the verdict and the answer drawn over the instance;
    and a line per samples.jsonl with damaged lines."""
    from mmnp.registry import list_tasks

    parts, problems = [], []
    for run in runs:
        path = run.folder / "samples.jsonl"
        if per_task == 0 or not path.exists():
            continue
        records, problem = _browser_samples(path)
        instance_of, unseen = run_instances(run) if records else (None, None)
        problems += [line for line in (problem, unseen) if line]
        shown = set(run.modalities()) if modality is None else {modality}
        for task in [t.name for t in list_tasks()]:
            chosen = sorted((r for r in records if r.get("task") == task and r.get("modality") in shown),
                            key=lambda r: (r.get("feasible") is True, r["key"]))[:per_task]
            parts.extend(_sample_html(run, r, instance_of(text_of(r.get("id"))), size) for r in chosen)
    return "\n".join(parts) or "<p>(no samples)</p>", problems


def _sample_html(run: Run, r: dict, inst: Instance | None, size: int) -> str:
    """One sample in the browser: its key and verdict (verified now on the instance; the stored one, said
    so, without it), then (opened) the instance and the answer drawn over it, the prompt, the response
    and the verdict in full, all escaped."""
    from mmnp.registry import get_task

    fresh = _verified(r, inst) if inst is not None and r.get("modality") in ("text", "image") else None
    verdict = _verdict(fresh) if fresh is not None else "stored verdict, not verified again: " + _verdict(r)
    response = text_of(r.get("response"))
    response_shown = cap(response, TEXT_CAP)
    images = ""
    if inst is not None:
        t = get_task(inst.task)
        images = (f'<div class="pair"><img alt="instance" src="{_png_uri(t.render(inst, size))}">'
                  f'<img alt="answer overlay" src="{_png_uri(t.render(inst, size, answer=response))}"></div>')
    prompt = cap((inst.prompt if r.get("modality") == "text" else inst.image_prompt) if inst else "", TEXT_CAP)
    ratio = (fresh or r).get("ratio")
    feasible = (fresh or r).get("feasible") is True
    return (f'<details><summary>{html.escape(run.label)} · {html.escape(cap(text_of(r["key"])))} · '
            f'<span class="{"ok" if feasible else "bad"}">{html.escape(verdict[:160])}</span>'
            f'{f" · ratio {ratio:.3f}" if _number(ratio) else ""}</summary>'
            f"{images}<h4>Prompt ({html.escape(text_of(r.get('modality')))})</h4><pre>{html.escape(prompt)}</pre>"
            f"<h4>Response</h4><pre>{html.escape(response_shown)}</pre>"
            f"<h4>Verdict</h4><pre>{html.escape(cap(verdict, TEXT_CAP))}</pre></details>")


def html_board(board: Board, browser_samples: int, stderr: bool) -> str:
    """The whole page: per ranking its heading, notes, tables and plots; what is not shown; the samples."""
    plotter = _Plotter()
    body = []
    for n, ranking in enumerate(board.rankings):
        suffix = "" if n == 0 else f"-{n + 1}"
        body.append(f'<h2 class="dataset">{html.escape(cap(ranking.heading(), 2 * CELL_CAP))}</h2>')
        body.extend(f'<p class="warn">{html.escape(cap(note, 2 * CELL_CAP))}</p>' for note in ranking.notes)
        if ranking.dataset is not None and ranking.dataset.modified:
            body.append('<p class="warn">This data was modified: its numbers do not compare with the benchmark.</p>')
        sections = report_sections(board, ranking, "inline" if stderr else None)
        for i, (title, frame, stem) in enumerate(sections):
            body.append(f"<h3>{html.escape(title)}</h3>{_table_html(frame, stem + suffix)}")
            if i == 1:  # plots after the overall table
                figures = "".join(f'<figure><figcaption>{html.escape(t)}</figcaption>{svg}</figure>'
                                  for t, svg in _plots(board, ranking, plotter))
                body.append(f'<h3>Plots</h3><div class="plots" id="plots{suffix}">{figures}</div>')
    shown = [r for ranking in board.rankings for r in ranking.runs]
    browser, damaged = _browser(shown, board.modality, browser_samples)
    left_out = board.left_out + damaged
    not_shown = ("<h2>Not shown</h2><ul>" + "".join(f"<li>{html.escape(cap(line, 2 * CELL_CAP))}</li>"
                                                    for line in left_out) + "</ul>" if left_out else "")
    summary = (f"{len(shown)} run(s) ranked in {len(board.rankings)} group(s), one per "
               + ("protocol, datasets mixed" if board.mixed else "dataset and protocol")
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
