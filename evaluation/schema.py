"""results.json, in one place: its shape (typed), and the one check every reader runs on it.

The runner writes this shape; the leaderboard reads only what `check_results` has accepted, so
a hand-edited or foreign file is one line naming the field, never a traceback or a number
drawn from a wrong type. Names that reach a report (tasks, levels, picture kinds) are bounded.
"""

from __future__ import annotations

import math
from typing import Literal, TypedDict

from mmnp.evaluation.metrics import STDERR

RESULTS = "results.json"
PROBE = "probe"  # metrics["probe"]: the perception probe's block, not a modality with SR/QR
GROUP_NUMBERS = ("sr", "qr", "sr_at_1", "qr_at_1", "opt_ratio", "distinct", "fail_rate", "instances")
GROUP_SCOPES = ("categories", "tasks", "difficulties", "task_difficulty")
PROBE_NUMBERS = ("recognition_accuracy", "field_f1")  # in each group of metrics["probe"]
KIND_SCOPES = ("tasks", "task_difficulty")  # besides "overall", in each picture kind's block
MAX_NAME = 200  # characters of a task, level or picture-kind name (ours are under 40)
DeliveryStatus = Literal["passed", "failed", "unchecked", "not_applicable", "skipped"]  # skipped: older mmnp
DELIVERY_WARNINGS = ("failed", "unchecked", "skipped")  # statuses that mark a run's image scores


class Group(TypedDict, total=False):
    """The scores of a set of instances (a task, a level, a category, overall): fractions in [0, 1]."""

    sr: float
    qr: float
    sr_at_1: float
    qr_at_1: float
    opt_ratio: float
    distinct: float
    fail_rate: float
    parse_rate: float
    instances: int
    pass_at_k: dict[str, float]
    pass_at_k_opt: dict[str, float]
    sr_se: float | None
    qr_se: float | None
    sr_at_1_se: float | None
    qr_at_1_se: float | None
    rounds: dict[str, dict[str, float]]  # --rounds: SR and QR at each round r


class KindBlock(TypedDict):
    """The image scores over the instances whose picture is of one kind (`mmnp.render.PICTURE_KINDS`)."""

    overall: Group
    tasks: dict[str, Group]
    task_difficulty: dict[str, Group]


class ModalityMetrics(TypedDict, total=False):
    overall: Group
    macro_over_tasks: Group
    categories: dict[str, Group]
    tasks: dict[str, Group]
    difficulties: dict[str, Group]
    task_difficulty: dict[str, Group]  # "task/level"
    picture_kinds: dict[str, KindBlock]  # image only


class ProbeGroup(TypedDict):
    """The perception probe over a set of instances (overall, or one task's)."""

    recognition_accuracy: float  # share of exact transcriptions
    field_f1: float  # mean over instances of the mean F1 over fields
    instances: int


class ProbeMetrics(TypedDict, total=False):
    """metrics["probe"] (--probe transcribe): recognition, not SR/QR; empty when no probe sample succeeded."""

    overall: ProbeGroup
    tasks: dict[str, ProbeGroup]


class ImageProbe(TypedDict, total=False):
    """Whether the pictures reached the model (`mmnp.evaluation.delivery`)."""

    status: DeliveryStatus
    detail: str
    samples: dict[str, int]  # image samples per `image_check`
    encoding: dict | None  # the run's encoding check: status, png_bytes, image_tokens, text_only_tokens, detail
    image_tokens: dict[str, float]  # min, max, mean over the samples that passed


class _UsageCounts(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    failed_calls: int
    truncated_responses: int


class Usage(_UsageCounts, total=False):
    """Totals over every sample in the log (this run's and earlier parts'). The answered samples whose
    finish_reason says how they ended: at --max-tokens, by the provider's content filter, or with a
    refusal; each scored as given. Absent when not recorded: in results.json written before mmnp
    counted them, and when an answered sample's record does not say (one reused from a run before
    mmnp stored finish_reason, or refusal): a count that skipped it would be a number not earned."""

    length_stops: int
    content_filter_stops: int
    refusals: int


class Timing(TypedDict, total=False):
    """The only fields that differ between an interrupted-and-resumed run and a straight one."""

    this_run_seconds: float
    this_run_calls: int
    mean_latency_s: float
    this_run_check_requests: int  # the image-delivery checks' own requests


class Results(TypedDict, total=False):
    model: str
    metrics: dict[str, ModalityMetrics | ProbeMetrics]  # "text", "image", and PROBE (recognition, not SR/QR)
    complete: bool
    missing_instances: int
    failed_samples: int
    total_samples: int
    image_probe: ImageProbe
    config: dict  # the run's identity (`EvalConfig.identity`) plus modalities, samples and messages_template
    dataset: dict  # `mmnp.dataset.Selection.identity`: benchmark_hash, references_hash, preset, modified, ...
    mmnp_version: str
    git_hash: str | None
    usage: Usage
    timestamp: str
    environment: dict  # python, platform, packages, gpu (`runner.environment`)
    timing: Timing


def number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


FRACTIONS = ("sr", "sr_at_1", "fail_rate", "parse_rate")  # shares of instances or samples: in [0, 1]


def _check_group(group, where: str, samples: int | None) -> str | None:
    """A group's numbers are numbers, and possible ones: what no run can compute (an SR of 1.7, a
    negative QR, a pass@k beyond the run's samples) is refused, never ranked."""
    if not isinstance(group, dict):
        return f"{where} is not an object"
    for key in GROUP_NUMBERS:
        if not number(group.get(key)):
            return f"{where}.{key} is {str(group.get(key))[:40]!r}, not a number"
    for key in FRACTIONS:
        if key in group and not (number(group[key]) and 0 <= group[key] <= 1):
            return f"{where}.{key} is {str(group[key])[:40]!r}, not a share in [0, 1]"
    for key in ("qr", "qr_at_1", "opt_ratio", "distinct"):
        if group[key] < 0:
            return f"{where}.{key} is {group[key]!r}, below 0"
    if type(group["instances"]) is not int or group["instances"] < 1:
        return f"{where}.instances is {group['instances']!r}, not a count of instances"
    if samples is not None and group["distinct"] > samples:
        return f"{where}.distinct is {group['distinct']!r}, more than the run's {samples} samples"
    for se in STDERR.values():
        if group.get(se) is not None and not (number(group[se]) and group[se] >= 0):
            return f"{where}.{se} is {str(group[se])[:40]!r}, not a standard error"
    rounds = group.get("rounds", {})  # --rounds: SR and QR at each round r
    if not isinstance(rounds, dict) or not all(
            r.isdigit() and isinstance(v, dict) and number(v.get("sr")) and 0 <= v["sr"] <= 1
            and number(v.get("qr")) and v["qr"] >= 0 for r, v in rounds.items()):
        return f"{where}.rounds is not SR and QR per round (SR in [0, 1], QR at least 0)"
    for curve in ("pass_at_k", "pass_at_k_opt"):
        values = group.get(curve)
        if not isinstance(values, dict) or not all(k.isdigit() and number(v) and 0 <= v <= 1 for k, v in values.items()):
            return f"{where}.{curve} is not a curve of shares in [0, 1]"
        if any(not 1 <= int(k) <= (samples or int(k)) for k in values):
            return f"{where}.{curve} has a k outside 1..{samples} (the run's samples)"
    return None


def _check_groups(groups, where: str, samples: int | None, cells: bool = False) -> str | None:
    """A {name: group} scope: an object of well-formed groups under bounded names (cells: "task/level")."""
    if not isinstance(groups, dict):
        return f"{where} is not an object"
    for name, g in groups.items():
        if len(name) > MAX_NAME:
            return f"{where} has a name of {len(name):,} characters (names are at most {MAX_NAME})"
        if cells and "/" not in name:
            return f"{where}.{name} is not named task/level"
        problem = _check_group(g, f"{where}.{name}", samples)
        if problem:
            return problem
    return None


def _check_kinds(kinds, where: str, samples: int | None) -> str | None:
    problem = _check_groups({k: b.get("overall") if isinstance(b, dict) else None for k, b in kinds.items()}, where,
                            samples) if isinstance(kinds, dict) else f"{where} is not an object"
    for kind, block in (kinds.items() if not problem else ()):
        for scope in KIND_SCOPES:
            problem = problem or _check_groups(block.get(scope), f"{where}.{kind}.{scope}", samples,
                                               scope == "task_difficulty")
    return problem


def check_results(results) -> str | None:
    """Where results.json departs from the shape readers use (None when it does not)."""
    if not isinstance(results, dict):
        return "not a JSON object"
    if not isinstance(results.get("model"), str) or not results["model"]:
        return "no 'model' name"
    metrics = results.get("metrics")
    if not isinstance(metrics, dict):
        return "no 'metrics' object"
    samples = (results.get("config") or {}).get("samples") if isinstance(results.get("config"), dict) else None
    if samples is not None and (type(samples) is not int or samples < 1):
        return f"config.samples is {str(samples)[:40]!r}, not a count of samples"
    for modality, block in metrics.items():
        if not block:
            continue
        where = f"metrics.{modality}"
        if not isinstance(block, dict):
            return f"{where} is not an object"
        if modality == PROBE:
            tasks = block.get("tasks") if isinstance(block.get("tasks"), dict) else {}
            groups = {"overall": block.get("overall"), **{f"tasks.{t}": g for t, g in tasks.items()}}
            for name, g in groups.items():
                if not isinstance(g, dict) or not all(number(g.get(k)) and 0 <= g[k] <= 1 for k in PROBE_NUMBERS):
                    return f"{where}.{name[:MAX_NAME]} lacks recognition_accuracy and field_f1 as shares in [0, 1]"
            continue
        problem = _check_group(block.get("overall"), f"{where}.overall", samples)
        for scope in GROUP_SCOPES:
            problem = problem or _check_groups(block.get(scope), f"{where}.{scope}", samples,
                                               scope == "task_difficulty")
        if not problem and "picture_kinds" in block:
            problem = _check_kinds(block["picture_kinds"], f"{where}.picture_kinds", samples)
        if problem:
            return problem
    probe = results.get("image_probe")
    if probe is not None and not (isinstance(probe, dict) and isinstance(probe.get("status"), str)):
        return "image_probe is not an object with a status"
    return None
