"""The id-list answer kit: answers that name a set of ids (`Answer: [0, 3, 4]`) parse,
compare and print alike; a verifier that uses it states only its own rule (`check`)."""

from __future__ import annotations

from typing import Callable

from mmnp.parsing import parse_int_list


def parser(noun: str) -> Callable[[str], list[int]]:
    """`parse` for a list of `noun` ids (the noun names them in parse errors)."""

    def parse(text: str) -> list[int]:
        return parse_int_list(text, noun)

    return parse


def canonical(ids: list[int]) -> tuple[int, ...]:
    """The same set however it was ordered."""
    return tuple(sorted(ids))


def format(ids: list[int]) -> str:  # noqa: A001 (the verifier protocol's name)
    return str(sorted(ids))
