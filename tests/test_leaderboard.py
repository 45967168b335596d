from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from mmnp.evaluation.backend import Sampling, make_backend
from mmnp.evaluation.leaderboard import collect, render_csv, render_html, render_markdown
from mmnp.evaluation.runner import EvalConfig, evaluate
from mmnp.evaluation.sources import load_instances

HOSTILE_MODEL = '<img src=x onerror="document.title=\'pwned\'">'
HOSTILE_RESPONSE = '<script>document.title="pwned"</script>Answer: [0, 1]'


@pytest.fixture(scope="module")
def results_dir(small_dataset, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("results")
    instances, loader, dataset = load_instances(small_dataset, "all", ["easy", "medium"], 0, 0, None, True)
    for model in ("solver:heuristic", "solver:random"):
        evaluate(make_backend(model), instances, EvalConfig(model, ("text", "image"), 3, Sampling(temperature=0.7)),
                 out, image_loader=loader, dataset=dataset)
    # a third "model" whose name and responses try to inject HTML and script
    hostile = out / "hostile"
    shutil.copytree(out / "solver_random", hostile)
    results = json.loads((hostile / "results.json").read_text())
    results["model"] = HOSTILE_MODEL
    (hostile / "results.json").write_text(json.dumps(results))
    lines = [json.loads(line) for line in (hostile / "samples.jsonl").read_text().splitlines()]
    for r in lines:
        r["response"] = HOSTILE_RESPONSE
    (hostile / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return out


def test_markdown_has_the_np_bench_layout(results_dir):
    text = render_markdown(collect([results_dir]))
    header = next(line for line in text.splitlines() if line.startswith("| model | modality | planning SR"))
    for cat in ("planning", "graph", "selection", "partition", "schedule"):
        assert f"{cat} SR" in header and f"{cat} QR" in header
    assert "Overall SR | Overall QR" in header
    heuristic = next(line for line in text.splitlines() if line.startswith("| solver:heuristic | text |"))
    assert heuristic.count("100.0") == 12  # SR and QR of 5 categories and overall
    assert "pass@3" in text and "distinct@3" in text and "pass@3(opt)" in text


def test_csv_matches_results_json(results_dir):
    rows = list(csv.DictReader(io.StringIO(render_csv(collect([results_dir / "solver_random"])))))
    results = json.loads((results_dir / "solver_random" / "results.json").read_text())
    overall = next(r for r in rows if r["scope"] == "overall" and r["modality"] == "image")
    assert float(overall["QR"]) == pytest.approx(100 * results["metrics"]["image"]["overall"]["qr"], abs=0.05)
    tasks = {r["name"] for r in rows if r["scope"] == "task"}
    assert tasks == set(results["metrics"]["text"]["tasks"])


def test_html_escapes_names_and_responses(results_dir):
    page = render_html(collect([results_dir]), browser_samples=1)
    assert HOSTILE_MODEL not in page and "<script>document.title" not in page
    assert "&lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;" in page
    assert page.count("<script>") == 1  # only the report's own sorting script


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
    page = render_html(collect([results_dir]), browser_samples=1)
    report.write_text(page)
    dom, errors = _load(report, tmp_path)
    assert errors == []
    assert '<table class="sortable" id="leaderboard">' in dom
    assert dom.count("<tr>") > 10 and "solver:heuristic" in dom
    assert "<title>MM-NP-Bench leaderboard</title>" in dom  # no injected script changed it
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
    from typer.testing import CliRunner

    from mmnp.cli import app

    runner = CliRunner()
    out = tmp_path / "board.html"
    result = runner.invoke(app, ["leaderboard", str(results_dir), "--format", "html", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("<!DOCTYPE html>")
    result = runner.invoke(app, ["leaderboard", str(results_dir / "solver_heuristic"), "--modality", "text"])
    assert result.exit_code == 0 and "| solver:heuristic | text |" in result.stdout and "| image |" not in result.stdout
    result = runner.invoke(app, ["leaderboard", str(tmp_path / "nothing")])
    assert result.exit_code == 2 and "holds no results.json" in result.output
