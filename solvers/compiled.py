"""Heuristic inner loops compiled by numba, on first call.

A decorated function is plain Python that numba can compile (numpy arrays and scalars in and
out, no Python objects): `@compiled` leaves it callable as before and compiles it the first
time it runs (1-4 s), cached on disk where numba finds a writable place (beside the module,
else the user's cache folder; later processes load it in 0.05-0.2 s), compiled afresh in each
process where it finds none (a read-only install with no home folder). numba is imported only
then (~0.3 s): importing mmnp, a verifier or a reward never loads it. A loop may call another
`@compiled` loop of its own module (not itself): numba types and compiles that one with it and
calls it as machine code; one from another module is not seen (numba's cache of the caller
would not notice that module's edits), so numba refuses the call. The
loops keep to integer arithmetic in a fixed order (a float only where a draw picks an index,
as the numpy code did), so the answers are the same on every machine; tests/test_heuristic_*.py
check each loop against the code it replaced.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any, TypeVar

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
               and value.py_func is not loop and value.py_func.__module__ == loop.__module__}
    if callees:  # numba calls only what it compiled: the same code, seeing the callees' machine code
        loop = functools.update_wrapper(types.FunctionType(
            loop.__code__, {**loop.__globals__, **callees}, loop.__name__, loop.__defaults__, loop.__closure__), loop)
    try:
        return numba.njit(cache=True, nogil=True)(loop)
    except RuntimeError:  # "cannot cache ... no locator available": nowhere writable
        return numba.njit(cache=False, nogil=True)(loop)
