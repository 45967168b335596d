"""The runs a leaderboard reads: `mmnp eval` results folders, each checked against results.json's
one schema (`mmnp.evaluation.schema.check_results`) and then against its own samples before anything
is taken from it.

results.json is a claim; samples.jsonl is the evidence. Every run's numbers are recomputed from its
samples by the code `mmnp eval` writes them with (`runner.compute_results`), and where the data it
names is still there (the same hashes) or can be generated again from its seed, every stored answer
is verified again on it (`runner.check_stored`), so an edited number, an edited sample or a block
copied from another run is caught. A run whose results.json disagrees, or that has no samples, is
`unverified`: the leaderboard leaves it out unless asked to show it marked.

A results folder that cannot be read is named, one line each, never skipped in silence. Text from
results.json that reaches a report (names, hashes) is capped (`cap`): a 50 MB model name must not
make a 1 GB report.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from mmnp.errors import DataError, MMNPError, UsageError
from mmnp.evaluation.schema import DELIVERY_WARNINGS, PROBE, RESULTS, check_results, number

if TYPE_CHECKING:
    from mmnp.core import Instance
    from mmnp.evaluation.runner import EvalConfig

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
    subset_id: str | None = None  # a short hash of the selection: two subsets of one dataset are told apart

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
                   subset=_subset(d.get("selection")), subset_id=_selection_id(d.get("selection")))

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
        subset = f" subset {self.subset_id}" if self.subset else ""
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


def _selection_id(selection: object) -> str | None:
    """8 hex digits of the selection's JSON: the label that tells two subsets of one dataset apart
    (the same count of instances of other tasks would otherwise read alike)."""
    if not isinstance(selection, dict):
        return None
    return hashlib.sha256(json.dumps(selection, sort_keys=True, default=str).encode()).hexdigest()[:8]


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


@dataclass(frozen=True)
class Protocol:
    """How a run's answers were asked for, beside the model and the data: best-of-n SR and QR over 1,
    3 or 10 samples, one answer or several with the verifier's feedback, greedy or sampled, are
    different measurements, so runs are ranked together only under one protocol."""

    samples: int | None  # n; None when results.json records no config (an older mmnp)
    rounds: int = 1
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    system_prompt: str | None = None
    extra: str = ""  # --gen-kwargs, as JSON
    options: str = ""  # the backend options that shape a sample (config.model_args: image_detail, dtype...), as JSON

    @classmethod
    def of(cls, results: dict) -> Protocol:
        config = results.get("config") if isinstance(results.get("config"), dict) else {}
        sampling = config.get("sampling") if isinstance(config.get("sampling"), dict) else {}
        samples, rounds = config.get("samples"), config.get("rounds", 1)
        value = lambda key: sampling[key] if number(sampling.get(key)) else None  # noqa: E731
        prompt = config.get("system_prompt")
        extra, options = sampling.get("extra"), config.get("model_args")
        return cls(samples if type(samples) is int else None, rounds if type(rounds) is int else 1,
                   value("temperature"), value("top_p"), value("max_tokens"),
                   prompt if isinstance(prompt, str) else None,
                   json.dumps(extra, sort_keys=True, default=str) if extra else "",
                   json.dumps(options, sort_keys=True, default=str) if options else "")

    @property
    def key(self) -> str:
        return json.dumps([self.samples, self.rounds, self.temperature, self.top_p, self.max_tokens,
                           self.system_prompt, self.extra, self.options])

    def describe(self) -> str:
        """The protocol in words, for the heading of its tables."""
        if self.samples is None:
            return "protocol not recorded (results.json has no config: an older mmnp)"
        answers = ("one answer per sample" if self.rounds == 1 else
                   f"up to {self.rounds} answers per sample with the verifier's feedback (--rounds {self.rounds})")
        settings = [f"temperature {self.temperature:g}" if self.temperature is not None else None,
                    f"top-p {self.top_p:g}" if self.top_p is not None else None,
                    f"max tokens {self.max_tokens:g}" if self.max_tokens is not None else None]
        if self.system_prompt is not None:
            settings.append(f"system prompt sha256 {hashlib.sha256(self.system_prompt.encode()).hexdigest()[:8]}")
        if self.extra:
            settings.append(f"request fields {cap(self.extra, 80)}")
        if self.options:
            settings.append(f"backend options {cap(self.options, 80)}")
        return (f"best of {self.samples} sample{'s' * (self.samples != 1)}, {answers}"
                + (f" ({', '.join(s for s in settings if s)})" if any(settings) else ""))


@dataclass
class Run:
    """One `mmnp eval` model folder whose results.json passed `check_results`, checked against its samples.

    `results` is what the tables show: results.json when its samples give the same numbers; for an
    `unverified` run, what its samples give (results.json itself when it has none)."""

    model: str
    folder: Path
    results: dict
    label: str = ""  # the model as shown: its name, plus its folder when two shown runs share a name
    unverified: str | None = None  # the row's mark when its numbers are not what its samples earn
    refusal: str | None = None  # ... and the one line saying which file, where, and what to do
    verified: str = "no"  # "answers": verified again on its data; "samples": recomputed from stored verdicts
    checked: str = ""  # how its numbers were checked, in words (the Runs table)
    instances: dict[str, Instance] | None = None  # its data's instances, when found and unchanged
    data_note: str | None = None  # why its answers could not be verified again on its data

    def __post_init__(self) -> None:
        self.label = self.label or self.model

    @property
    def protocol(self) -> Protocol:
        return Protocol.of(self.results)

    def modalities(self) -> list[str]:
        return [m for m, metrics in self.results["metrics"].items() if m != PROBE and metrics]

    def shows_anything(self) -> bool:
        """Whether results.json holds any figure: a score or a probe's."""
        return bool(self.modalities() or self.probe())

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

    def cut_answers(self) -> str | None:
        """Set when some answers were cut short: at the backend's size cap (`max_response_chars`), or
        stopped by the model's token limit (`--max-tokens`), so a low score may be the cap's, not the
        model's."""
        usage = self.results.get("usage") if isinstance(self.results.get("usage"), dict) else {}
        counts = [(usage.get("truncated_responses"), "at the response size cap (max_response_chars)"),
                  (usage.get("length_stops"), "at --max-tokens")]
        parts = [f"{count} {where}" for count, where in counts if type(count) is int and count > 0]
        return "answers cut: " + ", ".join(parts) if parts else None

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


def _read_results(folder: Path) -> dict | str:
    """results.json of `folder`, passed by `check_results`, or one line saying why it cannot be used."""
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
    return results


# -- a run checked against its samples, and its samples against its data ------------------------------

CLAIMS = ("missing_instances", "failed_samples", "total_samples", "complete", "metrics")  # results.json's numbers
REDO = "rerun its `mmnp eval` command with --rescore to rewrite results.json from its samples"


@dataclass
class _Samples:
    """samples.jsonl as `runner.check_stored` and `runner.compute_results` read a log (its latest record
    per key), read without the writer's repair of a torn last line: a report never changes a folder."""

    path: Path
    records: dict[str, dict]


@dataclass
class _Found:
    """The instances a dataset block names, found once for every run that names it."""

    instances: list[Instance] | None
    image: Callable[[Instance], bytes] | None
    note: str  # where they came from, or why there are none
    drawn: Callable[[Instance], bool] | None = None  # whose picture is drawn here, not read from a hashed file
    identity: dict | None = None  # the dataset block of the data found


@dataclass
class DataCache:
    """The datasets the runs name, opened (or generated again from their seed) once for all runs on them."""

    found: dict[str, _Found] = field(default_factory=dict)

    def instances(self, block: dict) -> _Found:
        """The instances the run named by `block` (results.json's dataset) was evaluated on, when its
        data is still what it was (the same hashes and selection); else none, and why."""
        key = json.dumps({k: block.get(k) for k in ("path", "generated", "modified", "selection", "benchmark_hash",
                                                    "references_hash", "content_hash")}, sort_keys=True, default=str)
        if key not in self.found:
            self.found[key] = _find(block)
        found = self.found[key]
        if found.instances is None:  # moved, on the Hub: the same data opened for another run is the same data
            twin = next((f for f in self.found.values() if f.instances is not None and _same_data(block, f.identity)),
                        None)
            if twin is not None:
                return replace(twin, note=f"{twin.note} (found by its hashes; {found.note})")
        return found


def _same_data(block: dict, identity: dict | None) -> bool:
    """Whether `block` names, by every hash and the selection, the data `identity` describes."""
    return (identity is not None and isinstance(block.get("benchmark_hash"), str)
            and all(block.get(name) == identity.get(name) for name in (
                "benchmark_hash", "references_hash", "content_hash", "modified", "selection")))


def _find(block: dict) -> _Found:
    from mmnp import __version__
    from mmnp.dataset import open_data, select_instances

    path, generated = block.get("path"), block.get("generated")
    named = cap(str(path)) if path else f"generated from seed {cap(str((generated or {}).get('seed')), 40)}"
    try:
        if isinstance(path, str) and path:
            if path.startswith("hf://"):
                return _Found(None, None, f"its dataset {cap(path)} is on the Hub, which a report does not fetch")
            if not Path(path).exists():
                return _Found(None, None, f"its dataset {cap(path)} is not there")
            modified = block.get("modified") is True
            selection = block.get("selection")
            if isinstance(selection, dict):
                tasks, difficulties, limit = selection["tasks"], selection["difficulties"], selection["limit"]
            else:  # the whole dataset
                counts = open_data(path, allow_modified=modified).manifest["counts"]
                tasks, difficulties, limit = list(counts), list(dict.fromkeys(d for c in counts.values() for d in c)), None
            chosen = select_instances(tasks, difficulties, data=path, limit=limit, allow_modified=modified)
            where = f"its dataset {cap(path)}"
        elif isinstance(generated, dict):
            chosen = select_instances(generated["tasks"], generated["difficulties"], count=generated["count"],
                                      seed=generated["seed"])
            where = f"its instances generated again from seed {generated['seed']} by mmnp {__version__}"
        else:
            return _Found(None, None, "its results.json names no dataset to verify its answers on")
    except (OSError, MMNPError, KeyError, TypeError, ValueError) as e:
        return _Found(None, None, f"its dataset {named} cannot be read or made again ({cap(str(e), 160)})")
    changed = _identity_difference(block, chosen.identity)
    if changed:
        return _Found(None, None, f"{where} {'has changed since the run' if path else 'differ'} ({changed})")
    source = chosen.dataset  # `Selection.image` reads the dataset's picture where it has one, else draws it
    return _Found(chosen.instances, chosen.image, where, lambda inst: source is None or not inst.image, chosen.identity)


def _identity_difference(block: dict, identity: dict) -> str | None:
    """What differs between the data a run names and the data found under that name (None: the same)."""
    for name in ("benchmark_hash", "references_hash", "content_hash", "modified"):
        if name in block and block[name] != identity.get(name):
            return f"another {name.replace('_', ' ')}"
    if block.get("selection") != identity.get("selection"):
        return "another selection of its instances"
    return None


def _config(results: dict, records: dict[str, dict]) -> EvalConfig:
    """The run's settings that fix what its samples are and how they are counted, from results.json's
    config (the samples themselves where an older mmnp did not record them). The probe is on only when
    results.json has its block: a later run into the same folder without --probe keeps the earlier
    run's probe samples in the log, which are not its own."""
    from mmnp.evaluation.runner import MODALITIES, EvalConfig

    config = results.get("config") if isinstance(results.get("config"), dict) else {}
    modalities = config.get("modalities")
    if not (isinstance(modalities, list) and modalities and all(m in MODALITIES for m in modalities)):
        asked = {r.get("modality") for r in records.values()}
        modalities = [m for m in MODALITIES if m in asked]
    samples = config.get("samples")
    if type(samples) is not int:
        samples = 1 + max((r["sample"] for r in records.values() if type(r.get("sample")) is int), default=0)
    rounds = config.get("rounds", 1)
    prompt = config.get("system_prompt")
    return EvalConfig(model=results["model"], modalities=tuple(modalities), samples=samples,
                      system_prompt=prompt if isinstance(prompt, str) else None,
                      rounds=rounds if type(rounds) is int and rounds >= 1 else 1,
                      probe="transcribe" if PROBE in results["metrics"] else None)


def _selected(records: dict[str, dict], block: dict) -> dict[str, dict]:
    """The records of the instances results.json's dataset block selects: its tasks and difficulties,
    and at most the first `limit` (a selection's) or `count` (generated, a preset's) ids of each task
    and difficulty, as `select_instances` takes them. A results folder's log keeps the samples of every
    earlier run into it (other --tasks, --difficulty or --limit), and those are not this run's."""
    from mmnp.releases import PRESETS

    selection, generated, preset = block.get("selection"), block.get("generated"), block.get("preset")
    spec = (selection if isinstance(selection, dict) else generated if isinstance(generated, dict)
            else PRESETS.get(preset) if isinstance(preset, str) else None)
    if not isinstance(spec, dict):
        return records  # the whole of a dataset that names no selection: every instance is the run's
    tasks, difficulties = spec.get("tasks"), spec.get("difficulties")
    most = spec.get("limit") if isinstance(selection, dict) else spec.get("count")
    shards: dict[tuple, set] = {}
    for r in records.values():
        task, difficulty = r.get("task"), r.get("difficulty")
        if (not isinstance(tasks, (list, tuple)) or task in tasks) and (
                not isinstance(difficulties, (list, tuple)) or difficulty in difficulties):
            shards.setdefault((task, difficulty), set()).add(r.get("id"))
    chosen = {i for ids in shards.values() for i in (sorted(ids, key=_order)[:most] if type(most) is int else ids)}
    return {key: r for key, r in records.items() if r.get("id") in chosen}


def _order(instance: object) -> tuple:
    """An instance id's place in its task and difficulty (`mmnp.integrity.instance_id` numbers them)."""
    from mmnp.integrity import parse_instance_id

    try:
        return (0, parse_instance_id(instance)[2], "")
    except (TypeError, UsageError):
        return (1, 0, str(instance))


def _answered(records: dict[str, dict], config: EvalConfig) -> tuple[list[Instance], dict[str, str]]:
    """The instances a run's samples (`records`: those of its selection) answer, as far as its samples
    say (id, task, difficulty, picture kind): what its numbers are recomputed over when its data is not
    at hand."""
    from mmnp.core import Instance

    asked = {**{m: config.samples for m in config.modalities}, **({PROBE: 1} if config.probe else {})}
    found: dict[str, Instance] = {}
    kinds: dict[str, str] = {}
    for r in records.values():
        if type(r.get("sample")) is not int or not 0 <= r["sample"] < asked.get(r.get("modality"), 0):
            continue
        if not all(isinstance(r.get(k), str) for k in ("id", "task", "difficulty")):
            raise ValueError(f"sample {cap(str(r.get('key')), 80)} has no id, task and difficulty")
        found.setdefault(r["id"], Instance(r["id"], r["task"], r["difficulty"], 0, {}, {}, "", "", "", {},
                                           picture={"kind": "unspecified"}))
        if isinstance(r.get("picture_kind"), str):
            kinds[r["id"]] = r["picture_kind"]
    return list(found.values()), kinds


def _named_instances(block: dict) -> int | None:
    """How many instances results.json's dataset block says the run covers, where it says."""
    from mmnp.releases import PRESETS

    selection, generated = block.get("selection"), block.get("generated")
    if isinstance(selection, dict):
        return selection.get("instances") if type(selection.get("instances")) is int else None
    preset = block.get("preset")
    spec = generated if isinstance(generated, dict) else PRESETS.get(preset) if isinstance(preset, str) else None
    try:
        return len(spec["tasks"]) * len(spec["difficulties"]) * spec["count"]
    except (TypeError, KeyError):
        return None


def _count_unseen(block: dict, answered: list[Instance], config: EvalConfig, computed: dict) -> None:
    """Without its data at hand, the instances a run's dataset block names that no sample of its
    selection answers are counted in `computed` as missing, as eval counts them (a block claiming more
    instances than its samples answer then disagrees with a complete results.json)."""
    named = _named_instances(block)
    if named is not None and len(answered) < named:
        unseen = named - len(answered)
        computed.update(complete=False, missing_instances=computed["missing_instances"] + unseen * (
            len(config.modalities) + bool(config.probe)), total_samples=computed["total_samples"] + unseen * (
            len(config.modalities) * config.samples + bool(config.probe)))


def _edited(before: dict[str, dict], after: dict[str, dict]) -> str | None:
    """The first stored verdict that its answer does not earn (`after`: verified again)."""
    for key, record in after.items():
        for name, value in record.items():
            if before[key].get(name) != value:
                return (f"sample {cap(key, 120)} records {name} {cap(json.dumps(before[key].get(name), default=str), 80)},"
                        f" but its answer verifies to {cap(json.dumps(value, default=str), 80)}")
    return None


def _difference(stored, computed, where: str) -> str | None:
    """The first number results.json states that its samples do not give (None: every one agrees;
    what results.json does not state, as an older mmnp's file, is not asked of it)."""
    if isinstance(stored, dict) and isinstance(computed, dict):
        for key, value in stored.items():
            here = f"{where}.{key}" if where else str(key)
            if key not in computed:
                return f"{cap(here, 160)} is there, its samples give none"
            found = _difference(value, computed[key], here)
            if found:
                return found
        return None
    if number(stored) and number(computed) and math.isclose(stored, computed, rel_tol=1e-9, abs_tol=1e-12):
        return None
    if stored == computed:
        return None
    shown = lambda v: f"{v:.6g}" if isinstance(v, float) else cap(json.dumps(v, default=str), 80)  # noqa: E731
    return f"{cap(where, 160)} is {shown(stored)}, its samples give {shown(computed)}"


def _cut_short(path: Path) -> int | None:
    """The number of the last line of samples.jsonl when the file ends inside it (no newline after it),
    else None. `read_samples` skips such a line (a crash mid-write), so its sample is missing from what
    the log gives: a difference with results.json is then the log's, not the file's."""
    with path.open("rb") as f:
        if f.seek(0, os.SEEK_END) == 0:
            return None
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return None
        f.seek(0)
        return 1 + sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def verify(run: Run, data: DataCache) -> None:
    """Check `run` against its samples: recompute its numbers from samples.jsonl with `mmnp eval`'s own
    code and, where its data is found unchanged, verify every stored answer on it again. A run whose
    results.json or samples disagree, or that has no samples, is marked `unverified` with one line
    (`refusal`) naming the file, the first difference and what to do. Only the samples of the selection
    results.json names are its own: a folder's log keeps those of every earlier run into it."""
    from mmnp.evaluation.backend import MESSAGES_TEMPLATE
    from mmnp.evaluation.runner import check_stored, compute_results
    from mmnp.samplelog import SAMPLES, read_samples

    path = run.folder / SAMPLES

    def refuse(mark: str, line: str, computed: dict | None = None) -> None:
        run.unverified, run.refusal, run.verified = mark, line, "no"
        run.checked = f"UNVERIFIED: {mark}"
        if computed is not None:  # shown (when asked) with what its samples earn, never results.json's claim
            run.results = {**run.results, **computed}

    if not path.exists() and not run.shows_anything():  # a run stopped before its first answer (endpoint down)
        why = run.incomplete() or "results.json holds no figure"
        return refuse("no samples", f"{path}: not there: the run answered no sample ({why}); run the same "
                      "`mmnp eval` command again once what stopped it is fixed (the error it ended with says what)")
    if not path.exists():
        return refuse("no samples.jsonl", f"{path}: not there, so results.json's numbers cannot be recomputed; "
                      "keep a results folder whole (results.json with its samples.jsonl)")
    try:
        records = {r["key"]: r for r in read_samples(path)}
    except DataError as e:
        return refuse("samples.jsonl damaged", str(e))
    except OSError as e:
        return refuse("samples.jsonl unreadable", f"{path}: cannot be read ({e.strerror or e}); check that it is "
                      "a readable file")
    results = run.results
    block = results.get("dataset") if isinstance(results.get("dataset"), dict) else {}
    stated = results.get("config") if isinstance(results.get("config"), dict) else {}
    config = _config(results, records)
    log = _Samples(path, dict(records))
    found = data.instances(block)
    other_template = stated.get("messages_template") not in (None, MESSAGES_TEMPLATE)
    run.instances = {inst.id: inst for inst in found.instances} if found.instances is not None else None
    run.data_note = None if found.instances is not None else found.note
    unmatched: list[str] = []
    try:
        if found.instances is not None:
            drawn = found.drawn or (lambda inst: False)
            loose = (lambda inst, modality: True) if other_template else (
                lambda inst, modality: modality != "text" and drawn(inst))
            stale = check_stored(log, found.instances, config, found.image, rescore=True, loose=loose,
                                 unmatched=unmatched)
            if stale:  # its answers are to other instances: none are drawn over these
                run.instances, run.data_note = None, f"its samples were not made on {found.note}"
                own = _selected(records, block)  # shown (when asked) as its own verdicts score, not on this data
                answered, kinds = _answered(own, config)
                return refuse("samples not made on its dataset", (
                    f"{path}: {len(stale)} sample(s) answer other messages than {found.note} sends (e.g. "
                    f"{cap(stale[0], 120)}): they were made on other data; evaluate it on the data its results.json "
                    "names"), compute_results(_Samples(path, own), answered, config, kinds))
            edited = _edited(records, log.records)
            if edited:
                return refuse("edited samples", f"{path}: {edited} on {found.note}: the log was edited, or written "
                              "by another mmnp's verifier; rerun its `mmnp eval` command with --rescore to verify "
                              "every stored answer again", compute_results(log, found.instances, config))
            instances, kinds = found.instances, None
        else:
            log = _Samples(path, _selected(records, block))
            instances, kinds = _answered(log.records, config)
        computed = dict(compute_results(log, instances, config, kinds))
    except DataError as e:
        return refuse("samples not as `mmnp eval` writes them", str(e))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError) as e:
        return refuse("samples not as `mmnp eval` writes them", (
            f"{path}: a sample is not a record as `mmnp eval` writes it ({type(e).__name__}: {cap(str(e), 80)}); "
            "delete its lines and run the same `mmnp eval` command again (the sample is then asked again)"))
    if found.instances is None:
        _count_unseen(block, instances, config, computed)
    # usage (failed_calls and the like) counts every call into the folder, a later run's too: not compared
    difference = _difference({name: results[name] for name in CLAIMS if name in results}, computed, "")
    torn = _cut_short(path) if difference else None
    if torn:  # the sample of that line is what its samples lack, not an edit of results.json
        return refuse("samples.jsonl cut short", f"{path}, line {torn}: cut short, the file ending inside it (an "
                      "interrupted write or a truncated copy), so its sample is not counted (results.json's "
                      f"{difference}); run the same `mmnp eval` command again (not --rescore): it drops that line "
                      "and asks again every sample the log lacks", computed)
    if difference:
        return refuse("results.json disagrees with its samples", f"{run.folder / RESULTS}: {difference}; the file "
                      f"was edited or belongs to other samples; {REDO}", computed)
    run.verified = "answers" if found.instances is not None else "samples"
    if found.instances is None:
        run.checked = f"numbers recomputed from samples.jsonl; answers not verified again: {found.note}"
    elif unmatched:
        why = ("its results.json names another mmnp's messages template" if other_template else
               "their pictures, drawn again here, are not byte for byte the ones sent (another Pillow or fonts)")
        run.data_note = (f"the messages of {len(unmatched)} sample(s) not checked: {why}; their answers verified "
                         f"again on {found.note}")
        run.checked = f"yes: every answer verified again on {found.note}; {run.data_note}"
    else:
        run.checked = f"yes: every answer verified again on {found.note}"


def gather(paths: list[Path]) -> tuple[list[Run], list[str]]:
    """(runs, one line per results folder that holds no readable results.json) under `paths`:
    each a model folder, its results.json, or a folder of model folders. Each run is checked
    against its samples (`verify`); runs on one dataset share its instances, and a run whose dataset
    moved (or is on the Hub) is verified on data of the same hashes that another run opened."""
    runs, problems, seen = [], [], set()
    data = DataCache()
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
            results = _read_results(folder)
            if isinstance(results, str):
                problems.append(results)
            else:
                runs.append(Run(cap(results["model"]), folder, results))
    for run in runs:  # every dataset named opened first: a run whose data moved is verified on the same data
        data.instances(run.results["dataset"] if isinstance(run.results.get("dataset"), dict) else {})
    for run in runs:
        verify(run, data)
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
