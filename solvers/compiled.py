"""Heuristic inner loops compiled by numba, on first call.

A decorated function is plain Python that numba can compile (numpy arrays and scalars in and
out, no Python objects): `@compiled` leaves it callable as before and compiles it the first
time it runs (1-4 s), cached on disk where numba finds a writable place (beside the module,
else the user's cache folder; later processes load it in 0.05-0.2 s), compiled afresh in each
process where it finds none (a read-only install with no home folder). numba is imported only
then (~0.3 s): importing mmnp, a verifier or a reward never loads it. A loop may call another
`@compiled` loop of its own module (not itself): numba types and compiles that one with it and
calls it as machine code; one from another module is not seen (numba's cache of the caller
would not notice that module's edits), so numba refuses the call. The one exception is this
module's own loops, Python's Mersenne Twister (`twister`, `randbelow`), which several searches
draw from to make the moves of the Python code they replaced: a fixed algorithm, whose outputs
tests/test_solvers.py pins to Python's `random` (an edit to it must also clear numba's cache
files, `__pycache__/*.nbi` and `*.nbc`: the callers' cached machine code would keep the old
one; a fresh install compiles afresh). The
loops keep to integer arithmetic in a fixed order (a float only where a draw picks an index,
as the numpy code did), so the answers are the same on every machine; tests/test_heuristic_*.py
check each loop against the code it replaced.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from random import Random
from typing import Any, TypeVar

import numpy as np

F = TypeVar("F", bound=Callable)


def compiled(loop: F) -> F:
    """`loop`, compiled by numba (nopython, cached, GIL released) the first time it is called;
    the plain function stays available as `.py_func`."""
    machine_code: list[Callable] = []

    def dispatcher() -> Callable:
        if not machine_code:
            machine_code.append(_compile(loop))
        return machine_code[0]

    @functools.wraps(loop)
    def call(*args):
        return (machine_code[0] if machine_code else dispatcher())(*args)

    call.py_func = loop  # type: ignore[attr-defined]
    call.dispatcher = dispatcher  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]


def _compile(loop: Callable) -> Any:
    import numba

    callees = {name: value.dispatcher() for name in loop.__code__.co_names
               if callable(getattr(value := loop.__globals__.get(name), "dispatcher", None))
               and value.py_func is not loop and value.py_func.__module__ in (loop.__module__, __name__)}
    if callees:  # numba calls only what it compiled: the same code, seeing the callees' machine code
        loop = functools.update_wrapper(types.FunctionType(
            loop.__code__, {**loop.__globals__, **callees}, loop.__name__, loop.__defaults__, loop.__closure__), loop)
    try:
        return numba.njit(cache=True, nogil=True)(loop)
    except RuntimeError:  # "cannot cache ... no locator available": nowhere writable
        return numba.njit(cache=False, nogil=True)(loop)


def twister_state(seed: int) -> tuple[np.ndarray, int]:
    """`Random(seed)`'s MT19937 state as `twister` takes it: its 624 words (int64) and position."""
    words = Random(seed).getstate()[1]
    return np.array(words[:-1], dtype=np.int64), words[-1]


@compiled
def twister(state: Any, position: int) -> tuple[int, int]:
    """The next 32-bit output of MT19937 (Python's `random`, `getrandbits(32)`) from `state` (its
    624 words, an int64 array changed in place) at `position`: (the new position, the output).
    `twister_state(seed)` gives both for Random(seed)."""
    if position >= 624:
        for i in range(624):
            y = (state[i] & 0x80000000) | (state[(i + 1) % 624] & 0x7FFFFFFF)
            state[i] = state[(i + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
        position = 0
    y = state[position]
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return position + 1, y


@compiled
def randbelow(state: Any, position: int, n: int) -> tuple[int, int]:
    """Python's `randrange(n)` for 1 <= n < 2**32 from the same state: `getrandbits(k)` (the top k
    bits of one output, k = n's bit length) until it is below n: (the new position, the draw)."""
    if n < 1:
        raise ValueError("randbelow: n < 1")  # Python's randrange(0) refuses too; here it would loop
    bits = 0
    while (1 << bits) <= n:
        bits += 1
    while True:
        position, word = twister(state, position)
        draw = word >> (32 - bits)
        if draw < n:
            return position, draw
