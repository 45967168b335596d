from __future__ import annotations

import pytest

from mmnp.parsing import ParseError, extract_answer, parse_int_list, parse_value


@pytest.mark.parametrize(
    "text, value",
    [
        ("Answer: [1, 2]", "[1, 2]"),
        ("answer:[1,2] trailing words", "[1,2]"),
        ("**Answer:** [3]", "[3]"),
        ("**Answer**: (3, 4)", "(3, 4)"),
        ("Answer: 0 -> 3 -> 1", "0 -> 3 -> 1"),
        ("Answer:\n```python\n[1,\n 2]\n```", "[1,\n 2]"),
        ("Answer: [1]\nmore\nAnswer: [2]", "[2]"),
        ("ANSWER： [5]", "[5]"),
        ("Answer: the chosen items are [1, 4].", "[1, 4]"),
        ("Answer: [\"a]\", 2]", "[\"a]\", 2]"),
    ],
)
def test_extract_answer(text, value):
    assert extract_answer(text) == value


@pytest.mark.parametrize("text", ["no marker here", "Answer:", "Answer:   \n", "Answer: [1, 2", "Answer: " + "[" * 10 + "]" * 10])
def test_extract_answer_errors(text):
    with pytest.raises(ParseError):
        extract_answer(text)


@pytest.mark.parametrize(
    "value, parsed",
    [
        ("[1, 2, 3]", [1, 2, 3]),
        ("(1, 2, 3)", [1, 2, 3]),
        ("0 -> 3 -> 1", [0, 3, 1]),
        ("0 → 3 → 1", [0, 3, 1]),
        ("1, 2; 3", [1, 2, 3]),
        ("{0: 1, 1: 2}", [[0, 1], [1, 2]]),
        ('{"0": 1, "1": 2}', [[0, 1], [1, 2]]),
        ("[(0, 1, '09:30'), (2, 0, \"13:00\")]", [[0, 1, "09:30"], [2, 0, "13:00"]]),
        ("[1.0, 2]", [1.0, 2]),
        ("[a, b]", ["a", "b"]),
        # a mapping's `key:value` without spaces spells a time too: read as the pair it is there
        ("{0:10, 1:11}", [[0, 10], [1, 11]]),
        ("{0:10, 1: 11}", [[0, 10], [1, 11]]),
        ("0: 10, 1:11", [[0, 10], [1, 11]]),
        ("{0: 09:30, 1:10:00}", [[0, "09:30"], [1, "10:00"]]),
        ("[09:30, 10:00]", ["09:30", "10:00"]),
    ],
)
def test_parse_value(value, parsed):
    assert parse_value(value) == parsed


def test_a_compact_colour_mapping_is_feasible():
    """`{0:10, 1:11}` was unparsed ("colour '0:10' is not an integer") for its spacing alone."""
    from mmnp.registry import get_task

    data = {"n": 12, "edges": [[i, i + 1] for i in range(11)]}
    verdict = get_task("graph_coloring").verify({"task": "graph_coloring", "instance": data},
                                                "Answer: {" + ", ".join(f"{v}:{10 + v % 2}" for v in range(12)) + "}")
    assert verdict.feasible and verdict.objective == 2, verdict


@pytest.mark.parametrize("value", ["[1, 2)", "[1, 2]]", "{0: 1, 2}", "[1 @ 2]", "[" + "9" * 13 + "]", "[1e400]", "[NaN]"])
def test_parse_value_errors(value):
    with pytest.raises(ParseError):
        parse_value(value)


def test_nothing_is_evaluated(tmp_path):
    """A Python expression is read as text, never run: no side effect, no computed value."""
    marker = tmp_path / "hacked"
    for text in [f"Answer: __import__('os').system('touch {marker}')", "Answer: [x for x in range(3)]",
                 "Answer: eval('[1]')", f"Answer: open('{marker}', 'w')"]:
        with pytest.raises(ParseError):
            parse_int_list(text, "item")
    assert parse_int_list("Answer: [1, 2] + [3]", "item") == [1, 2]  # the list, not the sum
    assert not marker.exists()


def test_parse_int_list():
    assert parse_int_list("Answer: [0, 2.0, 1]", "city") == [0, 2, 1]
    assert parse_int_list("Answer: 7", "city") == [7]
    with pytest.raises(ParseError, match="not an integer"):
        parse_int_list("Answer: [0, 2.5]", "city")
    with pytest.raises(ParseError, match="flat list"):
        parse_int_list("Answer: [[0, 1], [2]]", "city")
    with pytest.raises(ParseError, match=r"found a nested list or a mapping \(\{\.\.\.\}\)"):  # read as pairs
        parse_int_list('Answer: {"a": 1}', "city")
    with pytest.raises(ParseError, match="not an integer"):
        parse_int_list("Answer: [true, 1]", "city")


def test_prepared_is_keyed_by_identity_not_equality():
    from mmnp.core import prepared

    calls = []
    build = lambda xs: calls.append(1) or set(xs)  # noqa: E731
    a = [[0, 1], [1, 2]]
    assert prepared(a, "t", lambda xs: build(map(tuple, xs))) == {(0, 1), (1, 2)}
    prepared(a, "t", lambda xs: build(map(tuple, xs)))
    assert len(calls) == 1  # the same object: reused
    b = [[0, 1], [1, 2]]
    prepared(b, "t", lambda xs: build(map(tuple, xs)))
    assert len(calls) == 2  # an equal but different object: rebuilt, never confused


def test_a_repeated_key_is_kept_never_collapsed_to_its_last_value():
    """JSON's dict keeps a repeated key's last value, so `{"0": 2, "0": 1}` gave vertex 0 one colour and the
    answer was feasible; read as pairs, the verifier sees vertex 0 twice, as it does in `{0: 2, 0: 1}`."""
    from mmnp.registry import get_task
    from mmnp.parsing import read_answer

    assert read_answer('Answer: {"0": 2, "0": 1, "1": 2}') == [[0, 2], [0, 1], [1, 2]]
    data = {"n": 3, "edges": [[0, 1], [1, 2]]}
    for answer in ('Answer: {"0": 2, "0": 1, "1": 2, "2": 1}', "Answer: {0: 2, 0: 1, 1: 2, 2: 1}"):
        verdict = get_task("graph_coloring").verify({"task": "graph_coloring", "instance": data}, answer)
        assert not verdict.feasible and "repeated_vertex" in {v.kind for v in verdict.violations}, verdict
    from mmnp.verifiers.meeting_scheduling import parse as meetings
    with pytest.raises(ParseError, match="names the key 'meeting' twice"):
        meetings('Answer: [{"meeting": 0, "room": 0, "start": "09:30", "meeting": 1}]')


@pytest.mark.parametrize("tail", ["", "\nThat's all.", " (done)", "\n" + "it's " * 100])
def test_the_verdict_does_not_depend_on_what_follows_the_answer(tail):
    """Mismatched brackets were accepted, tuples turned into lists, unless an apostrophe came anywhere later."""
    from mmnp.parsing import read_answer

    for value in ("[0, 1)", "(0, 1]", "[(0, 1], 2]"):
        with pytest.raises(ParseError, match="mismatched"):
            read_answer(f"Answer: {value}{tail}")
    assert read_answer(f"Answer: (0, 1){tail}") == [0, 1]
    assert read_answer(f'Answer: [("a)", 1)]{tail}') == [["a)", 1]]


def test_every_value_on_the_answer_line_is_read():
    """`(0, 0, "09:30"), (1, 0, "14:00")` was read as its first entry alone: a schedule of one meeting."""
    from mmnp.parsing import read_answer

    assert read_answer('Answer: (0, 0, "09:30"), (1, 0, "14:00"); [2, 1, "10:00"]') == [
        [0, 0, "09:30"], [1, 0, "14:00"], [2, 1, "10:00"]]
    assert extract_answer("Answer: the halves are [0, 1] -> [2, 3].") == "[[0, 1] -> [2, 3]]"
    assert read_answer('Answer: (0, 0, "09:30") (1, 0, "14:00")') == [[0, 0, "09:30"], [1, 0, "14:00"]]
    assert read_answer("Answer: [0, 1] [2, 3]") == read_answer("Answer: [0, 1] —> [2, 3]") == [[0, 1], [2, 3]]
    assert read_answer("Answer: [1, 2], which is optimal") == [1, 2]  # prose after it is not a value
    for remark in (", (total value 42)", "; (weight 17 <= 20)", " -> (length 57)", " (total 3"):
        assert read_answer(f"Answer: [0, 2, 5]{remark}") == [0, 2, 5]  # nor is a bracketed remark
    assert read_answer("Answer: [1, 2]\n[3]") == [1, 2]  # nor is the next line
    with pytest.raises(ParseError, match="flat list"):
        parse_int_list("Answer: [0, 1], [2]", "item")


def test_quoted_keys_are_read_as_json_reads_them():
    assert parse_value("{'0': 1, '1': 2}") == parse_value('{"0": 1, "1": 2}') == [[0, 1], [1, 2]]


def test_a_long_start_is_refused_not_cut():
    """A start longer than any time was cut to its first 20 characters: `"09:30" + spaces + "or 10:00"` was 09:30."""
    from mmnp.verifiers.meeting_scheduling import parse

    assert parse('Answer: [(0, 0, " 09:30 ")]') == [[0, 0, "09:30"]]
    for start in ("09:30" + " " * 15 + "or 10:00", "09:30\n" + " " * 14 + "maybe 17:00"):
        with pytest.raises(ParseError, match="is not a time of day"):
            parse(f"Answer: [(0, 0, {start!r})]".replace("'", '"'))


@pytest.mark.parametrize("entry", ["(0, 1, 10000000000000)", "(0, 1, -10000000000000)", "(0, 1e400)", "(0, NaN)",
                                   "(0, -Infinity)", "[0, 1.5e300]"])
def test_numbers_out_of_range_are_refused_inside_entries(entry):
    """The fast path skips the per-number range check of an entry only when its text can hold no such number."""
    from mmnp.parsing import read_answer

    with pytest.raises(ParseError):
        read_answer(f'Answer: [(1, 2, "09:30"), {entry}]')


@pytest.mark.parametrize("text", ["Answer: [1+1, 3]", "Answer: 1+2", "Answer: [2-3]", "Answer: 0 1 -2"])
def test_arithmetic_is_refused_never_read_as_numbers(text):
    """`[1+1, 3]` was read as [1, 1, 3], `1+2` as [1, 2] (feasible): nothing is evaluated, and now nothing
    that looks like a sum is read as a list either."""
    from mmnp.parsing import read_answer

    with pytest.raises(ParseError, match="reads as arithmetic"):
        read_answer(text)
    assert read_answer("Answer: [1, -2]") == [1, -2] and read_answer("Answer: 0 -> 3 -> 1") == [0, 3, 1]


@pytest.mark.parametrize("spelling", ["[1, {}]", "1, {}", "(1, {})", "{{0: 1, 1: {}}}", "1 -> {}"])
def test_the_bounds_hold_whatever_the_spelling(spelling):
    """One answer, one verdict: a number of 10^12 or more, a seventh level of nesting or a value over
    MAX_VALUE_CHARS is refused bracketed (JSON's fast path) as bare, parenthesised or as a mapping; a
    colour of 1e12 written bare was a full score where the same answer in brackets was unparsed."""
    from mmnp.parsing import MAX_VALUE_CHARS, read_answer

    for number in ("1e12", "1000000000000", "-1e12", "1.0e12"):
        with pytest.raises(ParseError, match="too large|out of range"):
            read_answer("Answer: " + spelling.format(number))
    assert read_answer("Answer: " + spelling.format("999999999999")) is not None
    seven = "[" * 7 + "0" + "]" * 7
    for value in (seven, seven.replace("[", "(").replace("]", ")"), "{0: " * 7 + "0" + "}" * 7):
        with pytest.raises(ParseError, match="nested more than 6"):
            read_answer("Answer: " + value)
    assert read_answer("Answer: " + "[" * 6 + "0" + "]" * 6) == [[[[[[0]]]]]]
    for key in ('"0"', "'0'"):  # six mappings deep read alike as JSON and as a literal; a seventh refused alike
        assert read_answer("Answer: " + f"{{{key}: " * 6 + "0" + "}" * 6) is not None
        with pytest.raises(ParseError, match="nested more than 6"):
            read_answer("Answer: " + f"{{{key}: " * 7 + "0" + "}" * 7)
    for value in ("[0, 3, 9" + " " * MAX_VALUE_CHARS + "]", "(0, 3, 9" + " " * MAX_VALUE_CHARS + ")"):
        with pytest.raises(ParseError, match="longer than"):
            read_answer("Answer: " + value)
