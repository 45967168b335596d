"""What every model backend sees and returns, and `--model` parsing.

A backend answers chat requests; the run loop (`mmnp.evaluation.runner`) owns resuming,
verification and logging. Backends: `solver:NAME` (reference solvers as baseline
"models"), `openai:MODEL` (any OpenAI-compatible endpoint), `hf:PATH` (transformers),
`vllm:PATH` (offline vLLM, optional extra).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from mmnp.core import Instance


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 4096
    seed: int = 0


@dataclass(frozen=True)
class Request:
    """One sample of one instance in one modality."""

    instance: Instance
    modality: str  # "text" or "image"
    sample: int
    text: str  # the user message's text (the prompt, or the image modality's instruction)
    image: bytes | None = None  # PNG, for the image modality
    system: str | None = None

    @property
    def key(self) -> str:
        return f"{self.instance.id}|{self.modality}|{self.sample}"

    def openai_messages(self) -> list[dict[str, Any]]:
        """OpenAI chat format: the image as a base64 PNG `image_url` part before the text."""
        content: list[dict[str, Any]] = []
        if self.image is not None:
            url = "data:image/png;base64," + base64.b64encode(self.image).decode()
            content.append({"type": "image_url", "image_url": {"url": url}})
        content.append({"type": "text", "text": self.text})
        messages = [{"role": "system", "content": self.system}] if self.system else []
        return messages + [{"role": "user", "content": content}]


@dataclass
class Completion:
    text: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    error: str | None = None  # the call failed (HTTP error, timeout): counted as a failure, retried next run
    attempts: int = 1
    extra: dict = field(default_factory=dict)


Emit = Callable[[Request, Completion], None]


class Backend(Protocol):
    name: str

    def run(self, requests: list[Request], sampling: Sampling, emit: Emit) -> None:
        """Answer every request, calling `emit` as each finishes (in any order)."""


def make_backend(model: str, **options: Any) -> Backend:
    """`kind:target` -> a backend; options are the CLI's (base_url, concurrency, ...)."""
    kind, sep, target = model.partition(":")
    if not sep or not target:
        raise ValueError(f"--model {model!r}: expected KIND:TARGET with KIND one of solver, openai, hf, vllm "
                         "(e.g. solver:heuristic, openai:gpt-4o-mini, hf:/path/to/model)")
    if kind == "solver":
        from mmnp.evaluation.solver_backend import SolverBackend

        return SolverBackend(target, time_limit=options.get("time_limit", 10.0))
    if kind == "openai":
        from mmnp.evaluation.openai_backend import OpenAIBackend

        return OpenAIBackend(target, base_url=options.get("base_url"), api_key_env=options.get("api_key_env"),
                             concurrency=options.get("concurrency", 8), max_retries=options.get("max_retries", 5),
                             timeout=options.get("timeout", 300.0))
    if kind == "hf":
        from mmnp.evaluation.hf_backend import HFBackend

        return HFBackend(target, batch_size=options.get("batch_size", 8), device=options.get("device"))
    if kind == "vllm":
        from mmnp.evaluation.vllm_backend import VLLMBackend

        return VLLMBackend(target)
    raise ValueError(f"--model {model!r}: unknown backend {kind!r}; use solver, openai, hf or vllm")
