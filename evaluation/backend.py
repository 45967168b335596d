"""What every model backend sees and returns, and the backend registry.

A backend answers chat requests; the run loop (`mmnp.evaluation.runner`) owns resuming,
verification and logging. `--model NAME:TARGET` picks a backend by name from `REGISTRY`
(`mmnp.plugins.Registry`): the built-in table `BACKENDS` (name -> "module:Class", imported only
when that backend is used) joined with the `mmnp.backends` entry points of installed plug-in
packages. `--model-args k=v,...` fills the class's `Options` dataclass.

A backend is one class: `Options` (a dataclass whose fields are `option(...)`s, each with its
help), `__init__(target, options)`, `run(requests, sampling, emit)`, and `self_test` (how the
registry-driven conformance suite, tests/test_backends.py, runs it on a CPU machine without
network, or why it cannot). Adding one is that file plus `register_backend(name, "module:Class")`,
or, from a separate package, an entry point `NAME = "module:Class"` in the group `mmnp.backends`.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from mmnp.core import Instance
from mmnp.errors import RunError, UsageError
from mmnp.plugins import Registry, UnknownPluginError
from mmnp.samplelog import sample_key

BACKENDS: dict[str, str | type] = {
    "solver": "mmnp.evaluation.solver_backend:SolverBackend",
    "openai": "mmnp.evaluation.openai_backend:OpenAIBackend",
    "hf": "mmnp.evaluation.hf_backend:HFBackend",
    "vllm": "mmnp.evaluation.vllm_backend:VLLMBackend",
}
EXAMPLES = "e.g. solver:heuristic, openai:gpt-4o-mini, hf:/path/to/model"

# How a sample's messages are rebuilt from the dataset (its `messages_sha256` is over their JSON).
MESSAGES_TEMPLATE = ("mmnp-chat-1: [system message] + one user message whose content is [the instance PNG as an "
                     "image_url data:image/png;base64 part (image modality only), {type: text, text: prompt or "
                     "image_prompt}]; sha256 over json.dumps(messages, sort_keys=True, separators=(',', ':'), "
                     "ensure_ascii=False); backend options such as image_detail are in config.model_args")


@dataclass(frozen=True)
class SelfTest:
    """How the conformance suite (tests/test_backends.py) runs a backend on a CPU machine with no
    network: `--model NAME:TARGET --model-args MODEL_ARGS`, where "{tiny_text_model}" stands for the
    path of a tiny local transformers model the suite builds and "{openai_base_url}" for the URL
    of the suite's fake OpenAI-compatible server. `requires`: modules that must be importable, or
    "cuda" for a GPU; without them the suite skips the backend, saying which is missing. `skip`:
    why the backend can never run there (the suite reports it as a skip)."""

    target: str = ""
    model_args: dict[str, Any] = field(default_factory=dict)
    requires: tuple[str, ...] = ()
    skip: str | None = None


def _check_backend(name: str, cls: Any) -> None:
    """What `--model NAME:...` needs of a registered backend (a TypeError says what it lacks)."""
    if not isinstance(cls, type):
        raise TypeError(f"expected a backend class, got {type(cls).__name__}")
    if not dataclasses.is_dataclass(getattr(cls, "Options", None)):
        raise TypeError(f"{cls.__name__}.Options must be a dataclass of its --model-args")
    if not callable(getattr(cls, "run", None)):
        raise TypeError(f"{cls.__name__} has no run(requests, sampling, emit) method")


REGISTRY: Registry[type] = Registry("mmnp.backends", BACKENDS, kind="backend", check=_check_backend)


def register_backend(name: str, target: str | type) -> None:
    """Make `--model NAME:...` use `target` (a class or a lazy "module:Class")."""
    BACKENDS[name] = target


def backend_names() -> list[str]:
    """Every backend's name (built-in, registered, plug-in) without importing any backend."""
    return REGISTRY.names()


def backend_class(name: str) -> type:
    """The backend class `name`, imported now; a broken plug-in fails here, naming itself."""
    try:
        return REGISTRY.load(name)
    except UnknownPluginError:
        raise UnknownPluginError(f"--model: unknown backend {name!r}; use one of {', '.join(backend_names())} "
                                 f"({EXAMPLES}; `mmnp backends` lists them)") from None


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 4096
    seed: int = 0
    extra: dict = field(default_factory=dict)  # --gen-kwargs: passed through to the request as given

    def identity(self) -> dict:
        d = dataclasses.asdict(self)
        if not d["extra"]:  # run.json files written before --gen-kwargs existed stay resumable
            d.pop("extra")
        return d


@dataclass(frozen=True)
class Request:
    """One sample of one instance in one modality."""

    instance: Instance
    modality: str  # "text" or "image"
    sample: int
    text: str  # the user message's text (the prompt, or the image modality's instruction)
    image: bytes | None = None  # PNG, for the image modality
    system: str | None = None
    retry: bool = False  # an earlier run's call for this sample failed
    # --rounds: the earlier rounds of this sample as (the model's answer, the verifier's feedback) turns
    history: tuple[tuple[str, str], ...] = ()
    extra_rounds: tuple[dict, ...] = ()  # the earlier rounds' scores, carried into this round's record

    @property
    def key(self) -> str:
        return sample_key(self.instance.id, self.modality, self.sample)

    def openai_messages(self) -> list[dict[str, Any]]:
        """OpenAI chat format: the image as a base64 PNG `image_url` part before the text, then the earlier
        rounds (assistant: the model's answer, user: the verifier's feedback)."""
        content: list[dict[str, Any]] = []
        if self.image is not None:
            url = "data:image/png;base64," + base64.b64encode(self.image).decode()
            content.append({"type": "image_url", "image_url": {"url": url}})
        content.append({"type": "text", "text": self.text})
        messages = [{"role": "system", "content": self.system}] if self.system else []
        messages.append({"role": "user", "content": content})
        for answer, feedback in self.history:
            messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": feedback}]
        return messages

    @property
    def round(self) -> int:
        return len(self.history) + 1

    def messages_sha256(self) -> str:
        """The hash of the messages sent, per `MESSAGES_TEMPLATE`."""
        raw = json.dumps(self.openai_messages(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(raw.encode()).hexdigest()


@dataclass
class Completion:
    text: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    error: str | None = None  # the call failed (HTTP error, timeout, malformed reply): a failure, retried next run
    attempts: int = 1
    truncated: bool = False  # the response was cut at the backend's size cap
    extra: dict = field(default_factory=dict)
    # why the model stopped, where the backend knows: "stop", or the outcomes a score must be read with:
    # "length" (--max-tokens reached), "content_filter", "tool_calls"; stored per sample, counted in usage
    finish_reason: str | None = None
    refusal: str | None = None  # the model's refusal message (OpenAI's message.refusal): scored as no answer


Emit = Callable[[Request, Completion], None]


class Backend(Protocol):
    """A backend may also declare `modalities` (e.g. ("text",) for a text-only model): a run that asks
    for pictures (--modality image/both, --probe) is then refused before any work."""

    name: str

    def run(self, requests: list[Request], sampling: Sampling, emit: Emit) -> None:
        """Answer every request, calling `emit` as each finishes (in any order). Raise
        `EndpointError` for a failure no retry can fix (the run stops, nothing more is asked)."""


class EndpointError(RunError):
    """The model endpoint refuses every request (bad key, unknown model, unreachable): stop the run.
    `sent`: requests sent whose answers were not emitted (results.json counts what was sent)."""

    def __init__(self, message: str, sent: int = 0) -> None:
        super().__init__(message)
        self.sent = sent


def option(default: Any, help: str, sample: bool = False) -> Any:
    """An `Options` field: `help` is shown by `mmnp backends NAME` (and `mmnp eval --model NAME: --help`);
    `sample=True` marks options that change what a sample is (they are checked on resume)."""
    return field(default=default, metadata={"help": help, "sample": sample})


@dataclass(frozen=True)
class OptionDoc:
    """One --model-args option of a backend, as `mmnp backends NAME` shows it."""

    name: str
    type: str
    default: Any
    help: str
    sample: bool  # changes what a sample is (checked on resume)
    required: bool  # no default: --model-args must give it


def option_docs(cls: type) -> list[OptionDoc]:
    """A backend's --model-args options, in declaration order."""
    return [OptionDoc(f.name, _type_name(f), None if f.default is dataclasses.MISSING else f.default,
                      f.metadata.get("help", ""), bool(f.metadata.get("sample")), f.default is dataclasses.MISSING
                      and f.default_factory is dataclasses.MISSING)
            for f in dataclasses.fields(cls.Options)]


def _type_name(f: dataclasses.Field) -> str:
    """A field's annotation as text, whether or not its module postpones annotations."""
    if isinstance(f.type, str):
        return f.type
    plain = isinstance(f.type, type) and typing.get_origin(f.type) is None
    return f.type.__name__ if plain else str(f.type).replace("typing.", "")


def build_options(name: str, model_args: dict[str, Any], flags: dict[str, Any] | None = None):
    """The backend `name`'s Options from --model-args (and the shortcut flags, e.g. --base-url)."""
    cls = backend_class(name)
    fields = {f.name: f for f in dataclasses.fields(cls.Options)}
    values: dict[str, Any] = {}
    for source, given in (("flag", flags or {}), ("--model-args", model_args)):
        for key, value in given.items():
            if value is None and source == "flag":
                continue
            if key not in fields:
                where = f"--{key.replace('_', '-')}" if source == "flag" else f"--model-args {key}"
                raise UsageError(f"{where}: the {name} backend has no such option; its options are "
                                 f"{', '.join(fields) or 'none'} (see mmnp backends {name})")
            values[key] = _convert(value, _type_name(fields[key]), f"{source} {key}")
    return cls.Options(**values)


def sample_options(options: Any) -> dict[str, Any]:
    """The options that change what a sample is, where they differ from their defaults."""
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
            if f.metadata.get("sample") and getattr(options, f.name) != f.default}


def make_backend(model: str, model_args: dict[str, Any] | None = None, **flags: Any) -> Backend:
    """`NAME:TARGET` -> a backend; `flags` are the CLI's shortcut flags (None = not given)."""
    name, target = split_model(model)
    return backend_class(name)(target, build_options(name, model_args or {}, flags))


def split_model(model: str) -> tuple[str, str]:
    name, sep, target = model.partition(":")
    if not sep or not target:
        raise UsageError(f"--model {model!r}: expected NAME:TARGET with NAME one of {', '.join(backend_names())} "
                         f"({EXAMPLES})")
    return name, target


def parse_kwargs(text: str | None, flag: str) -> dict[str, Any]:
    """`k=v,k2=v2` -> a dict; values are JSON where they parse (numbers, true, null, [..], {..}),
    `none` is None, anything else a string. Commas inside brackets or quotes do not split."""
    if not text:
        return {}
    parts, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    out: dict[str, Any] = {}
    for part in filter(str.strip, parts):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise UsageError(f"{flag} {part.strip()!r}: expected KEY=VALUE pairs separated by commas")
        value = value.strip()
        if value.lower() == "none":
            out[key] = None
            continue
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def _convert(value: Any, type_name: str, where: str) -> Any:
    optional = "None" in type_name
    base = type_name.replace("| None", "").replace("Optional[", "").strip(" ]")
    if value is None:
        if optional:
            return None
        raise UsageError(f"{where}: a value is required")
    if base == "bool":
        if isinstance(value, bool):
            return value
    elif base == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif base == "float":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif base == "str":
        return value if isinstance(value, str) else json.dumps(value)
    else:
        return value
    raise UsageError(f"{where}={value!r}: expected {base}")
