"""The runs a leaderboard reads: `mmnp eval` results folders, each checked against results.json's
one schema (`mmnp.evaluation.schema.check_results`) before anything is taken from it.

A results folder that cannot be read is named, one line each, never skipped in silence. Text from
results.json that reaches a report (names, hashes) is capped (`cap`): a 50 MB model name must not
make a 1 GB report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mmnp.errors import DataError, UsageError
from mmnp.evaluation.schema import DELIVERY_WARNINGS, PROBE, RESULTS, check_results

NAME_CAP = 200  # characters of a name (model, preset, hash) a report shows; a longer one is cut, saying so


def cap(text: str, limit: int = NAME_CAP) -> str:
    """`text` cut to `limit` characters, saying so: a 50 MB model name must not make a 1 GB report."""
    return text if len(text) <= limit else f"{text[:limit]}... [cut: {len(text):,} characters]"


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
    subset: str | None = None  # "N of M instances (...)" for a run on part of the dataset (--tasks, --limit)

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
                   origin=f"generated on the fly, seed {generated.get('seed')}" if generated else None,
                   subset=_subset(d.get("selection")))

    @property
    def known(self) -> bool:
        return (self.content_hash if self.modified else self.benchmark_hash) not in (None, "unknown")

    @property
    def key(self) -> str:
        """Runs with equal keys were evaluated on the same data: the same instances and, where
        recorded, the same references (QR is measured against them)."""
        references = f"/references:{self.references_hash}" if self.references_hash else ""
        subset = f"/subset:{self.subset}" if self.subset else ""  # ranked apart from whole-dataset runs
        if self.modified:
            return f"modified:{self.content_hash}{references}{subset}"
        return self.benchmark_hash + references + subset

    def short(self) -> str:
        references = f"/{self.references_hash[:8]}" if self.references_hash else ""
        subset = " subset" if self.subset else ""
        if self.modified:
            return "modified " + (self.content_hash or "unknown").removeprefix("modified-")[:12] + references + subset
        return self.benchmark_hash[:12] + references + subset

    def describe(self) -> str:
        subset = f"; SUBSET: {self.subset}, not comparable with runs on the whole dataset" if self.subset else ""
        references = f", references hash {self.references_hash}" if self.references_hash else ""
        if self.modified:
            return (f"MODIFIED dataset: content hash {self.content_hash or 'unknown'}{references} (its data differ "
                    f"from what its manifest lists; evaluated on purpose, not comparable with the dataset it was "
                    f"edited from){subset}")
        if self.benchmark_hash == "unknown":
            return "unknown dataset (its results.json records no benchmark hash)"
        name = self.preset or self.origin
        return f"dataset {name + ', ' if name else ''}benchmark hash {self.benchmark_hash}{references}{subset}"


def _subset(selection: object) -> str | None:
    """How a run on part of a dataset says so ("3 of 30 instances (tasks knapsack; at most 1 per
    task and difficulty)"), from results.json's dataset.selection; None for the whole dataset."""
    if not isinstance(selection, dict):
        return None
    count, total = selection.get("instances"), selection.get("of")
    tasks, difficulties, limit = selection.get("tasks"), selection.get("difficulties"), selection.get("limit")
    parts = [f"tasks {','.join(map(str, tasks))}" if isinstance(tasks, list) else None,
             f"difficulties {','.join(map(str, difficulties))}" if isinstance(difficulties, list) else None,
             f"at most {limit} per task and difficulty" if isinstance(limit, int) else None]
    where = "; ".join(p for p in parts if p)
    return cap(f"{count} of {total} instances" + (f" ({where})" if where else ""))


@dataclass
class Run:
    """One `mmnp eval` model folder whose results.json passed `check_results`."""

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
        if probe is None and (self.results.get("metrics") or {}).get("image"):  # mmnp always records the check
            return "image delivery not recorded (an older mmnp, or an edited results.json)"
        return None

    def delivery(self) -> str:
        """The runs table's image-delivery cell: the status and how many image samples it covers."""
        probe = self.results.get("image_probe") if isinstance(self.results.get("image_probe"), dict) else {}
        status, samples = text_of(probe.get("status")), probe.get("samples")
        if isinstance(samples, dict) and samples:
            return f"{status} (" + ", ".join(f"{n} {k}" for k, n in sorted(samples.items())) + ")"
        if status == "passed":
            return "passed (one probe per run, by an older mmnp: samples not checked one by one)"
        return status

    def endpoint(self) -> str:
        config = self.results.get("config") if isinstance(self.results.get("config"), dict) else {}
        endpoint = config.get("endpoint") if isinstance(config.get("endpoint"), dict) else {}
        return text_of(endpoint.get("base_url"))


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


def text_of(value) -> str:
    """A value from results.json or a sample as text (JSON for anything but a string; None is empty)."""
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)
