"""The canonical test sets every leaderboard shares, frozen.

A release lists its tasks by name with the version each had (never "all" against the live
registry: registering a plugin task changes no release), its arguments, and what its content
derives: the benchmark hash, and per OR-Tools version it was checked with, the references hash
and the number of proven optima. A dataset carries a release's name only when the hashes
derived from its content equal the recorded ones (`release_of`); `manifest.json`'s arguments and
claims play no part. References also depend on mmnp's heuristics: a changed heuristic gives
other references, so a references hash the release does not record, and no name, until the
release is checked again and recorded (`python benchmarks/release_hashes.py --preset NAME`).
"""

from __future__ import annotations

from typing import Any

from mmnp.errors import UsageError

PRESETS: dict[str, dict[str, Any]] = {
    "mm-np-bench-v1": {
        "tasks": {"tsp": 1, "graph_coloring": 1, "vertex_cover": 1, "knapsack": 1, "longest_cycle": 1,
                  "max_clique": 1, "set_cover": 1, "subset_sum": 1, "min_bisection": 1, "meeting_scheduling": 1},
        "difficulties": ("easy", "medium", "hard"), "count": 34, "seed": 2026, "image_size": 768, "time_limit": 10.0,
        "instances": 1020,
        "benchmark_hash": "0" * 64,
        "references": {},
    },
    # picture version 2 (see README): new instances, so results on it are never mixed with v1's
    "mm-np-bench-v2": {
        "tasks": {"tsp": 1, "graph_coloring": 1, "vertex_cover": 1, "knapsack": 1, "longest_cycle": 1,
                  "max_clique": 1, "set_cover": 1, "subset_sum": 1, "min_bisection": 1, "meeting_scheduling": 1},
        "difficulties": ("easy", "medium", "hard"), "count": 34, "seed": 2027, "image_size": 768, "time_limit": 10.0,
        "instances": 1020,
        "benchmark_hash": "0" * 64,
        "references": {},
    },
}


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
    """Why a content that has a release's instances carries no release name (None when it has the
    name, or shares nothing with any release)."""
    if release_of(benchmark_hash, references_hash):
        return None
    for name, fixed in PRESETS.items():
        if benchmark_hash == fixed["benchmark_hash"]:
            checked = ", ".join(f"OR-Tools {v}" for v in fixed["references"]) or "no OR-Tools version yet"
            return (f"its instances and pictures are {name}'s, its references are not the release's (checked with "
                    f"{checked}): Quality Ratios are not comparable with the release's")
    return None


def differing_task_versions(name: str) -> dict[str, tuple[Any, Any]]:
    """{task: (release's version, this mmnp's)} for each task of a release whose generator, prompt
    or picture changed since: building the release now makes other data."""
    from mmnp.registry import get_task

    return {task: (version, get_task(task).version) for task, version in PRESETS[name]["tasks"].items()
            if get_task(task).version != version}
