"""Regenerate a release and print the values mmnp.releases records for it (or record them).

    nice python benchmarks/release_hashes.py --preset mm-np-bench-v2              # build, check, print
    nice python benchmarks/release_hashes.py --preset mm-np-bench-v2 --record     # ... and write them into
                                                  # mmnp/releases.py and the README's release table
    python benchmarks/release_hashes.py --preset mm-np-bench-v2 --data DIR        # an existing build instead
    python benchmarks/release_hashes.py --preset mm-np-bench-v2 --parts 3         # built as 3 --shard parts, merged

A full release with images and exact references is about 5 minutes on 2 cores. The values are
derived from the content (the dataset is opened with the same check every reader runs); the
proven optima are counted from the references. `--record` replaces the release's references
with this OR-Tools version's (`--add` keeps those recorded for other OR-Tools versions: use it
only when mmnp's heuristics did not change since they were recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from mmnp.clikit import script_main

ROOT = Path(__file__).resolve().parent.parent
RELEASES = ROOT / "mmnp" / "releases.py"
README = ROOT / "README.md"
TABLE_START = "<!-- release table: written by benchmarks/release_hashes.py --record -->"
TABLE_END = "<!-- end of release table -->"


def build(name: str, out: Path, workers: int, parts: int) -> None:
    from mmnp.dataset import generate_dataset, merge_parts, preset_spec

    spec = preset_spec(name)
    started = time.perf_counter()
    tick = {"at": 0.0}

    def progress(done: int, total: int) -> None:
        if time.perf_counter() - tick["at"] > 30 or done == total:
            tick["at"] = time.perf_counter()
            print(f"  {done}/{total} instances, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)

    if parts <= 1:
        generate_dataset(out, spec, workers=workers, progress=progress)
    else:
        folders = [out.parent / f"{out.name}.part{k}" for k in range(1, parts + 1)]
        for k, folder in enumerate(folders, 1):
            generate_dataset(folder, spec, workers=workers, progress=progress, part=(k, parts))
        merge_parts(out, folders)
    print(f"built {name} in {time.perf_counter() - started:.0f} s ({workers} workers"
          + (f", {parts} parts merged" if parts > 1 else "") + ")", file=sys.stderr)


def values(data: Path) -> dict:
    """What the content derives: hashes (through the readers' check), task versions, counts."""
    from mmnp.dataset import open_dataset

    dataset = open_dataset(data)
    identity, manifest = dataset.identity(), dataset.manifest
    proven = sum(bool((i.reference.get("optimal") or {}).get("proven")) for i in dataset.instances())
    return {"task_versions": manifest["task_versions"], "instances": manifest["total"],
            "benchmark_hash": identity["benchmark_hash"],
            "ortools": manifest["ortools_version"], "references_hash": identity["references_hash"],
            "proven_optima": proven, "arguments": manifest["arguments"]}


def record(name: str, found: dict, add: bool) -> None:
    """Write the values into mmnp/releases.py's RECORDED block and the README's release table."""
    from mmnp import releases

    recorded = {k: dict(v) for k, v in releases.RECORDED.items()}
    entry = {"references_hash": found["references_hash"], "proven_optima": found["proven_optima"]}
    references = {**(recorded[name]["references"] if add else {}), found["ortools"]: entry}
    versions = {task: found["task_versions"][task] for task in releases.ARGUMENTS[name]["tasks"]}
    recorded[name] = {"task_versions": versions, "instances": found["instances"],
                      "benchmark_hash": found["benchmark_hash"], "references": references}
    text = RELEASES.read_text()
    start = text.index("RECORDED: dict[str, dict[str, Any]] = ")
    end = text.index("# -- end of recorded values --")
    RELEASES.write_text(text[:start] + _literal(recorded) + text[end:])
    readme = README.read_text()
    start, end = readme.index(TABLE_START) + len(TABLE_START), readme.index(TABLE_END)
    rows = ["", "| release | seed | instances | benchmark hash | OR-Tools | references hash | proven optima |",
            "|---|---|---|---|---|---|---|"]
    for release, fixed in recorded.items():
        seed = releases.ARGUMENTS[release]["seed"]
        for ortools, refs in fixed["references"].items():
            rows.append(f"| {release} | {seed} | {fixed['instances']} | `{fixed['benchmark_hash']}` | {ortools} | "
                        f"`{refs['references_hash']}` | {refs['proven_optima']} |")
    README.write_text(readme[:start] + "\n".join(rows) + "\n" + readme[end:])
    print(f"recorded {name} in {RELEASES.relative_to(ROOT)} and {README.relative_to(ROOT)}")


def _literal(recorded: dict) -> str:
    """The RECORDED block, one release member a line (json spells these str/int values as Python does)."""
    lines = ["RECORDED: dict[str, dict[str, Any]] = {"]
    for name, fixed in recorded.items():
        lines.append(f"    {json.dumps(name)}: {{")
        for key in ("task_versions", "instances", "benchmark_hash"):
            lines.append(f"        {json.dumps(key)}: {json.dumps(fixed[key])},")
        lines.append('        "references": {')
        for ortools, entry in fixed["references"].items():
            lines.append(f"            {json.dumps(ortools)}: {json.dumps(entry)},")
        lines += ["        },", "    },"]
    return "\n".join(lines + ["}", ""])


def main() -> None:
    from mmnp.dataset import PRESETS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", required=True, choices=list(PRESETS))
    parser.add_argument("--data", type=Path, help="an existing build of the release (default: build it now)")
    parser.add_argument("--out", type=Path, help="where to build it (default: a temporary folder)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--parts", type=int, default=1, help="build it as this many --shard parts, then merge")
    parser.add_argument("--record", action="store_true", help="write the values into mmnp/releases.py and README.md")
    parser.add_argument("--add", action="store_true", help="with --record: keep other OR-Tools versions' references")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mmnp-release-") as tmp:
        data = args.data
        if data is None:
            data = args.out or Path(tmp) / args.preset
            build(args.preset, data, args.workers, args.parts)
        found = values(data)
    fixed = PRESETS[args.preset]
    from mmnp.dataset import preset_spec

    if found["arguments"] != preset_spec(args.preset).to_json():
        sys.exit(f"{data} was not built with {args.preset}'s arguments (exact references and images included)")
    print(f"{args.preset}: {found['instances']} instances, {found['proven_optima']} proven optima "
          f"(OR-Tools {found['ortools']}, task versions {found['task_versions']})")
    print(f"  benchmark hash  {found['benchmark_hash']}")
    print(f"  references hash {found['references_hash']}")
    same_bench = found["benchmark_hash"] == fixed["benchmark_hash"]
    same_refs = fixed["references"].get(found["ortools"], {}).get("references_hash") == found["references_hash"]
    print(f"  recorded: benchmark hash {'equal' if same_bench else 'DIFFERS'}, references for OR-Tools "
          f"{found['ortools']} {'equal' if same_refs else 'DIFFER (or none recorded)'}")
    if args.record:
        record(args.preset, found, args.add)
    elif not (same_bench and same_refs):
        print("  to record these values: rerun with --record (then commit mmnp/releases.py and README.md)")
        sys.exit(1)


if __name__ == "__main__":
    raise SystemExit(script_main(main))
