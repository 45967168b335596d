"""Meeting scheduling's kit: the clock times its generator, verifier and solver share."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=4096)
def minutes(hhmm: str) -> int:
    """Minutes since midnight of an "HH:MM" time."""
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)


def hhmm(total: int) -> str:
    """The "HH:MM" spelling of minutes since midnight."""
    return f"{total // 60:02d}:{total % 60:02d}"


def windows(available: list) -> list[tuple[int, int]]:
    """A person's availability as sorted (start, end) minutes, windows that overlap or touch
    joined: a meeting is inside the availability when it is inside their union, so one that
    runs from 09:30 to 10:30 across 09:00-10:00 and 10:00-11:00 fits (a generated instance
    never lists such windows; a hand-written one may)."""
    merged: list[tuple[int, int]] = []
    for a, b in sorted((minutes(a), minutes(b)) for a, b in available):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged
