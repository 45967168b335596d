"""What each canonical release's pictures ask of a reader: the share of each picture kind
(`mmnp.render.PICTURE_KINDS`: drawing, edge_list, table, chart) per task and difficulty, over
the exact instances a preset generates (the README's "Picture kinds" table comes from here).

    python benchmarks/picture_kinds.py [--preset mm-np-bench-v2] [--count 34]

Image SR/QR are reported per kind beside the total (results.json `metrics.image.picture_kinds`),
because a graph task's score otherwise averages perception of drawings with reading of lists.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import mmnp
from mmnp.clikit import script_main
from mmnp.dataset import PRESETS, instance_id, instance_seed, preset_spec


def shares(preset: str, count: int | None) -> dict[tuple[str, str], Counter]:
    """(task, difficulty) -> Counter of picture kinds over the preset's first `count` instances."""
    spec = preset_spec(preset, images=False, optimal=False)
    n = spec.count if count is None else min(count, spec.count)
    out = {}
    for name in spec.tasks:
        task = mmnp.get_task(name)
        for difficulty in spec.difficulties:
            kinds = Counter()
            for i in range(n):
                inst = task.generate(difficulty, instance_seed(spec.seed, i), id=instance_id(name, difficulty, i))
                kinds[task.picture(inst)[1]["kind"]] += 1
            out[name, difficulty] = kinds
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", action="append", choices=sorted(PRESETS), help="default: every preset")
    parser.add_argument("--count", type=int, default=None, help="instances per task and difficulty (default: all)")
    args = parser.parse_args()
    for preset in args.preset or sorted(PRESETS):
        start = time.perf_counter()
        table = shares(preset, args.count)
        print(f"\n{preset}: picture kinds per task and difficulty ({time.perf_counter() - start:.0f} s)")
        difficulties = list(dict.fromkeys(d for _, d in table))
        print("| task | " + " | ".join(difficulties) + " |")
        print("|---|" + "---|" * len(difficulties))
        for task in dict.fromkeys(t for t, _ in table):
            cells = []
            for d in difficulties:
                kinds = table[task, d]
                total = sum(kinds.values())
                cells.append(", ".join(f"{k} {100 * c / total:.0f}%" for k, c in kinds.most_common()))
            print(f"| {task} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    raise SystemExit(script_main(main))
