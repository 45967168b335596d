"""The shared closing of every prompt: the answer format, an example, the `Answer:` line."""


def answer_instructions(description: str, example: str) -> str:
    return (
        f"{description}\n"
        "You may reason step by step first. End your response with one final line of exactly this form:\n"
        f"Answer: {example}"
    )
