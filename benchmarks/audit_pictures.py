"""The pictures' audit figures: how many drawn edges run under a vertex they do not touch
(the picture suggests an edge that is not there), before (picture version 1: every graph
on one circle, straight chords under opaque discs) and now; how many pictures carry the
edge-list panel; and how many of the numbers each picture shows Tesseract reads back in
their place, at native size and at a 512 px long side, with the items it misses.

    python benchmarks/audit_pictures.py [--count 30] [--ocr 2]

Version 1's geometry is recomputed here from its formulas (circle_layout/node_radius of
mmnp/render.py before picture version 2).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

import mmnp
from mmnp.clikit import script_main
from mmnp.layout import segment_distances

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
DIFFICULTIES = ("easy", "medium", "hard")


def v1_layout(n: int, size: int = 768) -> tuple[np.ndarray, float]:
    outer = min(size, size - 30) / 2
    r = max(9.0, min(20.0, math.pi * (outer - 22) / max(n, 1) * 0.8))
    rad = outer - r - 4
    a = 2 * math.pi * np.arange(n) / n
    return np.stack([size / 2 + rad * np.sin(a), (30 + size) / 2 - rad * np.cos(a)], 1), r


def occluded(pos: np.ndarray, edges: np.ndarray, r: float) -> int:
    """Edges passing under (within the radius of) a vertex they do not touch."""
    return int((segment_distances(pos, edges) < r).any(1).sum()) if len(edges) else 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=30)
    ap.add_argument("--ocr", type=int, default=2, help="instances per task and preset read back with Tesseract (0: skip)")
    args = ap.parse_args()
    print(f"Occlusion share ({args.count} instances per cell): edges under a vertex they do not touch, "
          "v1 -> v2 (v2: all drawings | drawings without a panel); share of v2 pictures with the edge-list panel")
    print(f"{'task':20s} {'preset':7s} {'v1':>7s} {'v2 all':>8s} {'v2 no panel':>12s} {'panel':>7s}")
    for task in mmnp.list_tasks():
        if "edges" not in task.generate("easy", seed=0).data:
            continue
        for d in DIFFICULTIES:
            before = after = after_clear = total = total_clear = panels = 0
            for seed in range(args.count):
                inst = task.generate(d, seed=seed)
                e = np.array(inst.data["edges"]).reshape(-1, 2)
                pos, r = v1_layout(inst.data["n"])
                before += occluded(pos, e, r)
                layout = task.picture(inst)[1]["layout"]
                drawn = e[:0] if layout["adjacency_panel"] else e  # a panel picture draws no edge lines
                hit = occluded(np.array(layout["centres"]), drawn, layout["radius"])
                after += hit
                total += len(e)
                if layout["adjacency_panel"]:
                    panels += 1
                else:
                    after_clear += hit
                    total_clear += len(e)
            clear = f"{100 * after_clear / total_clear:.1f} %" if total_clear else "-"
            print(f"{task.name:20s} {d:7s} {100 * before / total:6.1f}% {100 * after / total:7.1f}% {clear:>12s} "
                  f"{100 * panels / args.count:6.0f}%", flush=True)
    if not args.ocr:
        return
    from ocr_readback import LONG_SIDE, TESSERACT, read_back

    if TESSERACT is None:
        sys.exit("tesseract not found: apt-get install tesseract-ocr, or pass --ocr 0")
    print(f"\nTesseract read-back ({args.ocr} instances per cell): numbers read in their place / shown "
          "(tests/ocr_readback.py), and the items missed")
    print(f"{'task':20s} {'preset':7s} {'native':>16s} {f'{LONG_SIDE} px':>16s}")
    for task in mmnp.list_tasks():
        for d in DIFFICULTIES:
            got = {None: [0, 0], LONG_SIDE: [0, 0]}
            missed = []
            for seed in range(args.ocr):
                inst = task.generate(d, seed=seed)
                png, picture = task.picture(inst)
                for side, tally in got.items():
                    rb = read_back(task.name, inst.data, png, picture, side)
                    tally[0] += rb.recovered
                    tally[1] += rb.shown
                    if rb.missed:
                        where = f"seed {seed}, {side or 'native'}, {picture['width']} x {picture['height']}"
                        missed.append(f"{where}: {', '.join(rb.missed)}")
            cells = [f"{f}/{s} {100 * f / s:5.1f}%" for f, s in got.values()]
            print(f"{task.name:20s} {d:7s} {cells[0]:>16s} {cells[1]:>16s}", flush=True)
            for line in missed:
                print(f"{'':28s}missed ({line})")


if __name__ == "__main__":
    raise SystemExit(script_main(main))
