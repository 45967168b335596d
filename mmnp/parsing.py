"""Tolerant, bounded, code-free parsing of a model's final `Answer:` line.

Every task's parser goes through here: find the last `Answer:` marker, cut out the value
(a bracketed literal, or the rest of the line for arrow chains such as `0 -> 3 -> 1`),
and read it as data with `json` or a small literal reader. Nothing is evaluated, input
size and nesting are bounded, and every failure is a `ParseError` with a message a
person can act on.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_VALUE_CHARS = 20_000  # an honest answer to any task here is far shorter
MAX_DEPTH = 6
MAX_DIGITS = 12
MAX_ITEMS = 10_000
_LIMIT = 10**MAX_DIGITS


class ParseError(ValueError):
    """The answer could not be read as the task's format; the message says why."""


_MARKER_TAIL = re.compile(r"\s{0,8}(?:\*\*|__)?\s{0,8}[:：]")
# Fallback: searched on the reversed text so the first hit is the last marker.
_REVERSED_MARKER = re.compile(r"[:：]\s{0,8}(?:\*\*|__)?\s{0,8}rewsna", re.IGNORECASE)
_MAX_CANDIDATES = 64
_FENCE = re.compile(r"^\s*(?:\*\*|__|`{3}[A-Za-z]*|`|\$+|\\boxed\{|\\\[|\s)+")
_OPEN = {"[": "]", "(": ")", "{": "}"}
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<time>\d{1,2}:\d{2}(?![\d:]))
      | (?P<num>[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
      | (?P<str>"[^"\n]{0,64}"|'[^'\n]{0,64}')
      | (?P<word>[A-Za-z_][A-Za-z0-9_]{0,63})
      | (?P<arrow>->|=>|→|⟶|—>|–>)
      | (?P<punct>[\[\](){},:;])
      | (?P<bad>\S)
    )""",
    re.VERBOSE,
)


def _value_start(text: Any) -> str:
    """The text after the last `Answer:` marker, markdown and code fences stripped."""
    if not isinstance(text, str):
        raise ParseError(f"the response is {type(text).__name__}, not text")
    start = _last_marker_end(text)
    if start is None:
        raise ParseError("no 'Answer:' line found; end the response with a line 'Answer: <value>'")
    rest = _FENCE.sub("", text[start : start + MAX_VALUE_CHARS + 64], count=1)
    if not rest:
        raise ParseError("the 'Answer:' line is empty")
    return rest


def extract_answer(text: Any) -> str:
    """The value after the last `Answer:` marker, with markdown and code fences removed."""
    rest = _value_start(text)
    if rest[0] in _OPEN:
        return _bracketed_values(rest)
    line = rest.split("\n", 1)[0].strip().rstrip(".`*$}")
    if not line:
        raise ParseError("the 'Answer:' line is empty")
    if not line[0].isdigit() and line[0] not in "+-":
        # prose before the value ("Answer: the items are [1, 4]"): start at the first bracket
        bracket = min((i for i in (line.find(c) for c in _OPEN) if i >= 0), default=-1)
        if bracket >= 0:
            return _bracketed_values(rest[rest.index(line) + bracket :])
    return line


def read_answer(text: Any) -> Any:
    """The last `Answer:` value as data. Well-formed JSON-like answers (tuples included)
    take one C-speed `raw_decode`; anything else goes through the bounded literal reader. The
    fast path stands down where turning tuples into lists would change the value (mismatched
    brackets, a bracket inside a string) or where more may follow on the line."""
    rest = _value_start(text)
    if rest[0] in "[(":
        try:
            loaded, end = _DECODER.raw_decode(rest.translate(_TUPLES_AS_LISTS))
        except (ValueError, RecursionError):
            pass
        else:
            value = rest[:end]
            if end > MAX_VALUE_CHARS:
                raise ParseError(f"the answer is longer than {MAX_VALUE_CHARS} characters")
            if _NEXT_VALUE.match(rest, end) is None and _tuples_safe(value):
                nested = value.count("[") + value.count("(") > 1  # else `_normalise` checks the numbers at C speed
                return _normalise(loaded, 0, nested and _small_numbers(value))
    return parse_value(extract_answer(text))


class _Pairs(list):
    """A JSON object as its (key, value) pairs, in order, a repeated key kept: a colouring that names a
    vertex twice is a repeated vertex, as the literal reader reads it, never its last colour alone."""


_DECODER = json.JSONDecoder(object_pairs_hook=_Pairs)
# another bracketed value after the first on its line, after a separator or a space: `(0, 0, "09:30"), (1, 0,
# "14:00")` and `[0, 1] [2, 3]` are lists of both (a bracketed remark, `[0, 2] (total 42)`, is not: `_a_value`)
_NEXT_VALUE = re.compile(r"[ \t]*(?:(?:,|;|->|=>|→|⟶|—>|–>)[ \t]*)?[\[({]")
_QUOTED = re.compile(r""""[^"\n]*"|'[^'\n]*'""")
_LETTER = re.compile(r"[A-Za-z]")
_DIGITS_AS_ZERO = str.maketrans("123456789", "000000000")


def _small_numbers(value: str) -> bool:
    """Whether every number JSON reads in `value` is an int within range and every list is within
    MAX_ITEMS: no float (a point, an exponent, NaN, Infinity), no 13 digits in a row, and fewer
    characters than MAX_ITEMS. String methods only (a regex for this costs more than the decoding)."""
    return (len(value) < MAX_ITEMS and "." not in value and "e" not in value and "E" not in value
            and "N" not in value and "I" not in value and "0" * (MAX_DIGITS + 1) not in value.translate(_DIGITS_AS_ZERO))


_BRACKETS_ONLY = str.maketrans("", "", "".join(chr(c) for c in range(128) if chr(c) not in "[](){}"))


def _tuples_safe(value: str) -> bool:
    """Whether turning `value`'s parentheses into square brackets reads it as the literal reader does:
    every bracket closes the kind it opened (`[0, 1)` is not `[0, 1]`) and no string holds one
    (`("a)", 1)` keeps its "a)"). String methods only: this runs on every tuple answer in an RL loop."""
    if "(" not in value and ")" not in value:  # nothing was turned into a list's bracket
        return True
    if "\\" in value:  # an escaped quote would shift the strings below: leave it to the literal reader
        return False
    parts = value.split('"')  # outside strings, inside, outside, ...
    inside = "".join(parts[1::2])
    if "(" in inside or ")" in inside or "[" in inside or "]" in inside:
        return False
    brackets = "".join(parts[::2]).translate(_BRACKETS_ONLY)  # any other character left in: "not safe"
    for _ in range(MAX_DEPTH + 2):  # innermost pairs away, one level a pass
        inner = brackets.replace("()", "").replace("[]", "").replace("{}", "")
        if inner == brackets:
            break
        brackets = inner
    return not brackets


def _bracketed_values(rest: str) -> str:
    """The bracketed value at the start of `rest`; where more follow it on its line, separated by
    commas, semicolons or arrows, all of them as one list, never the first alone."""
    value = _bracketed(rest)
    end, more = len(value), False
    while (follows := _NEXT_VALUE.match(rest, end)) is not None:
        start = follows.end() - 1
        try:
            following = _bracketed(rest[start:])
        except ParseError:  # not a value: an unclosed remark
            break
        if _LETTER.search(_QUOTED.sub("", following)):  # words outside strings: a remark, `(total value 42)`
            break
        end, more = start + len(following), True
        if end > MAX_VALUE_CHARS:
            raise ParseError(f"the answer is longer than {MAX_VALUE_CHARS} characters")
    return f"[{rest[:end]}]" if more else value


def _last_marker_end(text: str) -> int | None:
    """Where the value after the last `Answer:` starts. `rfind` from the end finds it in
    microseconds in real responses; after a bounded number of false hits ("answer" with no
    colon) one linear regex pass over the rest keeps hostile inputs linear too."""
    low = text.lower()
    if len(low) == len(text):  # lower() kept every index (true unless exotic case mappings)
        end = len(low)
        for _ in range(_MAX_CANDIDATES):
            i = low.rfind("answer", 0, end)
            if i < 0:
                return None
            tail = _MARKER_TAIL.match(low, i + 6)
            if tail:
                return tail.end()
            end = i + 5
        text = text[:end]
    match = _REVERSED_MARKER.search(text[::-1])
    return None if match is None else len(text) - match.start()


_STRUCTURE = re.compile(r"[\"'\[\](){}]")


def _bracketed(rest: str) -> str:
    """The balanced bracketed value at the start of `rest` (brackets inside strings ignored)."""
    depth = 0
    quote = ""
    for m in _STRUCTURE.finditer(rest, 0, MAX_VALUE_CHARS):
        ch = m.group()
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[({":
            depth += 1
            if depth > MAX_DEPTH:
                raise ParseError(f"the answer is nested more than {MAX_DEPTH} levels deep")
        else:
            depth -= 1
            if depth == 0:
                return rest[: m.end()]
    if len(rest) > MAX_VALUE_CHARS:
        raise ParseError(f"the answer is longer than {MAX_VALUE_CHARS} characters")
    raise ParseError("the answer's brackets are not closed")


def parse_value(value: str) -> Any:
    """Read an answer value as nested lists of ints, floats and strings (dicts as pair lists)."""
    if len(value) > MAX_VALUE_CHARS:
        raise ParseError(f"the answer is longer than {MAX_VALUE_CHARS} characters")
    if value[:1] in "[{":
        try:
            loaded = json.loads(value, object_pairs_hook=_Pairs)
        except (ValueError, RecursionError):
            pass  # not strict JSON: single quotes, bare words, arrows; the literal reader takes it
        else:
            return _normalise(loaded, 0)
    return _LiteralReader(value).read()


_TUPLES_AS_LISTS = str.maketrans("()", "[]")
_INT = frozenset((int,))
_LEAVES = frozenset((int, str))


def ints_only(values: list) -> bool:
    """Every item a plain int (bools excluded), as `all(type(x) is int ...)` says, from the set
    of the items' types: one C loop, a third less time than that generator on a 22-id answer
    (every id-list verification in an RL loop makes this test twice)."""
    return {*map(type, values)} <= _INT


def _normalise(obj: Any, depth: int, in_range: bool = False) -> Any:
    """JSON objects become [key, value] pair lists, keys that spell integers become ints. `in_range`:
    the text read holds no number that could be out of range (`_small_numbers`)."""
    if depth >= MAX_DEPTH and isinstance(obj, list):  # the outermost bracket is depth 0: MAX_DEPTH levels of
        raise ParseError(f"the answer is nested more than {MAX_DEPTH} levels deep")  # them, as the literal reader
    if type(obj) is _Pairs:
        if len(obj) > MAX_ITEMS:
            raise ParseError(f"the answer has more than {MAX_ITEMS} entries")
        return [[_key(k), _normalise(v, depth + 1)] for k, v in obj]
    if isinstance(obj, list):
        if len(obj) > MAX_ITEMS:
            raise ParseError(f"the answer has more than {MAX_ITEMS} entries")
        if ints_only(obj):  # the common case
            if obj and (max(obj) >= _LIMIT or min(obj) <= -_LIMIT):
                raise ParseError("a number in the answer is too large")
            return obj
        out = []
        for x in obj:  # leaves inline: answers are wide and shallow
            if type(x) is int and -_LIMIT < x < _LIMIT or type(x) is str:
                out.append(x)
            elif type(x) is list and in_range and {*map(type, x)} <= _LEAVES and depth + 1 < MAX_DEPTH:
                out.append(x)  # ids and times (a schedule's entry), every number known small: one C pass
            else:
                out.append(_normalise(x, depth + 1, in_range))
        return out
    if isinstance(obj, int) and not isinstance(obj, bool) and not -_LIMIT < obj < _LIMIT:
        raise ParseError("a number in the answer is too large")
    if isinstance(obj, float) and not -_LIMIT < obj < _LIMIT:  # also rejects inf and NaN
        raise ParseError(f"the number {obj} in the answer is out of range")
    return obj


def _key(key: str) -> Any:
    return int(key) if re.fullmatch(r"-?\d{1,12}", key) else key


class _LiteralReader:
    """A recursive-descent reader for Python-ish literals and arrow chains; it never evaluates."""

    def __init__(self, value: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        for m in _TOKEN.finditer(value):
            kind = m.lastgroup
            if kind is None:
                continue
            text = m.group(kind)
            if kind == "bad":
                raise ParseError(f"unexpected character {text!r} in the answer")
            if kind == "num" and text[0] in "+-" and self.tokens and self.tokens[-1][0] == "num":
                raise ParseError(f"{self.tokens[-1][1] + text!r} reads as arithmetic, which the answer is not: separate "
                                 "its numbers with commas")  # `1+1` and `2-3` are not [1, 1] and [2, -3]
            self.tokens.append((kind, text))
            if len(self.tokens) > 4 * MAX_ITEMS:
                raise ParseError(f"the answer has more than {MAX_ITEMS} entries")
        self.pos = 0

    def read(self) -> Any:
        if not self.tokens:
            raise ParseError("the answer is empty")
        if self.tokens[0][1] in _OPEN:
            result = self._item(0)
            if self.pos != len(self.tokens):
                raise ParseError(f"unexpected {self.tokens[self.pos][1]!r} after the answer's closing bracket")
            return result
        return self._sequence(end=None, depth=0)  # a bare chain: 0 -> 3 -> 1, or 0, 3, 1

    def _item(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise ParseError(f"the answer is nested more than {MAX_DEPTH} levels deep")
        if self.pos >= len(self.tokens):
            raise ParseError("the answer ends in the middle of a value")
        kind, text = self.tokens[self.pos]
        self.pos += 1
        if kind == "punct" and text in _OPEN:
            return self._sequence(end=_OPEN[text], depth=depth + 1)
        if kind == "num":
            return _number(text)
        if kind == "str":
            return text[1:-1]
        if kind == "time":
            return _Time(text)
        if kind == "word":
            return text
        raise ParseError(f"unexpected {text!r} in the answer")

    def _sequence(self, end: str | None, depth: int) -> list:
        items: list = []
        while self.pos < len(self.tokens):
            kind, text = self.tokens[self.pos]
            if end is not None and text == end:
                self.pos += 1
                return _pairs_if_mapping(items, braces=end == "}")
            if kind == "arrow" or text in ",;":
                self.pos += 1
                continue
            if text == ":":
                self.pos += 1
                items.append(_COLON)
                continue
            if kind == "punct" and text in ")]}":
                raise ParseError(f"mismatched {text!r} in the answer")
            items.append(self._item(depth))
            if len(items) > MAX_ITEMS:
                raise ParseError(f"the answer has more than {MAX_ITEMS} entries")
        if end is not None:
            raise ParseError("the answer's brackets are not closed")
        return _pairs_if_mapping(items)


_COLON = object()


class _Time(str):
    """A `9:30` token: a time of day, or a `key:value` pair written without a space."""


def _pairs_if_mapping(items: list, braces: bool = False) -> list:
    """`{0: 1, 1: 2}` and `0: 1, 1: 2` become [[0, 1], [1, 2]]; plain lists pass through.
    In a mapping, `{0:10, 1:11}` is read as pairs too, though `0:10` also spells a time."""
    if braces or _COLON in items:
        items = _split_keyed_times(items)
    if _COLON not in items:
        return [str(x) if type(x) is _Time else x for x in items]
    if len(items) % 3 or any(items[i] is not _COLON for i in range(1, len(items), 3)):
        raise ParseError("a mapping in the answer is not a list of 'key: value' pairs")
    return [[_key(items[i]) if type(items[i]) is str else items[i],  # '0' as a key is 0, as JSON's "0" is
             str(items[i + 2]) if type(items[i + 2]) is _Time else items[i + 2]]
            for i in range(0, len(items), 3)]


def _split_keyed_times(items: list) -> list:
    """A time token where a mapping's key stands and no colon follows it is `key:value`."""
    out: list = []
    for i, item in enumerate(items):
        if type(item) is _Time and len(out) % 3 == 0 and (i + 1 == len(items) or items[i + 1] is not _COLON):
            key, value = item.split(":")
            out += [int(key), _COLON, int(value)]
        else:
            out.append(item)
    return out


def _number(text: str) -> int | float:
    digits = text.lstrip("+-").split(".")[0].split("e")[0].split("E")[0]
    if len(digits) > MAX_DIGITS or ("e" in text.lower() and "." not in text and len(text) > MAX_DIGITS):
        raise ParseError(f"the number {text[:20]!r} is too large")
    if "." in text or "e" in text.lower():
        number = float(text)
        if number != number or abs(number) >= _LIMIT:  # the bound a bracketed answer's numbers have
            raise ParseError(f"the number {text[:20]!r} is out of range")
        return number
    return int(text)


def as_int(x: Any, what: str) -> int:
    """An integer entry, accepting 3.0 but not 3.5, True, or '3'."""
    if isinstance(x, bool):
        raise ParseError(f"{what} {x!r} is not an integer")
    if isinstance(x, int):
        return x
    if isinstance(x, float) and x.is_integer():
        return int(x)
    raise ParseError(f"{what} {str(x)[:20]!r} is not an integer")


def read_list(text: Any) -> list:
    """The answer as a list: a lone value is a list of one (`Answer: 3` names one id)."""
    value = read_answer(text)
    return value if isinstance(value, list) else [value]


def parse_int_list(text: Any, what: str) -> list[int]:
    """The common answer shape: a flat list (or arrow chain) of integer ids."""
    value = read_list(text)
    if ints_only(value):
        return value
    out = []
    for x in value:
        if isinstance(x, list):
            raise ParseError(f"expected a flat list of {what} ids, found a nested list or a mapping ({{...}})")
        out.append(as_int(x, what))
    return out


def parse_cycle(text: Any, what: str) -> list[int]:
    """A cycle of ids; a closed cycle may repeat its start at the end."""
    cycle = parse_int_list(text, what)
    return cycle[:-1] if len(cycle) > 1 and cycle[0] == cycle[-1] else cycle
