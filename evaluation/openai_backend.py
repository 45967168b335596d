"""Any OpenAI-compatible chat endpoint (vLLM's and SGLang's servers, hosted APIs).

`--concurrency` requests in flight; 429, 5xx, timeouts and connection errors are retried
with exponential backoff (honouring Retry-After); other HTTP errors fail at once. A call
that still fails is recorded as a failure and asked again on the next run.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from urllib.parse import urlsplit

import aiohttp

from mmnp.evaluation.backend import Completion, Emit, Request, Sampling

RETRYABLE = {408, 409, 429, 500, 502, 503, 504}


class OpenAIBackend:
    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str | None = None,
                 concurrency: int = 8, max_retries: int = 5, timeout: float = 300.0, backoff: float = 0.5,
                 max_backoff: float = 30.0) -> None:
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        key_env = api_key_env or "OPENAI_API_KEY"
        self.api_key = os.environ.get(key_env)
        if self.api_key is None and not _is_local(self.base_url):
            raise ValueError(f"set the API key in the environment variable {key_env} (or name another with "
                             "--api-key-env); a key is optional only for local servers")
        if concurrency < 1:
            raise ValueError("--concurrency must be at least 1")
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.backoff = backoff
        self.max_backoff = max_backoff

    def run(self, requests: list[Request], sampling: Sampling, emit: Emit) -> None:
        asyncio.run(self._run(requests, sampling, emit))

    async def _run(self, requests: list[Request], sampling: Sampling, emit: Emit) -> None:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        connector = aiohttp.TCPConnector(limit=self.concurrency)
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        async with aiohttp.ClientSession(headers=headers, connector=connector, timeout=timeout) as session:
            queue: asyncio.Queue[Request] = asyncio.Queue()
            for r in requests:
                queue.put_nowait(r)

            async def worker() -> None:
                while not queue.empty():
                    request = queue.get_nowait()
                    emit(request, await self._call(session, request, sampling))

            await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(requests)))))

    async def _call(self, session: aiohttp.ClientSession, request: Request, sampling: Sampling) -> Completion:
        payload = {
            "model": self.model,
            "messages": request.openai_messages(),
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "seed": sampling.seed + request.sample,
        }
        url = f"{self.base_url}/chat/completions"
        start = time.perf_counter()
        error = "no attempt made"
        for attempt in range(self.max_retries + 1):
            wait = None
            try:
                async with session.post(url, json=payload) as response:
                    status, body = response.status, await response.text()
                    retry_after = response.headers.get("Retry-After")
            except asyncio.TimeoutError:
                error = f"timed out after {self.timeout:g}s"
            except aiohttp.ClientError as e:
                error = f"connection error: {type(e).__name__}: {e}"
            else:
                if status == 200:
                    try:
                        data = json.loads(body)
                        text = data["choices"][0]["message"]["content"] or ""
                    except (ValueError, KeyError, IndexError, TypeError):
                        error = f"malformed response body: {body[:200]!r}"
                    else:
                        usage = data.get("usage") or {}
                        return Completion(text, usage.get("prompt_tokens"), usage.get("completion_tokens"),
                                          time.perf_counter() - start, attempts=attempt + 1)
                else:
                    error = f"HTTP {status}: {body[:200]}"
                    if status not in RETRYABLE:
                        return Completion(None, latency_s=time.perf_counter() - start, error=error,
                                          attempts=attempt + 1)
                    wait = _retry_after(retry_after)
            if attempt < self.max_retries:
                delay = min(self.max_backoff, self.backoff * 2**attempt) * random.uniform(0.5, 1.5)
                await asyncio.sleep(wait if wait is not None else delay)
        return Completion(None, latency_s=time.perf_counter() - start, error=error, attempts=self.max_retries + 1)


def _retry_after(value: str | None) -> float | None:
    try:
        return min(60.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _is_local(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")
