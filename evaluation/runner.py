"""The evaluation loop: build requests, skip what is done, stream verified samples to an
append-only log, and compute `results.json` from that log.

    OUTPUT/<model>/samples.jsonl   one line per (instance, modality, sample), appended as each finishes
    OUTPUT/<model>/results.json    every metric, with the configuration and versions that produced it
    OUTPUT/<model>/run.json        the settings that fix what a sample is (checked on resume)

Resuming needs no bookkeeping beyond the log (`mmnp.samplelog`): a key with a successful line
is done, a key whose latest line is a failed call is asked again, and a line cut by a crash
is dropped. The folder is locked for the run: a second eval on it is refused.

Every image-bearing sample is checked for delivery (`mmnp.evaluation.delivery`) and records
its picture's kind (`picture_kind`), by which image scores are also reported.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable

from mmnp.core import Instance
from mmnp.dataset import atomic_write
from mmnp.errors import DataError, RunError, UsageError
from mmnp.evaluation.backend import (MESSAGES_TEMPLATE, Backend, Completion, Request, Sampling, backend_class,
                                    split_model)
from mmnp.evaluation.delivery import FAILED, NOT_APPLICABLE, PASSED, UNCHECKED, Delivery, image_probe_block
from mmnp.evaluation.metrics import aggregate, instance_metrics
from mmnp.evaluation.schema import PROBE, RESULTS, ImageProbe, ProbeGroup, ProbeMetrics, Results, Usage
from mmnp.samplelog import SAMPLES, FolderLock, SampleLog, sample_key
from mmnp.registry import get_task, list_tasks
from mmnp.transcribe import form, probe_prompt

MODALITIES = ("text", "image")
PROBES = ("transcribe",)


@dataclass(frozen=True)
class EvalConfig:
    model: str
    modalities: tuple[str, ...] = ("text",)
    samples: int = 1
    sampling: Sampling = Sampling()
    system_prompt: str | None = None
    model_args: dict = field(default_factory=dict)  # the backend options that change what a sample is
    rounds: int = 1  # --rounds: feedback turns from the verifier, up to this many answers per sample
    probe: str | None = None  # --probe transcribe: one transcription per instance's picture, scored field by field
    endpoint: dict | None = None  # where the model is served ({base_url, model}); None for in-process backends
    weights: str | None = None  # the local model folder's fingerprint (`models.weights_fingerprint`), if any

    def identity(self) -> dict:
        """What must match for stored samples to be reused (samples and limit may grow)."""
        identity = {"model": self.model, "sampling": self.sampling.identity(), "system_prompt": self.system_prompt}
        if self.endpoint:  # a resumed run against another server would mix two models' answers
            identity["endpoint"] = self.endpoint
        if self.weights:  # ... as would other weights under the same path
            identity["weights"] = self.weights
        if self.model_args:  # only when set: older run.json files stay resumable
            identity["model_args"] = self.model_args
        if self.rounds > 1:  # a sample's answer is its last round's
            identity["rounds"] = self.rounds
        return identity


def model_dir_name(model: str) -> str:
    """A filesystem-safe folder name for a model spec (`hf:/a/b` -> `hf__a_b`); long names keep
    their first 80 characters and a hash of the whole."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"
    if len(name) > 100:
        name = f"{name[:80]}_{hashlib.sha256(model.encode()).hexdigest()[:12]}"
    return name


def score(inst: Instance, modality: str, sample: int, completion: Completion,
          messages_sha256: str | None = None) -> dict:
    """A sample's record: the response, its verdict and ratios, usage and failure."""
    task = get_task(inst.task)
    failed = completion.error is not None
    verdict = task.verify(inst, completion.text if not failed else "")
    feasible = verdict.feasible and not failed
    objective = verdict.objective if feasible else None
    return {
        "key": sample_key(inst.id, modality, sample),
        "id": inst.id,
        "task": inst.task,
        "difficulty": inst.difficulty,
        "modality": modality,
        "sample": sample,
        "response": completion.text,
        "truncated": completion.truncated,
        "messages_sha256": messages_sha256,
        "parsed": verdict.parsed and not failed,
        "feasible": feasible,
        "objective": objective,
        "violations": [v.to_dict() for v in verdict.violations][:20],
        "parse_error": None if failed else verdict.error,
        "ratio": task.quality_ratio(objective, inst.reference_objective),
        "opt_ratio": task.quality_ratio(objective, inst.best_objective),
        "canonical": _jsonable(task.verifier.canonical(inst.data, verdict.solution)) if feasible else None,
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "latency_s": round(completion.latency_s, 4),
        "attempts": completion.attempts,
        "failed": failed,
        "error": completion.error,
        "finish_reason": completion.finish_reason,
        "refusal": completion.refusal,
    }


def feedback(record: dict) -> str:
    """The verifier's verdict on a round's answer, sent back as the next user turn (--rounds).
    A feasible answer hears only whether it beats, matches or falls short of the reference,
    never the reference's objective: that number would be a target to aim at."""
    again = "Give your full answer again, in the same format as before."
    if not record["parsed"]:
        return f"Your answer could not be read: {record['parse_error'] or 'no answer found'}. {again}"
    if not record["feasible"]:
        named = "\n".join(f"- {v['message']}" for v in record["violations"][:10])
        return f"Your answer is not feasible. The verifier found:\n{named}\nFix it. {again}"
    ratio = record["ratio"]
    how = "beats" if ratio > 1 + 1e-9 else "matches" if ratio >= 1 - 1e-9 else "does not reach"
    return (f"Your answer is feasible with objective {record['objective']}, which {how} the reference solution. "
            f"A better answer may exist: improve it if you can. {again}")


def round_record(record: dict, request: Request, rounds: int) -> dict:
    """A --rounds sample's record: this round's verdict, the earlier turns and every round's
    scores; `feedback` is the next user turn, None when the sample is finished."""
    previous = list(request.extra_rounds)
    scores = {k: record[k] for k in ("feasible", "objective", "ratio", "opt_ratio", "messages_sha256")}
    record = {**record, "round": request.round, "history": [list(turn) for turn in request.history]}
    if record["failed"]:  # retried at the same round: keep the finished rounds' scores
        record.update(per_round=previous, feedback=None)
        return record
    best = record["feasible"] and (record["opt_ratio"] if record["opt_ratio"] is not None else 0) >= 1 - 1e-9
    record["per_round"] = [*previous, scores]
    record["feedback"] = None if best or request.round >= rounds else feedback(record)
    return record


def score_probe(request: Request, completion: Completion) -> dict:
    """A perception-probe sample: the transcription, exact or not, and its per-field F1."""
    from mmnp.transcribe import score_transcription

    inst = request.instance
    failed = completion.error is not None
    exact, fields = score_transcription(inst.task, inst.data, None if failed else completion.text)
    return {"key": request.key, "id": inst.id, "task": inst.task, "difficulty": inst.difficulty,
            "modality": PROBE, "sample": request.sample, "probe": "transcribe", "response": completion.text,
            "truncated": completion.truncated, "messages_sha256": request.messages_sha256(),
            "exact": exact and not failed, "field_f1": fields, "parsed": not failed, "feasible": False,
            "objective": None, "ratio": 0.0, "opt_ratio": 0.0, "canonical": None, "violations": [],
            "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
            "latency_s": round(completion.latency_s, 4), "attempts": completion.attempts, "failed": failed,
            "error": completion.error, "finish_reason": completion.finish_reason, "refusal": completion.refusal}


def picture_kind(inst: Instance, cache: dict[str, str] | None = None) -> str:
    """What the instance's picture asks of a reader (`mmnp.render.PICTURE_KINDS`): from its record,
    or from its layout (graph records written before pictures said their kind), or by drawing it
    again when the record's picture is the current version (or there is no record: on the fly);
    `unspecified` for an older picture version, which the current renderer might draw otherwise."""
    from mmnp.task import PICTURE_VERSION

    if cache is not None and inst.id in cache:
        return cache[inst.id]
    picture = inst.picture if isinstance(inst.picture, dict) else {}
    layout = picture.get("layout") if isinstance(picture.get("layout"), dict) else {}
    if isinstance(picture.get("kind"), str):
        kind = picture["kind"]
    elif "adjacency_panel" in layout:
        kind = "edge_list" if layout["adjacency_panel"] else "drawing"
    elif picture and picture.get("version") != PICTURE_VERSION:
        kind = "unspecified"
    else:
        kind = get_task(inst.task).picture(inst)[1]["kind"]
    if cache is not None:
        cache[inst.id] = kind
    return kind


def _jsonable(x):
    return json.loads(json.dumps(x))


def _unstorable(record: dict, e: Exception, request: Request) -> dict:
    """A sample whose reply cannot be stored (invalid JSON or UTF-8), as the failed call `score`
    makes of it (asked again next run); its picture's fields and earlier rounds stay."""
    completion = Completion(None, error=f"unstorable reply ({type(e).__name__}: {str(e)[:100]})")
    if request.modality == PROBE:
        failed = score_probe(request, completion)
    else:
        failed = score(request.instance, request.modality, request.sample, completion, request.messages_sha256())
    if "per_round" in record:  # retried at this round, as a failed round is
        failed.update(round=record["round"], history=record["history"], feedback=None,
                      per_round=record["per_round"][:len(request.history)])
    return {**record, **failed}


def build_requests(instances: Iterable[Instance], config: EvalConfig, image_loader: Callable[[Instance], bytes],
                   log: SampleLog) -> list[Request]:
    """The calls still to make: every sample without a successful record, and (--rounds) every
    sample whose latest round asks for another (resumed at that round, never from round 1)."""
    instances = list(instances)
    if config.probe:  # the probe needs each task's transcription form (optional for a task): refused before any call
        for task in sorted({inst.task for inst in instances}):
            form(task)
    requests = []
    for inst in instances:
        for modality in config.modalities:
            for k in range(config.samples):
                key = sample_key(inst.id, modality, k)
                record = log.records.get(key)
                history, extra = (), ()
                if config.rounds > 1 and record is not None:
                    history = tuple(tuple(t) for t in record.get("history") or ())
                    extra = tuple(record.get("per_round") or ())
                    if not record["failed"]:
                        if record.get("feedback") is None:
                            continue  # finished: the best answer, or the last round
                        history += ((record["response"], record["feedback"]),)
                elif log.done(key):
                    continue
                retry = record is not None and record["failed"]
                requests.append(_request(inst, modality, k, config, image_loader, retry, history, extra))
        key = sample_key(inst.id, PROBE, 0)
        if config.probe and not log.done(key):
            requests.append(_request(inst, PROBE, 0, config, image_loader, key in log.records))
    return requests


def _request(inst: Instance, modality: str, sample: int, config: EvalConfig,
             image_loader: Callable[[Instance], bytes], retry: bool = False, history: tuple = (),
             extra: tuple = ()) -> Request:
    """The request of one sample: what is sent for it (its messages) is a function of these alone."""
    text = inst.image_prompt if modality == "image" else probe_prompt(inst.task) if modality == PROBE else inst.prompt
    image = image_loader(inst) if modality in ("image", PROBE) else None
    return Request(inst, modality, sample, text, image, config.system_prompt, retry, history, extra)


VERDICT_FIELDS = ("parsed", "feasible", "objective", "ratio", "opt_ratio", "canonical", "violations", "parse_error")
PROBE_FIELDS = ("exact", "field_f1")
ROUND_FIELDS = ("feasible", "objective", "ratio", "opt_ratio", "messages_sha256")
IMAGE_CHECKS = (None, PASSED, FAILED, UNCHECKED, NOT_APPLICABLE)  # a record's `image_check`


def check_stored(log: SampleLog, instances: list[Instance], config: EvalConfig,
                 image_loader: Callable[[Instance], bytes], rescore: bool = False, *,
                 loose: Callable[[Instance, str], bool] | None = None, unmatched: list[str] | None = None) -> list[str]:
    """The stored samples of this run checked before any is reused or scored; the keys of those
    that answer other messages than this run's (another dataset, prompt, picture or system
    prompt; earlier rounds edited) are returned and removed from `log.records`, so that they are
    asked again and never scored. Every other stored answer is verified again (every round's,
    failed ones' earlier rounds included): a record whose verdict is not what its answers earn
    (an edited log, or another verifier's) is refused, unless `rescore`, which rewrites the
    verdicts from the answers. A stored number is only ever what its answer earns.

    A report's check passes `loose(instance, modality)`: true where the messages cannot be made again
    byte for byte here (a picture drawn again by another Pillow or fonts; another mmnp's messages
    template). Such a sample whose messages differ is not stale: its answer is still verified (a
    verdict depends on the instance and the answer alone) and its key added to `unmatched`."""
    images: dict[str, bytes] = {}
    hashes: dict[tuple, str] = {}  # the messages of one instance, modality and history are one for every sample

    def loader(inst: Instance) -> bytes:  # a picture is read (or drawn) once for all its samples
        if inst.id not in images:
            images[inst.id] = image_loader(inst)
        return images[inst.id]

    stale = []
    keys = [(inst, m, k) for inst in instances for m in config.modalities for k in range(config.samples)]
    keys += [(inst, PROBE, 0) for inst in instances] if config.probe else []
    for inst, modality, k in keys:
        key = sample_key(inst.id, modality, k)
        record = log.records.get(key)
        if record is None:
            continue
        try:
            _check_shape(record, inst, modality, k)
            history = _history(record) if config.rounds > 1 and modality != PROBE else ()
            request = _request(inst, modality, k, config, loader, history=history)
            asked = (inst.id, modality, history)
            if asked not in hashes:
                hashes[asked] = request.messages_sha256()
            sent = hashes[asked]
            differs = record.get("messages_sha256") != sent
            if differs and (loose is None or unmatched is None or not loose(inst, modality)):
                stale.append(key)
                del log.records[key]
                continue
            if differs:  # not checkable here: verified on the messages it records
                unmatched.append(key)
                sent = record.get("messages_sha256")
            fresh = _verified(record, request, sent, config.rounds)
            if differs and "per_round" in fresh:  # nor are its earlier rounds' messages
                fresh["per_round"] = _stored_round_hashes(fresh["per_round"], record.get("per_round"))
            if rescore:
                log.records[key] = {**record, **fresh}
                continue
            for name, value in fresh.items():
                if record.get(name) != value:
                    raise DataError(f"sample {key} records {name} {record.get(name)!r}, but its answer is verified "
                                    f"to {value!r}")
        except DataError as e:
            raise DataError(f"{log.path}: {e}: the log was edited, or written by another mmnp's verifier; run the "
                            "same command with --rescore to verify every stored answer again") from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            raise DataError(f"{log.path}: sample {key} is not a record as `mmnp eval` writes it ({type(e).__name__}: "
                            f"{str(e)[:80]}); delete its lines and run again (the sample is then asked again)") from None
    return stale


def _stored_round_hashes(fresh: list[dict], stored: object) -> list[dict]:
    """`fresh` rounds with the messages hashes `stored` records: a sample whose messages cannot be made
    again here has its rounds' verdicts verified, its rounds' messages taken as recorded."""
    stored = stored if isinstance(stored, list) else []
    recorded = [r if isinstance(r, dict) else {} for r in stored]
    return [{**r, "messages_sha256": recorded[i].get("messages_sha256")} if i < len(recorded) else r
            for i, r in enumerate(fresh)]


def _check_shape(record: dict, inst: Instance, modality: str, sample: int) -> None:
    """The fields readers use have the types `score` gives them, and say the sample of their key
    (fields newer than the record, such as `finish_reason`, may be absent)."""
    if [record.get("id"), record.get("modality"), record.get("sample")] != [inst.id, modality, sample]:
        raise ValueError("its id, modality or sample is not its key's")
    text = (str, type(None))
    kinds = {"failed": bool, "response": text, "error": text, "latency_s": (int, float), "attempts": int,
             "truncated": bool, "image_check": text, "image_tokens": (int, type(None)), "finish_reason": text,
             "refusal": text}
    for name, kind in kinds.items():
        if name in record and (not isinstance(record[name], kind) or isinstance(record[name], bool) and kind != bool):
            raise TypeError(f"its {name} is {str(record[name])[:40]!r}")
    if record.get("image_check") not in IMAGE_CHECKS or record["failed"] != (record.get("error") is not None):
        raise ValueError("its image_check or failure is not one mmnp writes")


def _history(record: dict) -> tuple[tuple[str, str], ...]:
    turns = tuple(tuple(turn) for turn in record.get("history") or ())
    if not all(len(t) == 2 and all(isinstance(x, str) for x in t) for t in turns):
        raise ValueError("its history is not a list of [answer, feedback] texts")
    return turns


def _verified(record: dict, request: Request, sent: str, rounds: int) -> dict:
    """A stored record's verdict fields as its answers earn them now: its own answer's (a failed
    call's: the failure's), and with --rounds every answered round's scores (`per_round`);
    `sent` is the hash of the request's messages."""
    if request.modality == PROBE:
        fresh = score_probe(request, _stored_completion(record))
        return {name: _as_stored(fresh[name]) for name in PROBE_FIELDS}
    inst, modality, sample = request.instance, request.modality, request.sample
    fresh = score(inst, modality, sample, _stored_completion(record), sent)
    verified = {name: _as_stored(fresh[name]) for name in VERDICT_FIELDS}
    if rounds > 1:
        answers = [answer for answer, _ in request.history] + ([] if record["failed"] else [record["response"]])
        per_round = []
        for r, answer in enumerate(answers):
            earlier = replace(request, history=request.history[:r])
            at_r = fresh if r == len(request.history) else score(inst, modality, sample, Completion(answer),
                                                                 earlier.messages_sha256())
            per_round.append({name: at_r[name] for name in ROUND_FIELDS})
        verified["per_round"] = _jsonable(per_round)
    return verified


def _as_stored(x: object) -> object:
    """`x` as samples.jsonl gives it back: a plain value as it is, anything else through JSON (the JSON
    round trip of every field of every sample was a fifth of a leaderboard's time)."""
    return x if x is None or type(x) in (bool, int, str, float) else _jsonable(x)


def _stored_completion(record: dict) -> Completion:
    """The completion a record stores, as `score` was given it (a failed call: its error)."""
    return Completion(record["response"], error=record["error"] if record["failed"] else None)


def git_hash() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
                             text=True, timeout=5)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def evaluate(
    backend: Backend | None,
    instances: list[Instance],
    config: EvalConfig,
    output_path: str | Path,
    *,
    image_loader: Callable[[Instance], bytes],
    dataset: dict | None = None,
    rescore: bool = False,
    skip_image_probe: bool = False,
    progress: Callable[[int, int], None] | None = None,
    notice: Callable[[str], None] | None = None,
) -> Results:
    """Run (or resume, or rescore) an evaluation and write samples.jsonl and results.json.

    results.json is written even when the run is stopped (`RunError`: the endpoint refuses, the image
    probe fails; re-raised after). `backend` is None only with `rescore` (no model is called).
    Stored samples are reused only as answers to this run's very messages (`check_stored`);
    `notice` hears how many were not."""
    _check_modalities(backend, config)
    out = Path(output_path) / model_dir_name(config.model)
    if out.exists() and not out.is_dir() or Path(output_path).is_file():
        raise DataError(f"--output-path {output_path}: {out if out.exists() else output_path} is a file, not a "
                        "folder; choose another --output-path")
    out.mkdir(parents=True, exist_ok=True)
    if config.weights is None and getattr(backend, "weights", None):
        config = replace(config, weights=backend.weights)
    with FolderLock(out):
        guard_settings(out, config, dataset, rescore)
        log = SampleLog(out / SAMPLES)
        stale = check_stored(log, instances, config, image_loader, rescore=rescore)
        why = (f"{len(stale)} stored sample(s) in {log.path} answer other messages than this run's (another dataset, "
               f"prompt, picture or system prompt), e.g. {stale[0]}") if stale else ""
        if stale and rescore:
            raise DataError(f"--rescore: {why}; rescore with the dataset they were made from, or run without "
                            "--rescore to ask them again")
        if stale and notice:
            notice(f"{why}: asked again")
        started = time.time()
        delivery = Delivery(backend, config.sampling, skip_image_probe, encoding=_previous_encoding(out))
        recorder = Recorder(log, config, delivery, progress)
        stopped: RunError | None = None
        calls = 0
        if rescore:  # every stored verdict was rewritten from its answers (`check_stored`)
            log.rewrite()
        else:
            calls, stopped = ask_rounds(backend, instances, config, image_loader, recorder)
        results = write_results(out, log, instances, config, recorder.kinds, delivery, backend, dataset, calls,
                                time.time() - started)
        if stopped is not None:
            raise stopped
        return results


def _check_modalities(backend: Backend | None, config: EvalConfig) -> None:
    """Refuse, before any work, pictures for a backend that declares it takes none (a text-only model):
    every image sample would fail, on every rerun."""
    takes = getattr(backend, "modalities", None)
    asks = [flag for flag, wanted in (("--modality " + ("both" if len(config.modalities) > 1 else "image"),
                                       "image" in config.modalities), (f"--probe {config.probe}", config.probe))
            if wanted]
    if takes is not None and "image" not in takes and asks:
        raise UsageError(f"{backend.name} is a text-only model, but {' and '.join(asks)} asks it about pictures: "
                         "evaluate it with --modality text (without --probe), or use a vision-language model")


def guard_settings(out: Path, config: EvalConfig, dataset: dict | None, rescore: bool) -> None:
    """Refuse a folder whose samples were made with other settings (run.json), then record this run's."""
    run_file = out / "run.json"
    identity = {**config.identity(), "benchmark": _dataset_identity(dataset)}
    try:
        stored = json.loads(run_file.read_text()) if run_file.exists() else None
    except ValueError:
        raise DataError(f"{run_file}: not JSON; delete it to reuse the folder's samples with the current "
                        "settings") from None
    for key in ("endpoint", "weights"):
        if isinstance(stored, dict) and key in stored and rescore:
            identity[key] = stored[key]  # rescoring loads no model: the samples' own stays
        elif isinstance(stored, dict) and key not in stored and key in identity:
            stored = {**stored, key: identity[key]}  # written before mmnp recorded it
    if stored is not None and stored != identity:
        raise UsageError(f"{out} holds samples from different settings ({_diff(stored, identity)}); "
                        "choose another --output-path, or delete the folder to start over")
    atomic_write(run_file, json.dumps(identity, indent=1))


@dataclass
class Recorder:
    """The `emit` a backend calls: each completion becomes its sample's record (the delivery
    verdict, the score, the --rounds fields, the picture kind) appended to the log at once."""

    log: SampleLog
    config: EvalConfig
    delivery: Delivery
    progress: Callable[[int, int], None] | None = None
    kinds: dict[str, str] = field(default_factory=dict)  # instance id -> picture kind, drawn once
    done: int = 0  # this round's samples recorded
    total: int = 0  # this round's samples
    sent: int = 0  # requests the backend made this run (results.json's timing.this_run_calls)

    def __call__(self, request: Request, completion: Completion) -> None:
        self.sent += completion.attempts > 0  # attempts 0: held back before any call (its picture is unsendable)
        checked, undelivered = self.delivery.verdict(request, completion)
        if undelivered is not None:  # the picture did not reach the model: a failed sample
            completion = replace(completion, error=undelivered)
        if request.modality == PROBE:
            record = score_probe(request, completion)
        else:
            record = score(request.instance, request.modality, request.sample, completion, request.messages_sha256())
            if self.config.rounds > 1:
                record = round_record(record, request, self.config.rounds)
        if request.image is not None:
            record.update(checked, picture_kind=picture_kind(request.instance, self.kinds))
        try:
            self.log.append(record)
        except (ValueError, UnicodeEncodeError) as e:  # a reply the backend let through never poisons the log
            self.log.append(_unstorable(record, e, request))
        self.done += 1
        if self.progress:
            self.progress(self.done, self.total)

    def start(self, total: int) -> None:
        """A new round of `total` samples."""
        self.done, self.total = 0, total


def ask_rounds(backend: Backend, instances: list[Instance], config: EvalConfig,
               image_loader: Callable[[Instance], bytes], recorder: Recorder) -> tuple[int, RunError | None]:
    """Ask the backend for every sample not yet answered, one batch per --rounds round (a sample
    leaves when it is finished); (requests sent, the `RunError` that stopped the run, if one did)."""
    requests = build_requests(instances, config, image_loader, recorder.log)
    recorder.start(len(requests))
    try:
        for _ in range(config.rounds):
            unsendable = recorder.delivery.prepare(requests)  # may stop the run: images do not reach the model
            for request, why in unsendable:
                recorder(request, Completion(None, error=why, attempts=0))
            held = {id(r) for r, _ in unsendable}
            requests = [r for r in requests if id(r) not in held]
            recorder.total = len(requests)
            if not requests:
                break
            backend.run(requests, config.sampling, recorder)
            if config.rounds == 1:
                break
            # the next round of every unfinished sample; failed calls wait for the next run, as without --rounds
            requests = [r for r in build_requests(instances, config, image_loader, recorder.log)
                        if r.history and not r.retry]
            recorder.start(len(requests))
    except RunError as e:  # the endpoint refuses, or images do not reach the model: say so in results.json
        return recorder.sent + getattr(e, "sent", 0), e
    finally:
        recorder.log.close()
    return recorder.sent, None


def write_results(out: Path, log: SampleLog, instances: list[Instance], config: EvalConfig, kinds: dict[str, str],
                  delivery: Delivery, backend: Backend | None, dataset: dict | None, calls: int,
                  seconds: float) -> Results:
    """results.json from the log (every sample, this run's and earlier ones'), written atomically."""
    results = compute_results(log, instances, config, kinds)
    results["image_probe"] = _delivery_summary(log, instances, config, delivery.encoding, backend)
    results.update(_provenance(config, dataset, calls, seconds, log))
    results["timing"]["this_run_check_requests"] = delivery.requests_made
    atomic_write(out / RESULTS, json.dumps(results, indent=1, sort_keys=True, allow_nan=False) + "\n")
    return results


def _dataset_identity(dataset: dict | None) -> str | None:
    """What a stored sample's dataset is: its content and references hashes, or the seed it was generated with."""
    dataset = dataset or {}
    if dataset.get("generated"):
        return f"generated with seed {dataset['generated']['seed']}"
    content = dataset.get("content_hash") or dataset.get("benchmark_hash")
    return f"{content}:{dataset['references_hash']}" if dataset.get("references_hash") else content


def _previous_encoding(out: Path) -> dict | None:
    """The encoding check of the run's earlier part (the endpoint is part of the run's identity),
    kept when this part sends no image request."""
    try:
        previous = json.loads((out / RESULTS).read_text()).get("image_probe")
    except (OSError, ValueError, AttributeError):
        return None
    encoding = previous.get("encoding") if isinstance(previous, dict) else None
    return encoding if isinstance(encoding, dict) and encoding.get("status") in (PASSED, FAILED) else None


def _image_modalities(config: EvalConfig) -> list[tuple[str, int]]:
    """(modality, samples per instance) of the samples that carry a picture."""
    return ([("image", config.samples)] if "image" in config.modalities else []) + ([(PROBE, 1)] if config.probe else [])


def _delivery_summary(log: SampleLog, instances: list[Instance], config: EvalConfig, encoding: dict | None,
                      backend: Backend | None) -> ImageProbe:
    """results.json's `image_probe` from the latest record of every image-bearing sample."""
    pictured = _image_modalities(config)
    if not pictured:
        return image_probe_block([], encoding, False, None)
    records = [log.records.get(sample_key(inst.id, m, k)) for inst in instances for m, n in pictured for k in range(n)]
    if backend is None:  # --rescore: the backend the samples came from
        backend = backend_class(split_model(config.model)[0])
    in_process = None if callable(getattr(backend, "measure", None)) else config.model
    return image_probe_block(records, encoding, True, in_process)


def compute_results(log: SampleLog, instances: list[Instance], config: EvalConfig,
                    kinds: dict[str, str] | None = None) -> Results:
    """The scores of results.json from the log: per modality (and picture kind, and --rounds round),
    the probe's block, and the counts that say whether the run is complete."""
    categories = {t.name: t.category for t in list_tasks()}
    by_modality = {}
    missing = failed = 0
    for modality in config.modalities:
        rows = []
        for inst in instances:
            samples = [log.records.get(sample_key(inst.id, modality, k)) for k in range(config.samples)]
            failed += sum(1 for s in samples if s is not None and s["failed"])
            if not all(map(_settled, samples)):  # a sample not answered, or (--rounds) owed its next round
                missing += 1
                continue
            row = {"task": inst.task, "difficulty": inst.difficulty, "metrics": instance_metrics(samples)}
            if modality == "image":
                row["kind"] = picture_kind(inst, kinds)
            rows.append(row)
        by_modality[modality] = aggregate(rows, categories) if rows else {}
        if config.rounds > 1 and rows:
            _add_rounds(by_modality[modality], log, instances, config, modality, categories)
        if modality == "image" and rows:
            by_modality[modality]["picture_kinds"] = _by_kind(rows, categories)
    if config.probe:  # one probe sample per instance, counted like any other sample
        by_modality[PROBE] = _probe_metrics(log, instances)
        probes = [log.records.get(sample_key(inst.id, PROBE, 0)) for inst in instances]
        missing += sum(1 for r in probes if r is None)
        failed += sum(1 for r in probes if r is not None and r["failed"])
    total = len(instances) * (len(config.modalities) * config.samples + bool(config.probe))
    return {"metrics": by_modality, "complete": missing == 0 and failed == 0, "missing_instances": missing,
            "failed_samples": failed, "total_samples": total}


def _by_kind(rows: list[dict], categories: dict) -> dict:
    """metrics.image.picture_kinds: the image scores over the instances of each picture kind (overall,
    per task, per task and level), beside the total, so a drawing's score is not averaged with a list's."""
    by_kind: dict[str, list[dict]] = {}
    for row in rows:
        by_kind.setdefault(row["kind"], []).append(row)
    out = {}
    for kind, kind_rows in sorted(by_kind.items()):
        agg = aggregate(kind_rows, categories)
        out[kind] = {"overall": agg["overall"], "tasks": agg["tasks"], "task_difficulty": agg["task_difficulty"]}
    return out


def _settled(record: dict | None) -> bool:
    """Whether a sample's latest record ends it: answered (or failed: counted apart) and, with
    --rounds, not waiting for the next round (its verdict went back as feedback, unanswered yet)."""
    return record is not None and (record["failed"] or record.get("feedback") is None)


def _add_rounds(block: dict, log: SampleLog, instances: list[Instance], config: EvalConfig, modality: str,
                categories: dict) -> None:
    """SR and QR at every round in every aggregate group: a sample's round-r answer is its last answer
    up to round r; from a failed round on, the failed call (infeasible, as the group's own SR counts it)."""
    per_round = []
    for r in range(1, config.rounds + 1):
        rows = []
        for inst in instances:
            samples = [log.records.get(sample_key(inst.id, modality, k)) for k in range(config.samples)]
            if not all(map(_settled, samples)):
                continue
            at_r = []
            for s in samples:
                history = s.get("per_round") or []
                if history and (not s["failed"] or r <= len(history)):
                    at_r.append({**s, **history[min(r, len(history)) - 1], "failed": False})
                else:
                    at_r.append(s)
            rows.append({"task": inst.task, "difficulty": inst.difficulty, "metrics": instance_metrics(at_r)})
        per_round.append(aggregate(rows, categories))
    for name, group in block.items():
        groups = {None: group} if "sr" in group else group
        for sub, g in groups.items():
            g["rounds"] = {str(r): {m: (agg[name] if sub is None else agg[name][sub])[m] for m in ("sr", "qr")}
                           for r, agg in enumerate(per_round, 1)}


def _probe_metrics(log: SampleLog, instances: list[Instance]) -> ProbeMetrics:
    """metrics["probe"]: recognition accuracy (share of exact transcriptions) and mean field F1,
    overall (mean over instances) and per task, over the instances with a successful probe sample."""
    by_task: dict[str, list[dict]] = {}
    for inst in instances:
        record = log.records.get(sample_key(inst.id, PROBE, 0))
        if record is not None and not record["failed"]:
            by_task.setdefault(inst.task, []).append(record)

    def probe_group(records: list[dict]) -> ProbeGroup:
        f1 = [sum(r["field_f1"].values()) / len(r["field_f1"]) for r in records]
        return {"recognition_accuracy": sum(r["exact"] for r in records) / len(records),
                "field_f1": sum(f1) / len(f1), "instances": len(records)}

    every = [r for records in by_task.values() for r in records]
    if not every:
        return {}
    return {"overall": probe_group(every), "tasks": {t: probe_group(rs) for t, rs in sorted(by_task.items())}}


def _provenance(config: EvalConfig, dataset: dict | None, calls: int, seconds: float, log: SampleLog) -> Results:
    """results.json's fields beside the scores: what was run, on what data, with which versions, at what cost."""
    from mmnp import __version__

    records = list(log.records.values())
    usage: Usage = {
        "prompt_tokens": sum(r["prompt_tokens"] or 0 for r in records),
        "completion_tokens": sum(r["completion_tokens"] or 0 for r in records),
        "failed_calls": sum(1 for r in records if r["failed"]),
        "truncated_responses": sum(1 for r in records if r.get("truncated")),
    }
    # answers the model ended at --max-tokens or its provider filtered, and refusals: scored as given, and counted
    # so that a too-small --max-tokens is told from a wrong model; left out when an answer's record does not say
    # (one reused from a run before mmnp stored finish_reason / refusal), as a count of it would be a 0 not earned
    answered = [r for r in records if not r["failed"]]
    if all("finish_reason" in r for r in answered):
        usage["length_stops"] = sum(1 for r in answered if r["finish_reason"] == "length")
        usage["content_filter_stops"] = sum(1 for r in answered if r["finish_reason"] == "content_filter")
    if all("refusal" in r for r in answered):
        usage["refusals"] = sum(1 for r in answered if r["refusal"] is not None)
    return {
        "model": config.model,
        "config": {**config.identity(), "modalities": list(config.modalities), "samples": config.samples,
                   "messages_template": MESSAGES_TEMPLATE},
        "dataset": dataset or {},
        "mmnp_version": __version__,
        "git_hash": git_hash(),
        "usage": usage,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "environment": environment(),
        # the only fields that differ between an interrupted-and-resumed run and a straight one
        "timing": {"this_run_seconds": round(seconds, 3), "this_run_calls": calls,
                   "mean_latency_s": round(sum(r["latency_s"] for r in records) / max(len(records), 1), 4)},
    }


def environment() -> dict:
    """Versions, platform and GPU of the machine that wrote a results.json."""
    from importlib.metadata import PackageNotFoundError, version

    packages = {}
    for name in ("mmnp", "numpy", "aiohttp", "ortools", "torch", "transformers", "vllm"):
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            pass
    return {"python": platform.python_version(), "platform": platform.platform(), "packages": packages,
            "gpu": _gpus()}


def _gpus() -> list[str]:
    torch = sys.modules.get("torch")  # only when a backend already loaded it: never import torch for this
    if torch is not None and torch.cuda.is_available():
        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()] if out.returncode == 0 else []


def _diff(a: dict, b: dict) -> str:
    return ", ".join(f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))
