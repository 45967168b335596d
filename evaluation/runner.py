"""The evaluation loop: build requests, skip what is done, stream verified samples to an
append-only log, and compute `results.json` from that log.

    OUTPUT/<model>/samples.jsonl   one line per (instance, modality, sample), appended as each finishes
    OUTPUT/<model>/results.json    every metric, with the configuration and versions that produced it
    OUTPUT/<model>/run.json        the settings that fix what a sample is (checked on resume)

Resuming needs no bookkeeping beyond the log: a key with a successful line is done, a key
whose latest line is a failed call is asked again, and a line cut by a crash is dropped.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable

from mmnp.core import Instance
from mmnp.dataset import atomic_write
from mmnp.evaluation.backend import Backend, Completion, Request, Sampling
from mmnp.evaluation.metrics import aggregate, instance_metrics
from mmnp.registry import get_task, list_tasks

MODALITIES = ("text", "image")


@dataclass(frozen=True)
class EvalConfig:
    model: str
    modalities: tuple[str, ...] = ("text",)
    samples: int = 1
    sampling: Sampling = Sampling()
    system_prompt: str | None = None

    def identity(self) -> dict:
        """What must match for stored samples to be reused (samples and limit may grow)."""
        return {"model": self.model, "sampling": asdict(self.sampling), "system_prompt": self.system_prompt}


def model_dir_name(model: str) -> str:
    """A filesystem-safe folder name for a model spec (`hf:/a/b` -> `hf__a_b`)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"


class SampleLog:
    """The append-only samples.jsonl: latest line per key wins; a torn last line is cut off."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: dict[str, dict] = {}
        if path.exists():
            raw = path.read_bytes()
            if raw and not raw.endswith(b"\n"):  # killed mid-write: drop the partial line
                raw = raw[: raw.rfind(b"\n") + 1]
                with open(path, "r+b") as f:
                    f.truncate(len(raw))
            for line in raw.decode("utf-8").splitlines():
                if line.strip():
                    record = json.loads(line)
                    self.records[record["key"]] = record
        self._file = None

    def done(self, key: str) -> bool:
        record = self.records.get(key)
        return record is not None and not record["failed"]

    def append(self, record: dict) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()  # survives kill -9 (in the page cache); fsync on close
        self.records[record["key"]] = record

    def rewrite(self) -> None:
        self.close()
        atomic_write(self.path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.records.values()))

    def close(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None


def score(request_instance: Instance, modality: str, sample: int, completion: Completion) -> dict:
    """A sample's record: the response, its verdict and ratios, usage and failure."""
    inst = request_instance
    task = get_task(inst.task)
    failed = completion.error is not None
    verdict = task.verify(inst, completion.text if not failed else "")
    feasible = verdict.feasible and not failed
    objective = verdict.objective if feasible else None
    return {
        "key": f"{inst.id}|{modality}|{sample}",
        "id": inst.id,
        "task": inst.task,
        "difficulty": inst.difficulty,
        "modality": modality,
        "sample": sample,
        "response": completion.text,
        "parsed": verdict.parsed and not failed,
        "feasible": feasible,
        "objective": objective,
        "violations": [v.to_dict() for v in verdict.violations][:20],
        "parse_error": None if failed else verdict.error,
        "ratio": task.quality_ratio(objective, inst.reference_objective),
        "opt_ratio": task.quality_ratio(objective, inst.best_objective),
        "canonical": _jsonable(task.verifier.canonical(verdict.solution)) if feasible else None,
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "latency_s": round(completion.latency_s, 4),
        "attempts": completion.attempts,
        "failed": failed,
        "error": completion.error,
    }


def _jsonable(x):
    return json.loads(json.dumps(x))


def build_requests(instances: Iterable[Instance], config: EvalConfig, image_loader: Callable[[Instance], bytes],
                   log: SampleLog) -> list[Request]:
    requests = []
    for inst in instances:
        for modality in config.modalities:
            for k in range(config.samples):
                if log.done(f"{inst.id}|{modality}|{k}"):
                    continue
                if modality == "image":
                    requests.append(Request(inst, modality, k, inst.image_prompt, image_loader(inst), config.system_prompt))
                else:
                    requests.append(Request(inst, modality, k, inst.prompt, None, config.system_prompt))
    return requests


def git_hash() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
                             text=True, timeout=5)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def evaluate(
    backend: Backend,
    instances: list[Instance],
    config: EvalConfig,
    output_path: str | Path,
    *,
    image_loader: Callable[[Instance], bytes],
    dataset: dict | None = None,
    rescore: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Run (or resume, or rescore) an evaluation and write samples.jsonl and results.json."""
    out = Path(output_path) / model_dir_name(config.model)
    out.mkdir(parents=True, exist_ok=True)
    run_file = out / "run.json"
    identity = {**config.identity(), "benchmark": (dataset or {}).get("identity")}
    stored = json.loads(run_file.read_text()) if run_file.exists() else None
    if stored is not None and stored != identity:
        raise ValueError(f"{out} holds samples from different settings ({_diff(stored, identity)}); "
                         "choose another --output-path, or delete the folder to start over")
    atomic_write(run_file, json.dumps(identity, indent=1))

    log = SampleLog(out / "samples.jsonl")
    by_id = {inst.id: inst for inst in instances}
    started = time.time()
    calls = 0
    if rescore:
        for key, record in log.records.items():
            inst = by_id.get(record["id"])
            if inst is not None and not record["failed"]:
                log.records[key] = score(inst, record["modality"], record["sample"],
                                         Completion(record["response"], record["prompt_tokens"],
                                                    record["completion_tokens"], record["latency_s"],
                                                    attempts=record.get("attempts", 1)))
        log.rewrite()
    else:
        requests = build_requests(instances, config, image_loader, log)
        calls = len(requests)
        done = 0

        def emit(request: Request, completion: Completion) -> None:
            nonlocal done
            log.append(score(request.instance, request.modality, request.sample, completion))
            done += 1
            if progress:
                progress(done, len(requests))

        try:
            if requests:
                backend.run(requests, config.sampling, emit)
        finally:
            log.close()
    results = compute_results(log, instances, config)
    results.update(_provenance(config, dataset, calls, time.time() - started, log))
    atomic_write(out / "results.json", json.dumps(results, indent=1, sort_keys=True) + "\n")
    return results


def compute_results(log: SampleLog, instances: list[Instance], config: EvalConfig) -> dict:
    categories = {t.name: t.category for t in list_tasks()}
    by_modality = {}
    missing = 0
    for modality in config.modalities:
        rows = []
        for inst in instances:
            samples = [log.records.get(f"{inst.id}|{modality}|{k}") for k in range(config.samples)]
            if any(s is None for s in samples):
                missing += 1
                continue
            rows.append({"task": inst.task, "difficulty": inst.difficulty, "metrics": instance_metrics(samples)})
        by_modality[modality] = aggregate(rows, categories) if rows else {}
    return {"metrics": by_modality, "complete": missing == 0, "missing_instances": missing}


def _provenance(config: EvalConfig, dataset: dict | None, calls: int, seconds: float, log: SampleLog) -> dict:
    from mmnp import __version__

    records = list(log.records.values())
    return {
        "model": config.model,
        "config": {**config.identity(), "modalities": list(config.modalities), "samples": config.samples},
        "dataset": dataset or {},
        "mmnp_version": __version__,
        "git_hash": git_hash(),
        "usage": {
            "prompt_tokens": sum(r["prompt_tokens"] or 0 for r in records),
            "completion_tokens": sum(r["completion_tokens"] or 0 for r in records),
            "failed_calls": sum(1 for r in records if r["failed"]),
        },
        # the only fields that differ between an interrupted-and-resumed run and a straight one
        "timing": {"this_run_seconds": round(seconds, 3), "this_run_calls": calls,
                   "mean_latency_s": round(sum(r["latency_s"] for r in records) / max(len(records), 1), 4)},
    }


def _diff(a: dict, b: dict) -> str:
    return ", ".join(f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))
