"""The shared closing of every prompt: the answer format, an example, the `Answer:` line."""

ANSWER_LINE = "End your response with one final line of the form `Answer: <your answer>`"


def answer_instructions(description: str, example: str, example_for: str = "") -> str:
    """The format (`description`), then the final-line rule, then one example line
    (`example_for`, e.g. "for 4 vertices", says which instance size it fits)."""
    context = f" ({example_for})" if example_for else ""
    return (
        f"{description}\n"
        f"You may reason step by step first. {ANSWER_LINE}, for example{context}:\n"
        f"Answer: {example}"
    )
