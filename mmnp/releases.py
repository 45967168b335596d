"""The canonical test sets every leaderboard shares, frozen.

A release fixes its tasks by name (never "all" against the live registry: registering a plugin
task changes no release) and its arguments, and records what its content derives when built:
each task's version, the instance count, the benchmark hash, and per OR-Tools version it was
checked with, the references hash and the number of proven optima. A dataset carries a
release's name only when the hashes derived from its content equal the recorded ones
(`release_of`); manifest.json's arguments and claims play no part.

References depend on OR-Tools and on mmnp's heuristics (the reference solution is the
heuristic's, and the exact solve starts from it). They are keyed by the OR-Tools version they
were checked with, and a changed heuristic that changes any reference changes the references
hash, so the release's name is withheld until the release is checked again and recorded:

    nice python benchmarks/release_hashes.py --preset mm-np-bench-v2 --record
"""

from __future__ import annotations

from typing import Any

from mmnp.errors import UsageError

ARGUMENTS: dict[str, dict[str, Any]] = {
    "mm-np-bench-v1": {"tasks": ("tsp", "graph_coloring", "vertex_cover", "knapsack", "longest_cycle", "max_clique",
                                 "set_cover", "subset_sum", "min_bisection", "meeting_scheduling"),
                       "difficulties": ("easy", "medium", "hard"), "count": 34, "seed": 2026,
                       "image_size": 768, "time_limit": 10.0},
    # new instances (seed 2027) drawn with picture version 2: results on it are never mixed with v1's
    "mm-np-bench-v2": {"tasks": ("tsp", "graph_coloring", "vertex_cover", "knapsack", "longest_cycle", "max_clique",
                                 "set_cover", "subset_sum", "min_bisection", "meeting_scheduling"),
                       "difficulties": ("easy", "medium", "hard"), "count": 34, "seed": 2027,
                       "image_size": 768, "time_limit": 10.0},
}

# -- recorded by `python benchmarks/release_hashes.py --preset NAME --record`; not edited by hand --
RECORDED: dict[str, dict[str, Any]] = {
    "mm-np-bench-v1": {
        "task_versions": {"tsp": 2, "graph_coloring": 2, "vertex_cover": 2, "knapsack": 2, "longest_cycle": 2, "max_clique": 2, "set_cover": 3, "subset_sum": 2, "min_bisection": 2, "meeting_scheduling": 2},
        "instances": 1020,
        "benchmark_hash": "18559e8d1a6caf67f1bef62f05e10e3da06e40589eecc309987131a9b5828506",
        "references": {
            "9.15.6755": {"references_hash": "ddbcefd9f124f06d8ba650d2b97c338e6d28b9b90b6fe109754475999243f4cf", "proven_optima": 976},
        },
    },
    "mm-np-bench-v2": {
        "task_versions": {"tsp": 2, "graph_coloring": 2, "vertex_cover": 2, "knapsack": 2, "longest_cycle": 2, "max_clique": 2, "set_cover": 3, "subset_sum": 2, "min_bisection": 2, "meeting_scheduling": 2},
        "instances": 1020,
        "benchmark_hash": "fdf15524ae1c76e66d8a6dce4afd870577eb0bc27c1e593c0c259bb03d1183ef",
        "references": {
            "9.15.6755": {"references_hash": "14466464ab1b525ecda4bfea973074a4a241305e85d64e8c0111675944cb023f", "proven_optima": 976},
        },
    },
}
# -- end of recorded values --

PRESETS: dict[str, dict[str, Any]] = {name: {**ARGUMENTS[name], **RECORDED[name]} for name in ARGUMENTS}


def preset_spec(name: str, *, images: bool = True, optimal: bool = True):
    """The GenerateSpec of a release (the release itself has images and exact references)."""
    from mmnp.generation import GenerateSpec

    if name not in PRESETS:
        raise UsageError(f"unknown preset {name!r}; available: {', '.join(PRESETS)}")
    fixed = PRESETS[name]
    return GenerateSpec(tasks=tuple(fixed["tasks"]), difficulties=tuple(fixed["difficulties"]), count=fixed["count"],
                        seed=fixed["seed"], images=images, optimal=optimal, image_size=fixed["image_size"],
                        time_limit=fixed["time_limit"])


def release_of(benchmark_hash: str, references_hash: str) -> str | None:
    """The release whose recorded hashes a content's derived hashes equal (its references for any
    OR-Tools version it was checked with), else None."""
    for name, fixed in PRESETS.items():
        if benchmark_hash == fixed["benchmark_hash"] and any(
                entry["references_hash"] == references_hash for entry in fixed["references"].values()):
            return name
    return None


def release_note(benchmark_hash: str, references_hash: str) -> str | None:
    """Why a content with a release's instances carries no release name (None when it has the
    name, or shares nothing with any release)."""
    if release_of(benchmark_hash, references_hash):
        return None
    for name, fixed in PRESETS.items():
        if benchmark_hash == fixed["benchmark_hash"]:
            checked = ", ".join(f"OR-Tools {v}" for v in fixed["references"]) or "no OR-Tools version yet"
            return (f"its instances and pictures are {name}'s, its references are not the release's (checked with "
                    f"{checked}): Quality Ratios are not comparable with the release's")
    return None


def why_not(name: str, manifest: dict) -> str:
    """Why a build of release `name` does not carry its name, in a line."""
    fixed = PRESETS[name]
    if manifest["benchmark_hash"] == fixed["benchmark_hash"]:
        return release_note(manifest["benchmark_hash"], manifest["references_hash"]) or ""
    arguments = manifest["arguments"]
    if not arguments.get("images", True):
        return "built without pictures (--no-images), which its benchmark hash covers"
    changed = {t: v for t, v in manifest["task_versions"].items() if fixed["task_versions"].get(t) != v}
    if changed:
        return f"made with other task versions ({', '.join(f'{t} {v}' for t, v in changed.items())}) than the release"
    return ("its records or pictures differ from the release's (another Pillow build can draw other bytes; "
            "another mmnp, other prompts): use the published release, or record this one (benchmarks/release_hashes.py)")


def differing_task_versions(name: str) -> dict[str, tuple[Any, Any]]:
    """{task: (release's version, this mmnp's)} for each task of a release whose generator, prompt
    or picture changed since it was recorded: building the release now makes other data."""
    from mmnp.registry import get_task

    return {task: (version, get_task(task).version) for task, version in PRESETS[name]["task_versions"].items()
            if get_task(task).version != version}
