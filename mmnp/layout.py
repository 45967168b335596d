"""Graph drawings with checked geometry: a vertex placement whose straight edges never run
under a vertex they do not touch, or, when the graph is too dense for that, the knowledge
that the picture needs an adjacency panel.

A picture determines its graph only if every line can be read as the edge it is. The
checks (`faults`) are the picture's invariants, enforced at generation and re-checked by
the conformance tests from the layout stored in each record:

- `clearance`: no edge passes within `radius + margin` of a vertex it does not touch;
- `overlap`: no two discs (so no two labels, which sit inside the discs) come closer than
  `margin`; labels are clear of other edges because edges are drawn under opaque discs
  and clear them by the margin;
- `angle`: edges leaving a vertex are at least `MIN_ANGLE` degrees apart;
- `outside`: every disc lies inside the drawing box.

Layouts tried, in order, all deterministic: vertices on a circle (enough for sparse
graphs), then up to three force-directed placements (small graphs get more), each
nudged by a repair pass that pushes vertices off the edges passing too close.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy._core import umath as _umath

MIN_ANGLE = 7.0  # degrees between two edges at one vertex
MAX_STARTS = 3  # force-directed placements tried, at most, before falling back to the panel
START_WORK = 4000  # vertex x (edges + vertices) a graph may cost per extra start: small graphs get more
MAX_DENSITY = 2.6  # edges per vertex beyond which one placement is not worth trying: the panel it is
MAX_DENSITY_SMALL = 3.5  # the same for a graph small enough for several starts
HOPELESS_AFTER = 10  # repair rounds after which more crowdings than vertices end the attempt


@dataclass(frozen=True)
class Geometry:
    """Sizes, in pixels, of one graph drawing."""

    radius: float  # vertex disc radius
    margin: float  # clearance beyond the disc an edge keeps from vertices it does not touch
    box: tuple[float, float, float, float]  # (x0, y0, x1, y1) the discs must stay inside


def faults(pos: np.ndarray, edges: np.ndarray, geo: Geometry, first: bool = False) -> dict[str, int]:
    """How many times each invariant is broken (all zero: the drawing is unambiguous).

    `first`: stop at the first kind found broken (what choosing a layout needs; the
    cheapest checks go first)."""
    n = len(pos)
    r, m = geo.radius, geo.margin
    x0, y0, x1, y1 = geo.box
    out = {"outside": 0, "overlap": 0, "clearance": 0, "angle": 0}
    out["outside"] = int(((pos[:, 0] < x0 + r) | (pos[:, 0] > x1 - r) | (pos[:, 1] < y0 + r)
                          | (pos[:, 1] > y1 - r)).sum())
    if first and out["outside"]:
        return out
    z = pos[:, 0] + 1j * pos[:, 1]
    if n > 1:
        out["overlap"] = int((np.abs(z[:, None] - z[None, :])[np.triu_indices(n, 1)] < 2 * r + m).sum())
        if first and out["overlap"]:
            return out
    if len(edges):
        out["clearance"] = int((segment_distances(pos, edges) < r + m).sum())
        if first and out["clearance"]:
            return out
        out["angle"] = int((_min_angles(pos, edges) < math.radians(MIN_ANGLE)).sum())
    return out


def segment_distances(pos: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(E, n) distances from each vertex to each edge's segment; inf for its own endpoints
    (on complex coordinates: one array op per step of the geometry)."""
    z = pos[:, 0] + 1j * pos[:, 1]
    a, ab = z[edges[:, 0]], z[edges[:, 1]] - z[edges[:, 0]]
    ap = z[None, :] - a[:, None]
    t = np.clip((ap * ab.conj()[:, None]).real / np.maximum(np.abs(ab) ** 2, 1e-9)[:, None], 0.0, 1.0)
    dist = np.abs(ap - t * ab[:, None])
    rows = np.arange(len(edges))
    dist[rows, edges[:, 0]] = np.inf
    dist[rows, edges[:, 1]] = np.inf
    return dist


def _min_angles(pos: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The smallest angle between two edges at each vertex of degree >= 2 (radians)."""
    tail = np.concatenate([edges[:, 0], edges[:, 1]])
    head = np.concatenate([edges[:, 1], edges[:, 0]])
    vec = pos[head] - pos[tail]
    ang = np.arctan2(vec[:, 1], vec[:, 0])
    order = np.lexsort((ang, tail))
    tail, ang = tail[order], ang[order]
    starts = np.flatnonzero(np.r_[True, tail[1:] != tail[:-1]])
    counts = np.diff(np.r_[starts, len(tail)])
    gaps = np.diff(ang)
    same = tail[1:] == tail[:-1]
    first, last = ang[starts], ang[starts + counts - 1]
    wrap = first + 2 * math.pi - last
    result = np.full(len(starts), np.inf)
    if same.any():
        np.minimum.at(result, np.searchsorted(starts, np.flatnonzero(same), side="right") - 1, gaps[same])
    result = np.where(counts >= 2, np.minimum(result, wrap), np.inf)
    return result[counts >= 2]


def circle(n: int, geo: Geometry) -> np.ndarray:
    """Vertices evenly on a circle, vertex 0 at the top, clockwise."""
    x0, y0, x1, y1 = geo.box
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    rad = min(x1 - x0, y1 - y0) / 2 - geo.radius - 1
    a = 2 * math.pi * np.arange(n) / max(n, 1)
    return np.stack([cx + rad * np.sin(a), cy - rad * np.cos(a)], 1)


def spring(n: int, edges: np.ndarray, geo: Geometry, start: int, iterations: int = 30) -> np.ndarray:
    """A Fruchterman-Reingold placement fitted to the box, from a start that depends only
    on (n, start): deterministic, and numpy-vectorised on complex coordinates (a couple
    of ms at n = 50)."""
    start_xy = _start(n, start)
    z = start_xy[:, 0] + 1j * start_xy[:, 1]
    adj = np.zeros((n, n))
    if len(edges):
        adj[edges[:, 0], edges[:, 1]] = adj[edges[:, 1], edges[:, 0]] = 1.0
    k = 1.0 / math.sqrt(n)
    temp = 0.1
    force = np.empty((n, n), dtype=complex)
    for _ in range(iterations):
        delta = z[:, None] - z[None, :]
        dist = np.maximum(np.abs(delta), 0.01)
        pull = k * k / (dist * dist) - adj * (dist / k)
        # delta * pull (a real factor) part by part: the products complex arithmetic forms
        np.multiply(delta.real, pull, out=force.real)
        np.multiply(delta.imag, pull, out=force.imag)
        disp = force.sum(1)
        length = np.maximum(np.abs(disp), 1e-9)
        z = z + disp * (np.minimum(length, temp) / length)
        temp -= 0.1 / (iterations + 1)
    return _fit(np.stack([z.real, z.imag], 1), geo)


@lru_cache(maxsize=4096)
def _start(n: int, start: int) -> np.ndarray:
    """The random start of a placement: it depends only on these two, and seeding a
    generator costs a tenth of a medium graph's placement."""
    xy = np.random.default_rng(1000 + start).random((n, 2))
    xy.flags.writeable = False
    return xy


def _fit(pos: np.ndarray, geo: Geometry) -> np.ndarray:
    x0, y0, x1, y1 = geo.box
    pad = geo.radius + 1
    lo, hi = pos.min(0), pos.max(0)
    span = np.maximum(hi - lo, 1e-9)
    scale = min((x1 - x0 - 2 * pad) / span[0], (y1 - y0 - 2 * pad) / span[1])
    centre = np.array([(x0 + x1) / 2, (y0 + y1) / 2])
    return centre + (pos - (lo + hi) / 2) * scale


def repair(pos: np.ndarray, edges: np.ndarray, geo: Geometry, rounds: int = 30) -> np.ndarray:
    """Push vertices off edges that pass too close and apart from discs that crowd them
    (complex coordinates: one array op per step of the geometry). A placement still
    crowded at more points than it has vertices after HOPELESS_AFTER rounds is given up
    (on the presets such placements never came clean; the edge list is cheaper)."""
    n = len(pos)
    z = pos[:, 0] + 1j * pos[:, 1]
    need_edge, need_disc = geo.radius + geo.margin + 1.5, 2 * geo.radius + geo.margin + 1.5
    x0, y0, x1, y1 = geo.box
    lo_x, lo_y, hi_x, hi_y = x0 + geo.radius + 0.5, y0 + geo.radius + 0.5, x1 - geo.radius - 0.5, y1 - geo.radius - 0.5
    tail, head = edges[:, 0], edges[:, 1]
    rows = np.arange(len(edges))
    not_self = np.eye(n) * 1e9
    clip, maximum, absolute, bincount = _umath.clip, np.maximum, np.abs, np.bincount

    def pushes(at: np.ndarray, force: np.ndarray) -> np.ndarray:
        out = np.empty(n, dtype=complex)  # the same sums as bincount(real) + 1j * bincount(imag)
        out.real = bincount(at, force.real, n)
        out.imag = bincount(at, force.imag, n)
        return out

    for round_ in range(rounds):
        push = np.zeros(n, dtype=complex)
        crowded = 0
        if len(edges):
            a, ab = z[tail], z[head] - z[tail]
            ap = z[None, :] - a[:, None]
            t = clip((ap * ab.conj()[:, None]).real / maximum(absolute(ab) ** 2, 1e-9)[:, None], 0, 1)
            away = ap - t * ab[:, None]  # from each edge's closest point to each vertex
            dist = maximum(absolute(away), 1e-6)
            dist[rows, tail] = dist[rows, head] = np.inf
            e_idx, w_idx = np.nonzero(dist < need_edge)
            crowded += len(e_idx)
            if len(e_idx):
                near = dist[e_idx, w_idx]
                force = away[e_idx, w_idx] / near * (need_edge - near)
                ends = 0.3 * force  # each end of the edge takes this share, pushed the other way
                push += pushes(w_idx, 0.7 * force) - pushes(tail[e_idx], ends) - pushes(head[e_idx], ends)
        delta = z[:, None] - z[None, :]
        d = absolute(delta) + not_self
        i_idx, j_idx = np.nonzero(d < need_disc)
        crowded += len(i_idx)
        if len(i_idx):
            near = d[i_idx, j_idx]
            push += pushes(i_idx, delta[i_idx, j_idx] / maximum(near, 1e-6) * (need_disc - near) / 2)
        if not crowded or (round_ == HOPELESS_AFTER and crowded > n):
            break
        z = z + push
        moved = np.empty(n, dtype=complex)  # the same values as clip(real) + 1j * clip(imag)
        moved.real = clip(z.real, lo_x, hi_x)
        moved.imag = clip(z.imag, lo_y, hi_y)
        z = moved
    return np.stack([z.real, z.imag], 1)


def place(n: int, edges: list[list[int]] | np.ndarray, geo: Geometry) -> np.ndarray | None:
    """Vertex centres satisfying every invariant, or None: no layout tried does (the
    picture then needs the adjacency panel)."""
    e = np.asarray(edges, dtype=np.intp).reshape(-1, 2)
    candidates = [lambda: circle(n, geo)]
    # placements cost ~ rounds x vertices x (edges + vertices): small graphs, where each is
    # cheap, get several starts and are tried at a higher density (generation stays fast)
    starts = max(1, min(MAX_STARTS, START_WORK // max(1, n * (len(e) + n))))
    if len(e) <= (MAX_DENSITY_SMALL if starts > 1 else MAX_DENSITY) * n:
        candidates += [lambda s=s: repair(spring(n, e, geo, s), e, geo) for s in range(starts)]
    for make in candidates:
        pos = make()
        if not any(faults(pos, e, geo, first=True).values()):
            return pos
    return None
