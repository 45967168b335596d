"""Any OpenAI-compatible chat endpoint (vLLM's and SGLang's servers, hosted APIs).

`concurrency` requests in flight; 429, 5xx, timeouts and connection errors are retried
with exponential backoff (honouring Retry-After). The first request (of a sample not failed
before) goes alone, and while it fails after its retries the next ones go alone too, up to
`CANARIES`, each a different prompt (another task's where there is one): the run stops with the
server's message only when every one failed (or the server cannot be reached at all), instead of
recording a failure per sample; one prompt (or one task's prompts) the server always fails on
gives failed samples, never a blocked run. 401, 403 and 404 (bad key, no access, unknown model)
stop the run at any time.
Any other failure, and any reply that is not a well-formed chat completion (wrong types,
non-UTF-8, deep nesting, NaN counts, lone surrogates) or that ended without an answer
(`finish_reason` "abort", "error" or one mmnp does not know; a tool call with no text), is a failed
sample with its reason, asked again on the next run. "length" and "content_filter" are the
model's own outcomes: scored, with the reason stored per sample. Responses longer than
`max_response_chars` are cut (and marked `truncated`); bodies over `MAX_BODY_BYTES` are refused.

The API key never reaches a record: it is stripped of surrounding white space (a key with a
control character inside is refused), and every text from the server is redacted, matching
the key in any letter case and as JSON escapes it, before anything is cut, excerpted or stored.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import time
import unicodedata
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from mmnp.errors import UsageError
from mmnp.evaluation.backend import Completion, Emit, EndpointError, Request, Sampling, SelfTest, option

RETRYABLE = {408, 409, 429, 500, 502, 503, 504}
FATAL = {401: "the API key was refused", 403: "access denied", 404: "model or endpoint not found"}
CANARIES = 3  # requests tried alone, one after another, while each fails, before a run stops: one prompt the
#   server refuses (over its context length) or always fails on (5xx, timeouts) must not block every other sample
# finish_reason values that end an answer: scored (length and content_filter are counted in results.json's usage;
# TGI says eos_token / stop_sequence for stop). "abort", "error" and any other value are failed samples.
ANSWERED = ("stop", "length", "content_filter", "tool_calls", "function_call", "eos_token", "stop_sequence")
NOT_ANSWERED = {"abort": "the server aborted the reply", "error": "the server ended the reply with an error"}
MAX_BODY_BYTES = 64 * 2**20
EXCERPT = 300  # characters of a bad reply kept in the error message


@dataclass(frozen=True)
class OpenAIOptions:
    base_url: str | None = option(None, "endpoint, e.g. http://localhost:8000/v1 (default: $OPENAI_BASE_URL or "
                                        "OpenAI's)")
    api_key_env: str = option("OPENAI_API_KEY", "environment variable holding the key (none needed locally)")
    concurrency: int = option(8, "requests in flight")
    max_retries: int = option(5, "retries on 429/5xx/timeouts/connection errors")
    timeout: float = option(300.0, "seconds per request")
    backoff: float = option(0.5, "first retry delay in seconds (doubles, jittered, capped at 30)")
    token_field: str = option("max_tokens", "max_tokens or max_completion_tokens (o-series models)", sample=True)
    image_detail: str | None = option(None, "image_url detail: low, high or auto", sample=True)
    max_response_chars: int = option(1_000_000, "longer responses are cut and marked truncated", sample=True)


class OpenAIBackend:
    Options = OpenAIOptions
    self_test = SelfTest(target="fake-model", model_args={"base_url": "{openai_base_url}"})

    def __init__(self, model: str, options: OpenAIOptions | None = None, **overrides) -> None:
        o = replace(options or OpenAIOptions(), **overrides)
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = (o.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"--base-url {_strip_userinfo(self.base_url)!r}: expected an http:// or https:// URL "
                             "such as http://localhost:8000/v1")
        self.api_key = _clean_key(os.environ.get(o.api_key_env), o.api_key_env)
        if self.api_key is None and not _is_local(self.base_url):
            raise UsageError(f"set the API key in the environment variable {o.api_key_env} (or name another with "
                             "--api-key-env); a key is optional only for local servers")
        for name, low in (("concurrency", 1), ("max_retries", 0), ("max_response_chars", 1)):
            if getattr(o, name) < low:
                raise UsageError(f"--{name.replace('_', '-')} {getattr(o, name)}: must be at least {low}")
        if not (o.timeout > 0 and o.backoff >= 0):
            raise UsageError(f"--timeout {o.timeout} / backoff {o.backoff}: the timeout must be positive and "
                             "the backoff not negative")
        if o.token_field not in ("max_tokens", "max_completion_tokens"):
            raise UsageError(f"--model-args token_field={o.token_field!r}: use max_tokens or max_completion_tokens")
        if o.image_detail not in (None, "low", "high", "auto"):
            raise UsageError(f"--model-args image_detail={o.image_detail!r}: use low, high or auto")
        self.options = o
        self.concurrency, self.max_retries, self.timeout = o.concurrency, o.max_retries, o.timeout
        self.backoff, self.max_backoff = o.backoff, 30.0
        # the key as sent and as JSON escapes it (\uXXXX, \/) in an echoing body, in any letter case;
        # keys under 4 characters are not secrets
        secrets = [s for s in (self.api_key, parts.password) if s and len(s) >= 4]
        escaped = [json.dumps(s)[1:-1] for s in secrets]
        forms = sorted({*secrets, *escaped, *(e.replace("/", "\\/") for e in escaped)}, key=len, reverse=True)
        self._secret = re.compile("|".join(map(re.escape, forms)), re.IGNORECASE) if forms else None
        self.endpoint = {"base_url": _strip_userinfo(self.base_url), "model": model}

    # -- the run ---------------------------------------------------------------------------

    def run(self, requests: list[Request], sampling: Sampling, emit: Emit) -> None:
        import asyncio  # here, not at import: `mmnp eval --help` lists this backend's options

        if requests:
            asyncio.run(self._run(requests, sampling, emit))

    def measure(self, requests: list[Request], sampling: Sampling) -> list[Completion]:
        """The completions of `requests`, in order, sent `concurrency` at a time (what the
        image-delivery checks read usage.prompt_tokens from; `mmnp.evaluation.delivery`).
        A failure is a failed completion; 401/403/404 raise as in a run."""
        import asyncio

        async def measure_all() -> list[Completion]:
            async with self._session() as session:
                return list(await asyncio.gather(*(self._call(session, r, sampling) for r in requests)))

        return asyncio.run(measure_all()) if requests else []

    def _session(self):
        import aiohttp

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return aiohttp.ClientSession(headers=headers, connector=aiohttp.TCPConnector(limit=self.concurrency),
                                     timeout=aiohttp.ClientTimeout(total=self.timeout))

    async def _run(self, requests: list[Request], sampling: Sampling, emit: Emit) -> None:
        import asyncio

        async with self._session() as session:
            queue: asyncio.Queue[Request] = asyncio.Queue()
            # Canaries: the first sample not failed before goes alone (retries of known failures do not stop a
            # run). If it fails after its retries (a 4xx such as a prompt over the context length, a 5xx or a
            # timeout on that prompt), the next ones go alone too, up to CANARIES, each with other messages
            # (`_canaries`): the run stops only when every one fails, or at once when the server cannot be
            # reached; otherwise the failed ones are failed samples (retried next run) and the rest is sent.
            canaries = _canaries([r for r in requests if not r.retry])
            sent: list[tuple[Request, Completion]] = []
            for canary in canaries:
                try:
                    first = await self._call(session, canary, sampling)
                except EndpointError as e:
                    e.sent = len(sent) + 1
                    raise
                sent.append((canary, first))
                if not first.extra.get("transport"):
                    break
                if first.extra.get("unreachable") or len(sent) == len(canaries):
                    which = (f"request ({sent[0][0].instance.id})" if len(sent) == 1 else
                             f"{len(sent)} requests ({_names([r for r, _ in sent])}) each")
                    raise EndpointError(f"{self.name} at {_strip_userinfo(self.base_url)}: the first {which} failed "
                                        f"after {first.attempts} attempt(s), so nothing else was sent: {first.error}",
                                        sent=len(sent))
            for canary, completion in sent:
                emit(canary, completion)
            tried = {id(r) for r, _ in sent}
            for r in requests:
                if id(r) not in tried:
                    queue.put_nowait(r)

            unanswered = 0  # requests sent whose answers are not emitted yet

            async def worker() -> None:
                nonlocal unanswered
                while not queue.empty():
                    request = queue.get_nowait()
                    unanswered += 1
                    completion = await self._call(session, request, sampling)
                    unanswered -= 1
                    emit(request, completion)

            tasks = [asyncio.create_task(worker()) for _ in range(min(self.concurrency, queue.qsize()))]
            if not tasks:
                return
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            for t in done:
                try:
                    t.result()  # re-raises an EndpointError
                except EndpointError as e:
                    e.sent = unanswered  # the refused one and those cut off in flight
                    raise

    def payload(self, request: Request, sampling: Sampling) -> dict:
        """The request body: the sampling settings, then --gen-kwargs (a None value drops a field)."""
        messages = request.openai_messages()
        if self.options.image_detail and request.image is not None:
            for part in messages[-1]["content"]:
                if part["type"] == "image_url":
                    part["image_url"]["detail"] = self.options.image_detail
        body = {"model": self.model, "messages": messages, "temperature": sampling.temperature,
                "top_p": sampling.top_p, self.options.token_field: sampling.max_tokens,
                "seed": sampling.seed + request.sample}
        if "max_completion_tokens" in sampling.extra:
            body.pop("max_tokens", None)
        body.update(sampling.extra)
        return {k: v for k, v in body.items() if v is not None}

    async def _call(self, session, request: Request, sampling: Sampling) -> Completion:
        import asyncio

        import aiohttp

        payload = self.payload(request, sampling)
        url = f"{self.base_url}/chat/completions"
        start = time.perf_counter()
        error, unreachable = "no attempt made", False
        for attempt in range(self.max_retries + 1):
            wait, unreachable = None, False
            try:
                async with session.post(url, json=payload) as response:
                    status, retry_after = response.status, response.headers.get("Retry-After")
                    body, too_big = await _read_capped(response)
            except asyncio.TimeoutError:
                error = f"timed out after {self.timeout:g}s"
            except aiohttp.ClientError as e:
                error = self._redact(f"connection error: {type(e).__name__}: {e}")
                unreachable = isinstance(e, aiohttp.ClientConnectorError)  # no connection: not this prompt's fault
            else:
                if status == 200:
                    if too_big:
                        return self._failed(f"response body over {MAX_BODY_BYTES // 2**20} MiB: refused",
                                            start, attempt + 1)
                    return self._parse(body, start, attempt + 1)
                message = _error_message(body, self._redact)
                if status in FATAL:
                    raise EndpointError(f"{self.name} at {_strip_userinfo(self.base_url)}: HTTP {status} "
                                        f"({FATAL[status]}): {message}")
                error = f"HTTP {status}: {message}"
                if status not in RETRYABLE:
                    return self._failed(error, start, attempt + 1, transport=True, status=status)
                wait = _retry_after(retry_after)
            if attempt < self.max_retries:
                delay = min(self.max_backoff, self.backoff * 2**attempt) * random.uniform(0.5, 1.5)
                await asyncio.sleep(wait if wait is not None else delay)
        return self._failed(error, start, self.max_retries + 1, transport=True,
                            **({"unreachable": True} if unreachable else {}))

    # -- replies -----------------------------------------------------------------------------

    def _failed(self, error: str, start: float, attempts: int, **extra) -> Completion:
        """A failed call; `extra` says how (transport: no reply came; status; unreachable: no connection)."""
        return Completion(None, latency_s=time.perf_counter() - start, error=self._redact(error), attempts=attempts,
                          extra=extra)

    def _parse(self, body: bytes, start: float, attempts: int) -> Completion:
        """A 200 reply -> a completion, or a failed one naming what is wrong with the reply.
        Redacted before anything is excerpted or cut (a key across the cut must not survive in part)."""
        try:
            raw = body.decode("utf-8")
        except UnicodeDecodeError as e:
            return self._failed(f"malformed reply: the body is not UTF-8 (byte {e.start})", start, attempts)
        text = self._redact(raw)
        try:
            data = json.loads(raw, parse_constant=_no_constant)
        except RecursionError:
            return self._failed("malformed reply: JSON nested too deeply", start, attempts)
        except ValueError as e:
            return self._failed(f"malformed reply: not JSON ({e}): {_excerpt(text)}", start, attempts)
        try:
            choice = data["choices"][0]
            message = choice["message"]
            content, refusal, finish = message.get("content"), message.get("refusal"), choice.get("finish_reason")
        except (KeyError, IndexError, TypeError, AttributeError):
            return self._failed(f"malformed reply: no choices[0].message: {_excerpt(text)}", start, attempts)
        for name, value in (("message.content", content), ("message.refusal", refusal),
                            ("choices[0].finish_reason", finish)):
            if value is not None and not isinstance(value, str):
                return self._failed(f"malformed reply: {name} is a {type(value).__name__}, not a string",
                                    start, attempts)
            if value is not None and not _encodes(value):
                return self._failed(f"malformed reply: {name} holds a lone surrogate (invalid Unicode)",
                                    start, attempts)
        if finish is not None and finish not in ANSWERED:  # no finish_reason at all: an answer, as servers omit it
            why = NOT_ANSWERED.get(finish, f"not a reason mmnp scores ({', '.join(ANSWERED)})")
            return self._failed(f"finish_reason {_excerpt(self._redact(finish), 60)!r}: {why}", start, attempts)
        if finish in ("tool_calls", "function_call") and not content:
            return self._failed(f"finish_reason {finish!r} with no text: a tool call, and mmnp offers no tools",
                                start, attempts)
        if content is None:
            content = ""  # the model said nothing (all tokens spent on reasoning, a refusal): an empty answer
        usage = data.get("usage")
        if usage is None:
            usage = {}
        if not isinstance(usage, dict):
            return self._failed(f"malformed reply: usage is a {type(usage).__name__}, not an object", start, attempts)
        counts = []
        for name in ("prompt_tokens", "completion_tokens"):
            value = usage.get(name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                shown = _excerpt(self._redact(repr(value)), 60)
                return self._failed(f"malformed reply: usage.{name} is {shown}, not a count", start, attempts)
            counts.append(value)
        content = self._redact(content)
        cap = self.options.max_response_chars
        truncated = len(content) > cap
        return Completion(content[:cap], counts[0], counts[1], time.perf_counter() - start, attempts=attempts,
                          truncated=truncated, finish_reason=finish,
                          refusal=None if refusal is None else _cut(self._redact(refusal), cap))

    def _redact(self, text: str) -> str:
        return self._secret.sub("[REDACTED]", text) if self._secret is not None else text


def _canaries(fresh: list[Request]) -> list[Request]:
    """The requests tried alone first: `fresh[0]`, then up to CANARIES in all with distinct messages, from
    other tasks where there are, else other instances. The samples of one prompt lie side by side, so the
    first few alone would be one prompt asked again: a prompt the server always refuses (over a small
    model's context length, as a whole task's prompts may be) would stop every run before anything else."""
    chosen: list[Request] = []
    hashes: set[str] = set()
    for apart in (lambda r: r.instance.task, lambda r: r.instance.id, None):  # None: only the messages differ
        for r in fresh:
            if len(chosen) == CANARIES:
                return chosen
            if apart is not None and any(apart(c) == apart(r) for c in chosen):
                continue
            digest = r.messages_sha256()
            if digest not in hashes:
                chosen.append(r)
                hashes.add(digest)
    return chosen


def _names(requests: list[Request]) -> str:
    """The canaries' instance ids; a sample key (id|modality|sample) where one instance gave two (its text
    and image, or --rounds samples at different rounds), so no name is listed twice."""
    ids = [r.instance.id for r in requests]
    return ", ".join(i if ids.count(i) == 1 else r.key for i, r in zip(ids, requests))


async def _read_capped(response) -> tuple[bytes, bool]:
    chunks, size = [], 0
    async for chunk in response.content.iter_chunked(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return b"", True
    return b"".join(chunks), False


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _error_message(body: bytes, redact) -> str:
    """The server's own message from an error body ({"error": {"message": ...}} or the text),
    redacted before it is excerpted."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
        error = data.get("error", data) if isinstance(data, dict) else data
        message = error.get("message", error) if isinstance(error, dict) else error
        return _excerpt(redact(message if isinstance(message, str) else json.dumps(message)))
    except (ValueError, RecursionError):
        return _excerpt(redact(text))


def _excerpt(text: str, limit: int = EXCERPT) -> str:
    """Server text as one line of an error message: whitespace runs as one space, and control and
    format characters (a terminal's escape codes, bidirectional overrides) written as escapes."""
    text = " ".join(text.split())
    text = "".join(ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch) in ("Cc", "Cf") else ch
                   for ch in text)
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    text = text.encode("utf-8", "replace").decode("utf-8") if not _encodes(text) else text
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _retry_after(value: str | None) -> float | None:
    try:
        wait = float(value) if value is not None else None
    except ValueError:
        return None
    return min(60.0, max(0.0, wait)) if wait is not None and math.isfinite(wait) else None


def _clean_key(key: str | None, variable: str) -> str | None:
    """The API key without surrounding white space (a pasted key's trailing newline or space);
    refused with one line when a control character is left inside it."""
    if key is None:
        return None
    key = key.strip()
    bad = next((i for i, ch in enumerate(key) if unicodedata.category(ch) == "Cc"), None)
    if bad is not None:
        raise UsageError(f"the API key in ${variable} holds a control character ({ord(key[bad]):#04x}, at character "
                         f"{bad + 1} of {len(key)}), such as a line break inside it; set {variable} to the key alone")
    return key or None


def _is_local(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def _strip_userinfo(url: str) -> str:
    parts = urlsplit(url)
    return url.replace(f"{parts.username}:{parts.password}@", "").replace(f"{parts.username}@", "") \
        if parts.username else url
