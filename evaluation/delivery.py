"""Did each picture reach the model? Checked on every image-bearing sample, not once per run.

An endpoint that counts prompt tokens (`usage.prompt_tokens`) shows whether it read a picture:
the same request without its picture must count fewer tokens, by the picture's token cost.

- Per sample: each image sample's `prompt_tokens` minus the text-only count of the same request
  (its messages without the picture) is its `image_tokens`; under `MIN_IMAGE_TOKENS` the server
  that answered dropped the picture, and the sample is a failed one (asked again on the next run).
  A replica pool where one server drops images fails exactly the samples that server answered.
  The text-only count is measured once per distinct text-only request and reused: image prompts
  are shared by every instance of a task, so a run costs one extra request per task (per round
  and sample with --rounds, whose later turns differ per sample).
- Once per run (the encoding check): one picture is sent twice, as stored and re-encoded without
  compression (the same pixels in several times the bytes). A vision model counts the same tokens
  for the same pixels; a text-only server that counts the base64 text of the data URL counts in
  proportion to the bytes, so the two costs differ and the run stops before any sample is sent.
  (Two resolutions would not tell them apart: a real vision model also counts more tokens for
  more pixels.) Two more requests, each sent again (up to `ENCODING_TRIES` times) while a pool drops it.

Backends that run in-process (`solver`, `hf`, `vllm`) have no endpoint that could drop a picture:
their samples say `not_applicable`. A backend takes part by offering `measure(requests, sampling)`.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Iterable

from mmnp.errors import RunError
from mmnp.evaluation.backend import Backend, Completion, Request, Sampling
from mmnp.evaluation.schema import ImageProbe

MIN_IMAGE_TOKENS = 4  # fewer extra tokens than any vision model spends on a picture: the picture was dropped
ENCODING_TOLERANCE = 0.1  # the two encodings' costs may differ by this share (and 2 tokens) of the larger
ENCODING_TRIES = 5  # sends of each encoding while a pool drops it (one replica of three: 1 run in 120 stops)
MEASURE_TOKENS = 16  # completion limit of the check's own requests (only their prompt count is read)

# a sample record's `image_check`
PASSED, FAILED, UNCHECKED, NOT_APPLICABLE = "passed", "failed", "unchecked", "not_applicable"


def text_only(request: Request) -> Request:
    """The same request without its picture."""
    return replace(request, image=None)


def baseline_key(request: Request) -> str:
    """Requests with equal keys have the same text-only prompt (the same messages bar the picture)."""
    raw = json.dumps(text_only(request).openai_messages(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()


def reencoded(png: bytes) -> bytes:
    """The same pixels as `png`, stored without compression: at least twice the bytes."""
    from PIL import Image

    image = Image.open(io.BytesIO(png))
    for mode in (image.mode, "RGBA"):
        buf = io.BytesIO()
        image.convert(mode).save(buf, "PNG", compress_level=0)
        if len(buf.getvalue()) >= 2 * len(png):
            return buf.getvalue()
    return buf.getvalue()


@dataclass
class Delivery:
    """The image-delivery checks of one run (see the module doc)."""

    backend: Backend | None
    sampling: Sampling
    skip: bool = False  # --skip-image-probe: nothing is checked, every image sample says `unchecked`
    encoding: dict | None = None  # the encoding check: this run's, or the earlier part's when none ran now
    baselines: dict[str, int] = field(default_factory=dict)  # baseline_key -> text-only prompt tokens
    requests_made: int = 0  # this run's extra requests
    encoding_checked: bool = False  # the encoding check runs once per run

    @property
    def behind_endpoint(self) -> bool:
        """Whether the backend sends pictures to a server that could drop them (it offers `measure`)."""
        return callable(getattr(self.backend, "measure", None))

    @property
    def checking(self) -> bool:
        return self.behind_endpoint and not self.skip

    def prepare(self, requests: list[Request]) -> list[tuple[Request, str]]:
        """Before a batch's image requests go out: the encoding check (once per run), then the
        text-only count of every distinct text not measured yet. Raises `RunError` when the
        endpoint drops every picture or counts their encoded text; returns the requests that
        cannot be checked (their text-only request failed), which are not sent."""
        image_requests = [r for r in requests if r.image is not None]
        if not self.checking or not image_requests:
            return []
        if not self.encoding_checked:
            self._check_encoding(image_requests[0])
        todo = {}
        for r in image_requests:
            key = baseline_key(r)
            if key not in self.baselines:
                todo.setdefault(key, text_only(r))
        errors = {}
        for (key, request), completion in zip(todo.items(), self._measure(list(todo.values()))):
            if completion.error is None and completion.prompt_tokens is not None:
                self.baselines[key] = completion.prompt_tokens
            else:
                errors[key] = completion.error or "the reply has no usage.prompt_tokens"
        return [(r, f"not sent: the image-delivery check needs the same request without its picture, which failed "
                    f"({errors[baseline_key(r)]}); asked again on the next run")
                for r in image_requests if baseline_key(r) in errors]

    def _measure(self, requests: list[Request]) -> list[Completion]:
        if not requests:
            return []
        self.requests_made += len(requests)
        extra = {k: v for k, v in self.sampling.extra.items() if k not in ("max_tokens", "max_completion_tokens")}
        short = replace(self.sampling, max_tokens=min(self.sampling.max_tokens, MEASURE_TOKENS), extra=extra)
        return self.backend.measure(requests, short)

    def _check_encoding(self, request: Request) -> None:
        """The run's encoding check on `request`'s picture (see the module doc)."""
        self.encoding_checked = True
        stored, bigger = request.image, reencoded(request.image)
        base = self._measure([text_only(request)])[0]
        if base.error is not None:  # the endpoint fails a request without a picture: not an image problem
            self.encoding = {"status": FAILED, "detail": f"its request without the picture failed: {base.error}"}
            raise RunError(f"image probe: its request without the picture ({request.key}) failed: {base.error}; "
                           "nothing else was sent. The endpoint fails plain text requests: check --base-url, the "
                           "served model and the server's log, then run the same command again")
        if base.prompt_tokens is None:
            self._refuse("cannot tell whether images reach the model: the reply has no usage.prompt_tokens")
        self.baselines[baseline_key(request)] = base.prompt_tokens
        variants, costs = [request, replace(request, image=bigger)], [0, 0]
        for _ in range(ENCODING_TRIES):  # each encoding until a replica that reads pictures answers it
            dropped = [i for i, cost in enumerate(costs) if cost < MIN_IMAGE_TOKENS]
            if not dropped:
                break
            for i, c in zip(dropped, self._measure([variants[i] for i in dropped])):
                if c.error is not None or c.prompt_tokens is None:
                    why = c.error or "the reply has no usage.prompt_tokens"
                    self._refuse(f"the same picture re-encoded in {len(bigger)} bytes (the same pixels) failed: {why}; "
                                 "a vision model reads it as it reads the stored one, a server that counts the "
                                 "base64 text may run out of context" if i else
                                 f"the request with the picture failed where the same request without it was "
                                 f"answered: {why}")
                costs[i] = c.prompt_tokens - base.prompt_tokens
        sizes = [len(stored), len(bigger)]
        block = {"text_only_tokens": base.prompt_tokens, "png_bytes": sizes, "image_tokens": costs}
        if min(costs) < MIN_IMAGE_TOKENS:
            counts = ", ".join(f"{base.prompt_tokens + c}" for c in costs)
            self._refuse(f"usage.prompt_tokens is {counts} with the picture and {base.prompt_tokens} without it "
                         f"({ENCODING_TRIES} tries): the endpoint seems to drop images", block)
        if abs(costs[1] - costs[0]) > ENCODING_TOLERANCE * max(costs) + 2:
            self._refuse(f"the same picture (the same pixels) costs {costs[0]} prompt tokens at {sizes[0]} bytes and "
                         f"{costs[1]} at {sizes[1]} bytes: the endpoint counts the encoded (base64) text, not an "
                         "image, so the model does not see pictures", block)
        self.encoding = {"status": PASSED, **block,
                         "detail": f"the picture costs {costs[0]} prompt tokens as {sizes[0]} bytes and {costs[1]} "
                                   f"as {sizes[1]} bytes of the same pixels: counted as an image, not as its text"}

    def _refuse(self, detail: str, block: dict | None = None) -> None:
        self.encoding = {"status": FAILED, **(block or {}), "detail": detail}
        raise RunError(f"image probe: {detail}; no image sample was sent. Use a vision model or an endpoint that "
                       "accepts images, or pass --skip-image-probe to run anyway (results.json and the leaderboard "
                       "then say the images were not checked)")

    def verdict(self, request: Request, completion: Completion) -> tuple[dict, str | None]:
        """(the record's delivery fields, the failure when the picture did not reach the model)."""
        if request.image is None:
            return {}, None
        if not self.behind_endpoint:
            return {"image_check": NOT_APPLICABLE}, None
        if self.skip:
            return {"image_check": UNCHECKED}, None
        if completion.error is not None:
            return {}, None  # a failed call: nothing to check, asked again anyway
        base = self.baselines[baseline_key(request)]
        if completion.prompt_tokens is None:
            return ({"image_check": FAILED, "image_tokens": None, "text_only_tokens": base},
                    "image delivery not checked: the reply has no usage.prompt_tokens; asked again on the next run")
        cost = completion.prompt_tokens - base
        fields = {"image_check": PASSED if cost >= MIN_IMAGE_TOKENS else FAILED, "image_tokens": cost,
                  "text_only_tokens": base}
        if cost >= MIN_IMAGE_TOKENS:
            return fields, None
        return fields, (f"image not delivered: usage.prompt_tokens {completion.prompt_tokens} with the picture, "
                        f"{base} for the same request without it (the server that answered dropped the picture); "
                        "asked again on the next run")


def image_probe_block(records: Iterable[dict | None], encoding: dict | None, expected: bool,
                      in_process: str | None) -> ImageProbe:
    """results.json's `image_probe`: what the latest record of every image-bearing sample says
    (`in_process`: the name of a backend with no endpoint, whose samples need no check).
    `passed` only when every answered image sample was checked and passed and the run's
    encoding check passed; `unchecked` when any was never checked; `failed` when any failed."""
    if not expected:
        return {"status": NOT_APPLICABLE, "detail": "no image modality"}
    answered = [r for r in records if r is not None and (r.get("image_check") or not r.get("failed"))]
    unsaid = NOT_APPLICABLE if in_process else UNCHECKED  # records written before samples were checked
    counts = Counter(r.get("image_check") or unsaid for r in answered)
    costs = [r["image_tokens"] for r in answered if r.get("image_check") == PASSED and
             isinstance(r.get("image_tokens"), int)]
    block = {"samples": dict(sorted(counts.items())), "encoding": encoding}
    if costs:
        block["image_tokens"] = {"min": min(costs), "max": max(costs), "mean": round(sum(costs) / len(costs), 1)}
    n = len(answered)
    if counts[FAILED]:
        return {"status": FAILED, **block, "detail": f"{counts[FAILED]} of {n} image samples failed the delivery check "
                "(the picture did not reach the model); they are asked again on the next run"}
    if counts[UNCHECKED]:
        return {"status": UNCHECKED, **block, "detail": f"{counts[UNCHECKED]} of {n} image samples were never checked "
                "(--skip-image-probe, or an older mmnp): their scores may count pictures the model never saw"}
    if counts[NOT_APPLICABLE] == n and n:
        return {"status": NOT_APPLICABLE, **block, "detail": f"{in_process or 'the backend'} runs in-process, not "
                "behind an endpoint that could drop images"}
    if isinstance(encoding, dict) and encoding.get("status") == FAILED:
        return {"status": FAILED, **block, "detail": encoding.get("detail", "the encoding check failed")}
    if not n:
        return {"status": UNCHECKED, **block, "detail": "no image sample has been answered yet"}
    if not (isinstance(encoding, dict) and encoding.get("status") == PASSED):
        return {"status": UNCHECKED, **block, "detail": f"{n} image samples passed the delivery check, but the "
                "endpoint was never checked for counting the encoded text instead of the picture"}
    return {"status": PASSED, **block, "detail": f"each of the {n} image samples counted {block['image_tokens']['min']}"
            f"-{block['image_tokens']['max']} more prompt tokens than the same request without its picture, and the "
            "same picture at two encodings cost the same"}
