"""Leaderboards over `mmnp eval` outputs: markdown, CSV, and a self-contained HTML report
(sortable tables, plots, a sample browser with the answer drawn over each instance)."""

from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mmnp.core import CATEGORIES, Instance
from mmnp.dataset import find_instance, instance_seed
from mmnp.registry import get_task, list_tasks


@dataclass
class Run:
    model: str
    folder: Path
    results: dict

    def modalities(self) -> list[str]:
        return [m for m, metrics in self.results["metrics"].items() if metrics]


def collect(paths: list[Path]) -> list[Run]:
    """Runs under the given paths: each a model folder, or a folder of model folders."""
    runs = []
    for path in paths:
        path = Path(path)
        folders = [path] if (path / "results.json").exists() else sorted(p.parent for p in path.glob("*/results.json"))
        if not folders:
            raise FileNotFoundError(f"{path} holds no results.json; give the --output-path of `mmnp eval` "
                                    "or one of its model folders")
        for folder in folders:
            results = json.loads((folder / "results.json").read_text())
            runs.append(Run(results["model"], folder, results))
    if len({(r.model, str(r.folder)) for r in runs}) < len(runs):
        raise ValueError("the same results folder was given twice")
    return runs


def _rows(runs: list[Run], modality: str | None):
    for run in runs:
        for m in run.modalities():
            if modality is None or m == modality:
                yield run, m, run.results["metrics"][m]


def _pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.1f}"


def leaderboard_frame(runs: list[Run], modality: str | None) -> pd.DataFrame:
    """NP-Bench's layout: per category SR and QR, then Overall, one row per (model, modality)."""
    records = []
    for run, m, metrics in _rows(runs, modality):
        row = {"model": run.model, "modality": m}
        for cat in CATEGORIES:
            c = metrics["categories"].get(cat)
            row[f"{cat} SR"] = _pct(c and c["sr"])
            row[f"{cat} QR"] = _pct(c and c["qr"])
        row["Overall SR"] = _pct(metrics["overall"]["sr"])
        row["Overall QR"] = _pct(metrics["overall"]["qr"])
        records.append(row)
    frame = pd.DataFrame(records)
    return frame.sort_values("Overall QR", key=lambda s: s.map(lambda v: float(v or 0)), ascending=False) if records else frame


def detail_frame(runs: list[Run], modality: str | None, scope: str) -> pd.DataFrame:
    """One row per (model, modality, task | difficulty | overall) with every scalar metric,
    pass@k and distinct@n."""
    records = []
    for run, m, metrics in _rows(runs, modality):
        groups = {"overall": {"overall": metrics["overall"]}, "task": metrics["tasks"],
                  "difficulty": metrics["difficulties"], "task_difficulty": metrics["task_difficulty"]}[scope]
        n = run.results["config"]["samples"]
        for name, g in groups.items():
            row = {"model": run.model, "modality": m, scope: name, "SR": _pct(g["sr"]), "QR": _pct(g["qr"]),
                   "SR@1": _pct(g["sr_at_1"]), "QR@1": _pct(g["qr_at_1"]), "opt": _pct(g["opt_ratio"])}
            for k, v in g["pass_at_k"].items():
                row[f"pass@{k}"] = _pct(v)
            row[f"pass@{n}(opt)"] = _pct(g["pass_at_k_opt"].get(str(n)))
            row[f"distinct@{n}"] = f"{g['distinct']:.2f}"
            row["fail %"] = _pct(g["fail_rate"])
            row["instances"] = g["instances"]
            records.append(row)
    return pd.DataFrame(records)


def _markdown(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(no results)\n"
    cols = list(frame.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(str(row[c]).replace("|", "\\|") for c in cols) + " |")
    return "\n".join(lines) + "\n"


def render_markdown(runs: list[Run], modality: str | None = None) -> str:
    parts = ["## Leaderboard (NP-Bench layout: SR and QR in %, best of n samples)\n",
             _markdown(leaderboard_frame(runs, modality)),
             "\n## Overall: avg@n, pass@k, optimality, diversity and failures\n",
             _markdown(detail_frame(runs, modality, "overall")),
             "\n## By task\n", _markdown(detail_frame(runs, modality, "task")),
             "\n## By difficulty\n", _markdown(detail_frame(runs, modality, "difficulty"))]
    return "\n".join(parts)


def render_csv(runs: list[Run], modality: str | None = None) -> str:
    """Long format: one row per (model, modality, scope, name) with every metric."""
    frames = []
    for scope in ("overall", "task", "difficulty", "task_difficulty"):
        f = detail_frame(runs, modality, scope)
        if not f.empty:
            frames.append(f.rename(columns={scope: "name"}).assign(scope=scope))
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return frame.to_csv(index=False)


# -- HTML ---------------------------------------------------------------------------------

_STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1500px}
table{border-collapse:collapse;margin:8px 0 24px;font-size:13px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f0f0f0;cursor:pointer;user-select:none}th:hover{background:#e0e7ff}
td:first-child,th:first-child{text-align:left}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f7;padding:8px;max-height:320px;overflow:auto;font-size:12px}
details{border:1px solid #ddd;margin:6px 0;padding:4px 8px}summary{cursor:pointer}
.ok{color:#2c7a2c;font-weight:bold}.bad{color:#c62828;font-weight:bold}
.pair{display:flex;gap:12px;flex-wrap:wrap}.pair img{max-width:560px;border:1px solid #ddd}
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
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    return f'<table class="sortable" id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _png_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


def _plots(runs: list[Run], modality: str | None) -> list[tuple[str, bytes]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rows = list(_rows(runs, modality))
    if not rows:
        return []
    labels = [f"{run.model} [{m}]" for run, m, _ in rows]
    plots = []

    cats = [c for c in CATEGORIES if any(c in metrics["categories"] for _, _, metrics in rows)] + ["overall"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), sharey=True)
    width = 0.8 / len(rows)
    for ax, key, title in ((axes[0], "sr", "Success rate (SR)"), (axes[1], "qr", "Quality ratio (QR)")):
        for i, (_, _, metrics) in enumerate(rows):
            values = [100 * (metrics["overall"] if c == "overall" else metrics["categories"].get(c, {})).get(key, 0)
                      for c in cats]
            ax.bar(np.arange(len(cats)) + i * width - 0.4 + width / 2, values, width, label=labels[i])
        ax.set_xticks(range(len(cats)), cats)
        ax.set_title(title)
        ax.set_ylabel("%")
        ax.grid(axis="y", alpha=0.3)
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    plots.append(("SR and QR per category", _fig_png(fig, plt)))

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, (_, _, metrics) in zip(labels, rows):
        levels = list(metrics["difficulties"])
        ax.plot(levels, [100 * metrics["difficulties"][d]["qr"] for d in levels], marker="o", label=label)
    ax.set_title("QR by difficulty")
    ax.set_ylabel("QR (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    plots.append(("QR by difficulty", _fig_png(fig, plt)))

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, (_, _, metrics) in zip(labels, rows):
        curve = metrics["overall"]["pass_at_k"]
        ax.plot([int(k) for k in curve], [100 * v for v in curve.values()], marker="o", label=label)
        opt = metrics["overall"]["pass_at_k_opt"]
        ax.plot([int(k) for k in opt], [100 * v for v in opt.values()], linestyle="--", alpha=0.6)
    ax.set_title("pass@k (solid: feasible, dashed: best-known objective)")
    ax.set_xlabel("k")
    ax.set_ylabel("%")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    plots.append(("pass@k", _fig_png(fig, plt)))
    return plots


def _fig_png(fig, plt) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def instance_of(run: Run, instance_id: str) -> Instance | None:
    """The evaluated instance, from its dataset or regenerated from the run's generation settings."""
    dataset = run.results.get("dataset", {})
    if dataset.get("path") and Path(dataset["path"]).exists():
        try:
            return find_instance(dataset["path"], instance_id)
        except KeyError:
            return None
    generated = dataset.get("generated")
    if generated:
        task, difficulty, index = instance_id.rsplit("-", 2)
        return get_task(task).generate(difficulty, instance_seed(generated["seed"], int(index)), id=instance_id)
    return None


def _browser(runs: list[Run], modality: str | None, per_task: int, size: int = 480) -> str:
    """Per model and task, a few samples (infeasible ones first): the instance, the prompt,
    the response (as text, escaped), the verdict and the answer drawn over the instance."""
    parts = []
    for run in runs:
        path = run.folder / "samples.jsonl"
        if not path.exists():
            continue
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        latest = {r["key"]: r for r in records}
        for task in [t.name for t in list_tasks()]:
            chosen = sorted((r for r in latest.values() if r["task"] == task and (modality in (None, r["modality"]))),
                            key=lambda r: (r["feasible"], r["key"]))[:per_task]
            for r in chosen:
                inst = instance_of(run, r["id"])
                verdict_class = "ok" if r["feasible"] else "bad"
                verdict = ("feasible, objective " + str(r["objective"]) if r["feasible"] else
                           "failed call: " + str(r["error"]) if r["failed"] else
                           "unparsed: " + str(r["parse_error"]) if not r["parsed"] else
                           "infeasible: " + "; ".join(v["message"] for v in r["violations"]))
                images = ""
                if inst is not None:
                    t = get_task(inst.task)
                    images = (f'<div class="pair"><img alt="instance" src="{_png_uri(t.render(inst, size))}">'
                              f'<img alt="answer overlay" src="{_png_uri(t.render(inst, size, answer=r["response"] or ""))}"></div>')
                prompt = inst.prompt if inst is not None and r["modality"] == "text" else (inst.image_prompt if inst else "")
                parts.append(
                    f'<details><summary>{html.escape(run.model)} · {html.escape(r["key"])} · '
                    f'<span class="{verdict_class}">{html.escape(verdict[:160])}</span> · ratio {r["ratio"]:.3f}</summary>'
                    f"{images}<h4>Prompt ({html.escape(r['modality'])})</h4><pre>{html.escape(prompt)}</pre>"
                    f"<h4>Response</h4><pre>{html.escape(r['response'] or '')}</pre>"
                    f"<h4>Verdict</h4><pre>{html.escape(verdict)}</pre></details>")
    return "\n".join(parts) or "<p>(no samples)</p>"


def render_html(runs: list[Run], modality: str | None = None, browser_samples: int = 2) -> str:
    plots = "".join(f"<h3>{html.escape(title)}</h3><img alt=\"{html.escape(title)}\" src=\"{_png_uri(png)}\">"
                    for title, png in _plots(runs, modality))
    models = ", ".join(html.escape(r.model) for r in runs)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>MM-NP-Bench leaderboard</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<style>{_STYLE}</style></head><body>
<h1>MM-NP-Bench leaderboard</h1>
<p>Models: {models}. SR and QR in %, NP-Bench's best-of-n figures; click a column to sort.</p>
<h2>Leaderboard</h2>{_table_html(leaderboard_frame(runs, modality), "leaderboard")}
<h2>Overall: avg@n, pass@k, optimality, diversity, failures</h2>{_table_html(detail_frame(runs, modality, "overall"), "overall")}
<h2>Plots</h2>{plots}
<h2>By task</h2>{_table_html(detail_frame(runs, modality, "task"), "by-task")}
<h2>By difficulty</h2>{_table_html(detail_frame(runs, modality, "difficulty"), "by-difficulty")}
<h2>Samples</h2>{_browser(runs, modality, browser_samples)}
<script>{_SCRIPT}</script>
</body></html>
"""
