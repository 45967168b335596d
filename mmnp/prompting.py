"""The shared closing of every prompt: the answer format, then the final `Answer:` line as a
template with `<...>` placeholders.

No prompt may hold an answer that scores: a model that echoes the prompt (whole, or only its
last line) would earn SR for copying, as the former example `Answer: [0, 3, 4]` did on every
knapsack instance. The template shows what a concrete example did (the brackets, separators,
order and quoting of a real answer) but `<` starts no value of any task's format, so the
parser refuses the line on every instance (`solver:parrot` and tests/test_conformance.py
hold every prompt to this)."""

ANSWER_LINE = ("End your response with one final line in this form, with your own values in place of each <...> "
               "and as many entries as your answer needs")


def answer_instructions(description: str, template: str) -> str:
    """The format (`description`), the final-line rule, then the template line, last: an echo
    of the prompt ends with it, and the parser reads the last `Answer:` line."""
    if "<" not in template:
        raise ValueError(f"the answer template {template!r} needs <...> placeholders: a concrete answer could score")
    return f"{description}\nYou may reason step by step first. {ANSWER_LINE}:\nAnswer: {template}"
