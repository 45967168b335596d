"""The id-list answer kit: answers that name a set of ids (`Answer: [0, 3, 4]`), or split
the ids into two halves (one half, or both as two lists), parse, compare, check their ids
and print alike; a verifier that uses it states only its own rule (`check`)."""

from __future__ import annotations

from typing import Callable

from mmnp.core import Violation, id_check, violation
from mmnp.kits.answers import halves
from mmnp.parsing import ParseError, as_int, ints_only, parse_int_list, read_list


def parser(noun: str) -> Callable[[str], list[int]]:
    """`parse` for a list of `noun` ids (the noun names them in parse errors)."""

    def parse(text: str) -> list[int]:
        return parse_int_list(text, noun)

    return parse


def canonical(data: dict, ids: list[int]) -> tuple[int, ...]:
    """The same set however it was ordered."""
    return tuple(sorted(ids))


def format(ids: list[int]) -> str:  # noqa: A001 (the verifier protocol's name)
    return str(sorted(ids))


# Splits into two halves, read by `halves`: a flat list is one half (the other is the rest),
# a list of two lists is both halves.


def split_parser(noun: str) -> Callable[[str], list]:
    """`parse` for a split of `noun` ids: a flat list (one half) or a list of two lists (both halves)."""

    def parse(text: str) -> list:
        value = read_list(text)
        if ints_only(value):
            return value
        if len(value) == 2 and all(isinstance(h, list) for h in value):
            return [[as_int(v, noun) for v in h] for h in value]
        if any(isinstance(x, list) for x in value):
            raise ParseError(f"expected one half as a list of {noun} ids, or two halves as two lists")
        return [as_int(v, noun) for v in value]

    return parse


def split_check(solution: list, n: int, noun: str, plural: str) -> tuple[list[bool], tuple[int, int], list[Violation]]:
    """Which of 0..n-1 are in the first half, the two halves' sizes, and the violations any
    split can make: ids out of range or listed twice, in one half or both (`unknown_<noun>`,
    `repeated_<noun>`) and, when both halves are given, ids in neither (`missing_<noun>`)."""
    first, second = halves(solution)
    if second is None:
        in_first, violations = id_check(first, n, noun, plural, "listed")
        size = in_first.count(True)
        return in_first, (size, n - size), violations
    placed, violations = id_check(first + second, n, noun, plural, "listed")
    if False in placed:  # a C-speed scan: complete splits skip the listing
        violations.append(violation(f"missing_{noun}", f"{plural} in neither half",
                                    [v for v in range(n) if not placed[v]]))
    in_first = [False] * n
    for v in first:
        if 0 <= v < n:
            in_first[v] = True
    size = in_first.count(True)
    return in_first, (size, placed.count(True) - size), violations


def split_canonical(data: dict, solution: list) -> tuple[int, ...]:
    """The half that holds vertex 0, sorted: the same split however written (one half or both,
    either first)."""
    first, second = halves(solution)
    if second is None:
        return tuple(sorted(first)) if 0 in first else tuple(v for v in range(data["n"]) if v not in set(first))
    return tuple(sorted(first if 0 in first else second))


def split_format(solution: list) -> str:
    """The first half: a split is whole from one half."""
    return str(sorted(halves(solution)[0]))
