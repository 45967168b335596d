"""Per task and difficulty, on one core: generation speed with and without images,
verification speed, the worst time on hostile 1 MB inputs, the heuristic's gap to the
best-known objective, and our renderer against networkx + matplotlib.

    python benchmarks/bench_tasks.py [--tasks all] [--difficulty easy,medium,hard] [--count 100]
    python benchmarks/bench_tasks.py --compare REV [--difficulty medium] [--repeat 3]

Times are CPU seconds of this process (`time.process_time`; everything here is single-
threaded), so the figures are per core; a loaded machine still slows them (shared caches,
hyper-threads), which is why `--compare` runs the old and the new code side by side. Each
speed measure follows an untimed warm-up of five instances (`warm_up`): the figures are a
long run's per-instance rate, not its first-instance costs.

`--compare REV` measures only generation speed (instances/s without and with images) of
the code at git revision REV (built into a temporary folder, imported there by a worker
process) and of the working tree (a second worker), the two taking turns batch by batch on
the same seeds (`--repeat` batches of `--count`), and prints the medians (and the best
batch) and the median of the batch-by-batch ratios, with the load average before and after.

Targets (medium): >= 120 instances/s with images; >= 50,000 verifications/s; < 20 ms
for any 1 MB input; heuristic within 5% of best-known on average; rendering >= 3x faster.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mmnp
from mmnp.clikit import script_main
from mmnp.errors import UsageError
from mmnp.registry import resolve_tasks
from mmnp.render import check_image_size
from mmnp.task import Task

WARM_UP_SEEDS = range(10**9, 10**9 + 5)  # untimed instances before each speed measure (`warm_up`), seeds
#   no measure uses (an instance's own strings, e.g. its title, would otherwise be drawn in advance)
HOSTILE = [
    "Answer: " + "[" * 500_000 + "]" * 500_000,
    "Answer: [" + ",".join(["1"] * 400_000) + "]",
    "Answer: " + "9" * 1_000_000,
    "answer answer answer:" * 50_000,
    "Answer: [0, 1]\n" * 70_000,
    "Answer: " + "é漢🙂\u202e" * 250_000,
    "Answer: " + " -> ".join(["7"] * 200_000),
    "x" * 1_000_000 + "Answer: [1, 2, 3]",
    "Answer: {" + ", ".join(f"{i}: {i}" for i in range(120_000)) + "}",
    "Answer: [" + '"' * 1_000_000 + "]",
]


def rate(fn, items, min_seconds: float = 0.5) -> float:
    """Calls per second of fn over items, repeated until min_seconds have passed."""
    calls, start = 0, time.process_time()
    while True:
        for item in items:
            fn(item)
        calls += len(items)
        elapsed = time.process_time() - start
        if elapsed >= min_seconds:
            return calls / elapsed


def nx_matplotlib_png(inst, size: int) -> bytes | None:
    """The way peer benchmarks draw: networkx on matplotlib, same content and pixel size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx

    data = inst.data
    if "edges" in data and "n" in data:
        graph = nx.Graph()
        graph.add_nodes_from(range(data["n"]))
        graph.add_edges_from(map(tuple, data["edges"]))
        pos = nx.circular_layout(graph)
    elif "coords" in data:
        graph = nx.Graph()
        graph.add_nodes_from(range(len(data["coords"])))
        pos = {i: tuple(c) for i, c in enumerate(data["coords"])}
    else:
        return None
    fig = plt.figure(figsize=(size / 100, size / 100), dpi=100)
    nx.draw(graph, pos, with_labels=True, node_color="#dde9fc", edgecolors="black", node_size=300, font_size=9)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def bench(task: Task, difficulty: str, count: int, optimal_count: int, size: int) -> dict:
    seeds = list(range(count))
    warm_up(task, difficulty, size)
    start = time.process_time()
    instances = [task.generate(difficulty, s) for s in seeds]
    gen = count / (time.process_time() - start)
    start = time.process_time()
    for s in seeds:
        task.picture(task.generate(difficulty, s), size)
    gen_img = count / (time.process_time() - start)

    records = [i.to_record() for i in instances]
    answers = [(r, "I worked through the constraints step by step.\n" +
                task.format_answer(r["reference"]["heuristic"]["solution"])) for r in records]
    verify = rate(lambda pair: task.verify(*pair), answers)
    worst = 0.0
    for text in HOSTILE:
        start = time.process_time()
        task.verify(records[0], text)
        worst = max(worst, time.process_time() - start)

    gaps = []
    for inst in instances[:optimal_count]:
        solved = task.generate(difficulty, inst.seed, optimal=True)
        h, best = solved.reference_objective, solved.best_objective
        gaps.append(best / h if task.direction == "min" else h / best)

    subset = instances[: min(count, 20)]
    ours = rate(lambda inst: task.render(inst, size), subset, 0.3)
    peer = None
    if nx_matplotlib_png(subset[0], size) is not None:
        peer = rate(lambda inst: nx_matplotlib_png(inst, size), subset, 0.3)
    return {
        "task": task.name,
        "difficulty": difficulty,
        "instances_per_s": gen,
        "instances_per_s_with_images": gen_img,
        "verifications_per_s": verify,
        "worst_1mb_ms": worst * 1000,
        "heuristic_over_best": statistics.mean(gaps) if gaps else None,
        "render_speedup_vs_nx_mpl": ours / peer if peer else None,
    }


def warm_up(task: Task, difficulty: str, size: int) -> None:
    """Generate and draw a few instances untimed: a run's one-time costs (fonts opened, lazy
    imports, the first word tiles drawn: ~40 ms) would otherwise weigh on a 50-instance
    measure (-10%) as they never do on a real `mmnp generate`."""
    for s in WARM_UP_SEEDS:
        task.picture(task.generate(difficulty, s), size)


def speed(name: str, difficulty: str, count: int, size: int, first: int = 0) -> dict:
    """Instances/s of one task and difficulty: generation alone, and generation plus picture
    (Task.picture, as `mmnp generate` draws it), seeds first..first+count-1, after a warm-up."""
    from mmnp.registry import get_task

    task = get_task(name)
    warm_up(task, difficulty, size)
    seeds = range(first, first + count)
    start = time.process_time()
    for s in seeds:
        task.generate(difficulty, s)
    gen = count / (time.process_time() - start)
    start = time.process_time()
    for s in seeds:
        task.picture(task.generate(difficulty, s), size)
    return {"instances_per_s": gen, "instances_per_s_with_images": count / (time.process_time() - start)}


def serve() -> None:
    """The worker `--compare` drives: a JSON list of `speed`'s arguments a line on stdin, its
    figures (and where mmnp came from) a line on stdout, until stdin closes."""
    for line in sys.stdin:
        print(json.dumps({**speed(*json.loads(line)), "from": mmnp.__file__}), flush=True)


def build_revision(rev: str, into: Path) -> Path:
    """The package as it was at `rev`, installed (not editable) into a folder of its own."""
    root = Path(__file__).resolve().parent.parent
    src, site = into / "src", into / "site"
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(root), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(site), str(src)], check=True)
    return site


def compare(rev: str, names: list[str], difficulties: list[str], count: int, size: int, repeat: int) -> None:
    """Old (REV) and new (working tree) generation speed, in two worker processes that take
    turns batch by batch (the same seeds for both, the order swapped every batch), so that a
    shared machine's changes of speed fall on both alike."""
    from rich.console import Console
    from rich.table import Table

    def load() -> str:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())

    def worker(site: Path | None) -> subprocess.Popen:
        env = dict(os.environ)
        if site is not None:
            env["PYTHONPATH"] = str(site)  # ahead of the editable install's finder
        code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import bench_tasks; bench_tasks.serve()"
        # run from the temporary folder: a worker started in the checkout would import its `mmnp/` first
        return subprocess.Popen([sys.executable, "-c", code], env=env, cwd=tmp, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)

    def ask(proc: subprocess.Popen, *args) -> dict:
        proc.stdin.write(json.dumps(args) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the benchmark worker stopped (exit code {proc.wait()})")
        return json.loads(line)

    console = Console(width=150)
    with tempfile.TemporaryDirectory(prefix="mmnp-bench-") as tmp:
        site = build_revision(rev, Path(tmp))
        workers = {"old": worker(site), "new": worker(None)}
        before = load()
        runs: dict[tuple, list[dict]] = {}
        try:
            with console.status("comparing") as status:
                for name in names:
                    for difficulty in difficulties:
                        for r in range(repeat):
                            for label in ("old", "new") if r % 2 == 0 else ("new", "old"):
                                status.update(f"{name} {difficulty} {label} {r + 1}/{repeat}")
                                result = ask(workers[label], name, difficulty, count, size, r * count)
                                assert (label == "old") == result["from"].startswith(tmp), result["from"]
                                runs.setdefault((name, difficulty, label), []).append(result)
        finally:
            for proc in workers.values():
                proc.stdin.close()
                proc.wait()
        after = load()
    table = Table(title=f"generation speed, instances/s on one core, median (best) of {repeat} batches of {count} "
                        f"instances: old = {rev}, new = working tree, taking turns; load average before {before}, "
                        f"after {after}")
    for col in ("task", "difficulty", "old", "new", "old +img", "new +img", "new/old +img"):
        table.add_column(col, justify="right")
    for name in names:
        for difficulty in difficulties:
            rates = {(label, k): [r[k] for r in runs[name, difficulty, label]]
                     for label in ("old", "new") for k in ("instances_per_s", "instances_per_s_with_images")}
            cell = {key: f"{statistics.median(v):.0f} ({max(v):.0f})" for key, v in rates.items()}
            # batch by batch: the two ran the same seeds back to back
            ratio = statistics.median(n / o for n, o in zip(rates["new", "instances_per_s_with_images"],
                                                            rates["old", "instances_per_s_with_images"]))
            table.add_row(name, difficulty, cell["old", "instances_per_s"], cell["new", "instances_per_s"],
                          cell["old", "instances_per_s_with_images"], cell["new", "instances_per_s_with_images"],
                          f"{ratio:.2f}")
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="all")
    parser.add_argument("--difficulty", default="easy,medium,hard")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--optimal-count", type=int, default=10, help="instances per cell solved exactly")
    parser.add_argument("--size", type=int, default=768)
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--compare", metavar="REV", help="generation speed of git revision REV against the working tree")
    parser.add_argument("--repeat", type=int, default=3, help="--compare: batches per task, old and new taking turns")
    args = parser.parse_args()
    if args.count < 1 or args.optimal_count < 0 or args.repeat < 1:
        parser.error("--count and --repeat must be at least 1, --optimal-count at least 0")
    try:
        check_image_size(args.size)
    except UsageError as e:
        parser.error(str(e).replace("--image-size", "--size"))
    if args.compare:
        compare(args.compare, [t.name for t in resolve_tasks(args.tasks)], args.difficulty.split(","), args.count,
                args.size, args.repeat)
        return

    from rich.console import Console
    from rich.table import Table

    rows = []
    console = Console(width=150)
    with console.status("benchmarking") as status:
        for task in resolve_tasks(args.tasks):
            for difficulty in args.difficulty.split(","):
                status.update(f"benchmarking {task.name} {difficulty}")
                rows.append(bench(task, difficulty, args.count, args.optimal_count, args.size))
    table = Table(title=f"mmnp {mmnp.__version__}: one core, {args.count} instances per cell")
    for col in ("task", "difficulty", "inst/s", "inst/s +img", "verify/s", "worst 1MB ms",
                "heuristic/best", "render vs nx+mpl"):
        table.add_column(col, justify="right")
    fmt = lambda v, f: "n/a" if v is None else format(v, f)  # noqa: E731
    for r in rows:
        table.add_row(r["task"], r["difficulty"], fmt(r["instances_per_s"], ".0f"),
                      fmt(r["instances_per_s_with_images"], ".0f"), fmt(r["verifications_per_s"], ",.0f"),
                      fmt(r["worst_1mb_ms"], ".1f"), fmt(r["heuristic_over_best"], ".4f"),
                      fmt(r["render_speedup_vs_nx_mpl"], ".1f") + ("x" if r["render_speedup_vs_nx_mpl"] else ""))
    console.print(table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    raise SystemExit(script_main(main))
