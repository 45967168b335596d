"""SHA-256 of the PNG of a sample of instances per task and difficulty: run it before and
after a change to the renderer (or the layout) to show the pictures did not change.

    python benchmarks/picture_hashes.py --out before.json [--count 40] [--difficulties easy,medium,hard]
    python benchmarks/picture_hashes.py --out after.json --against before.json

With --against, prints how many pictures differ per task and difficulty (exit status 1 if
any does). Hashes cover the picture record (size, layout) too, so a moved vertex counts
even where it would round to the same pixels.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from mmnp.clikit import script_main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--against", type=Path, help="a previous --out file to compare with")
    parser.add_argument("--tasks", default="all")
    parser.add_argument("--difficulties", default="easy,medium,hard")
    parser.add_argument("--count", type=int, default=40, help="instances (seeds 0..count-1) per task and difficulty")
    args = parser.parse_args(argv)

    from mmnp.registry import resolve_tasks

    hashes: dict[str, str] = {}
    for task in resolve_tasks(args.tasks):
        for difficulty in args.difficulties.split(","):
            for seed in range(args.count):
                png, picture = task.picture(task.generate(difficulty, seed))
                digest = hashlib.sha256(png + json.dumps(picture, sort_keys=True).encode()).hexdigest()
                hashes[f"{task.name}/{difficulty}/{seed}"] = digest
    args.out.write_text(json.dumps(hashes, indent=0))
    if args.against is None:
        print(f"{len(hashes)} pictures hashed into {args.out}")
        return 0
    before = json.loads(args.against.read_text())
    differ: dict[str, int] = {}
    for key, digest in hashes.items():
        if key in before and before[key] != digest:
            cell = key.rsplit("/", 1)[0]
            differ[cell] = differ.get(cell, 0) + 1
    common = sum(key in before for key in hashes)
    unmatched = len(hashes) - common + sum(key not in hashes for key in before)
    print(f"{common} pictures compared, {sum(differ.values())} differ"
          + ("".join(f"\n  {cell}: {k}" for cell, k in sorted(differ.items())) if differ else ""))
    if unmatched:  # "no change" on samples that do not match is no verdict
        print(f"error: {unmatched} pictures are in only one of {args.out} and {args.against}; hash the same "
              "--tasks, --difficulties and --count both times", file=sys.stderr)
    return 1 if differ or unmatched else 0


if __name__ == "__main__":
    raise SystemExit(script_main(main))
