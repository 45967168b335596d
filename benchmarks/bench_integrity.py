"""What the identity check costs every reader, on a canonical-size set (1,020 instances).

    python benchmarks/bench_integrity.py                # builds mm-np-bench-v2 with pictures, without exact
                                                        # references (~15 s on 2 cores), into a temporary folder
    python benchmarks/bench_integrity.py --data DIR     # an existing dataset

Prints, best of --repeat runs: `open_dataset` (reading the shards, splitting and hashing every
record line, checking ids, shards and the manifest's claims, deriving both hashes: what `mmnp
eval`, `verify`, `show`, `load_dataset`, training data, export and the lm-eval loader pay before
they use anything), then for scale what parsing every record costs (the readers that use them
all pay that anyway) and `--allow-modified` (every picture hashed too).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from mmnp.clikit import script_main


def best(repeat: int, run) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    from mmnp.dataset import generate_dataset, open_dataset, preset_spec

    with tempfile.TemporaryDirectory(prefix="mmnp-bench-integrity-") as tmp:
        data = args.data
        if data is None:
            data = Path(tmp) / "v2"
            generate_dataset(data, preset_spec("mm-np-bench-v2", optimal=False), workers=args.workers)
        dataset = open_dataset(data)
        records = sum(f.stat().st_size for f in data.glob("*/*.jsonl")) / 1e6
        pictures = sum(f.stat().st_size for f in data.glob("*/images/*.png")) / 1e6
        n = dataset.manifest["total"]
        check = best(args.repeat, lambda: open_dataset(data))
        parse = best(max(3, args.repeat // 4), lambda: list(dataset.instances()))
        modified = best(3, lambda: open_dataset(data, allow_modified=True))
    print(f"{n} instances, {records:.1f} MB of records, {pictures:.1f} MB of pictures ({data if args.data else 'built'})")
    print(f"  identity check (open_dataset)            {check:7.1f} ms")
    print(f"  parsing every record (Dataset.instances)  {parse:7.1f} ms  (for scale: readers that use them all)")
    print(f"  --allow-modified (every picture hashed)   {modified:7.1f} ms")


if __name__ == "__main__":
    raise SystemExit(script_main(main))
