"""Heuristic inner loops compiled by numba, on first call.

A decorated function is plain Python that numba can compile (numpy arrays and scalars in and
out, no Python objects): `@compiled` leaves it callable as before and compiles it the first
time it runs (1-4 s), cached on disk where numba finds a writable place (beside the module,
else the user's cache folder; later processes load it in 0.05-0.2 s), compiled afresh in each
process where it finds none (a read-only install with no home folder). numba is imported only
then (~0.3 s): importing mmnp, a verifier or a reward never loads it. The loops keep to integer arithmetic in a fixed order
(a float only where a draw picks an index, as the numpy code did), so the answers are the same
on every machine; tests/test_heuristic_*.py check each loop against the code it replaced.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)


def compiled(loop: F) -> F:
    """`loop`, compiled by numba (nopython, cached, GIL released) the first time it is called;
    the plain function stays available as `.py_func`."""
    machine_code: list[Callable] = []

    @functools.wraps(loop)
    def call(*args):
        if not machine_code:
            import numba

            try:
                machine_code.append(numba.njit(cache=True, nogil=True)(loop))
            except RuntimeError:  # "cannot cache ... no locator available": nowhere writable
                machine_code.append(numba.njit(cache=False, nogil=True)(loop))
        return machine_code[0](*args)

    call.py_func = loop  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]
