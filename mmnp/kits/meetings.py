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
