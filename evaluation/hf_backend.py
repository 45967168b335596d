"""transformers: batched generation for text models and vision-language models, through
the model's own chat template and processor. Needs the `train` extra (torch).

A sampled answer depends only on the run's seed and its request (sample key and messages), never
on the batch it was generated in or on what an interrupted earlier part of the run answered:
decoding is greedy over the warped logits plus Gumbel(0, 1) noise drawn from the request's own
generator (`GumbelSampler`), and the argmax of logits plus Gumbel noise is an exact draw from their
softmax (the Gumbel-max trick). A batch that fails is generated again one request at a time, so a
request that cannot be generated fails alone.
"""

from __future__ import annotations

import hashlib
import io
import time
from dataclasses import dataclass, replace
from typing import Any

from mmnp.errors import UsageError
from mmnp.evaluation.backend import Completion, Emit, Request, Sampling, SelfTest, option
from mmnp.evaluation.models import load_hf, weights_fingerprint

# --gen-kwargs the sampler applies itself (top_k and min_p default to the model's generation_config.json)
WARPERS = ("temperature", "top_p", "top_k", "min_p")
# generation settings that would bypass the per-request sampler: refused, naming the ones it takes
UNSUPPORTED = ("do_sample", "num_beams", "num_return_sequences", "typical_p", "epsilon_cutoff", "eta_cutoff", "top_h",
               "logits_processor", "generation_config")


@dataclass(frozen=True)
class HFOptions:
    batch_size: int = option(8, "generation batch size")
    device: str | None = option(None, "cuda, cpu, cuda:1... (default: cuda if available)")
    dtype: str = option("auto", "auto, float32, bfloat16 or float16", sample=True)


def request_seed(seed: int, request: Request) -> int:
    """The seed of one request's draws: its sample key and the hash of its messages under the run's
    seed, so that a resumed run draws what a straight run does."""
    digest = hashlib.sha256(f"{seed}\n{request.key}\n{request.messages_sha256()}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class GumbelSampler:
    """A transformers logits processor for greedy decoding that samples: each row's logits go through
    the warpers (temperature, top-k, top-p, min-p, in transformers' order), then get Gumbel(0, 1) noise
    from that row's own generator, one draw per vocabulary entry per step. A row's draws never depend
    on the other rows of its batch."""

    def __init__(self, warpers: list, generators: list) -> None:
        self.warpers, self.generators = warpers, generators

    def __call__(self, input_ids, scores):
        import torch

        for warp in self.warpers:
            scores = warp(input_ids, scores)
        uniform = torch.stack([torch.rand(scores.shape[-1], generator=g, device=g.device, dtype=torch.float32)
                               for g in self.generators]).to(scores.device)
        tiny = torch.finfo(torch.float32).tiny
        return scores.float() - torch.log(-torch.log(uniform.clamp(min=tiny)))


class HFBackend:
    Options = HFOptions
    self_test = SelfTest(target="{tiny_text_model}", model_args={"batch_size": 4, "device": "cpu"},
                         requires=("torch", "transformers"))

    def __init__(self, path: str, options: HFOptions | None = None, **overrides) -> None:
        o = replace(options or HFOptions(), **overrides)
        if o.batch_size < 1:
            raise UsageError(f"--batch-size {o.batch_size}: must be at least 1")
        loaded = load_hf(path, dtype=o.dtype, device=o.device)
        self.name = f"hf:{path}"
        self.weights = weights_fingerprint(path)  # part of the run's identity (`EvalConfig.weights`)
        self.batch_size = o.batch_size
        self.model, self.tokenizer, self.processor, self.device = (loaded.model, loaded.tokenizer, loaded.processor,
                                                                   loaded.device)
        self.vision = loaded.vision
        self.modalities = ("text", "image") if self.vision else ("text",)  # the runner refuses pictures otherwise

    def _chat(self, request: Request) -> list[dict]:
        messages = [{"role": "system", "content": request.system}] if request.system else []
        if self.vision:
            content = ([{"type": "image"}] if request.image is not None else []) + [{"type": "text", "text": request.text}]
            return messages + [{"role": "user", "content": content}] + self._turns(request)
        if request.image is not None:
            raise UsageError(f"{self.name} is a text-only model; evaluate it with --modality text")
        return messages + [{"role": "user", "content": request.text}] + self._turns(request)

    @staticmethod
    def _turns(request: Request) -> list[dict]:
        """--rounds: the earlier answers and the verifier's feedback, as plain-text turns."""
        return [m for answer, feedback in request.history
                for m in ({"role": "assistant", "content": answer}, {"role": "user", "content": feedback})]

    def _inputs(self, batch: list[Request]):
        from PIL import Image

        template = self.processor if self.vision else self.tokenizer
        texts = [template.apply_chat_template(self._chat(r), add_generation_prompt=True, tokenize=False) for r in batch]
        if not self.vision:
            return self.tokenizer(texts, padding=True, return_tensors="pt", add_special_tokens=False)
        images = [Image.open(io.BytesIO(r.image)).convert("RGB") for r in batch if r.image is not None]
        return self.processor(text=texts, images=images or None, padding=True, return_tensors="pt")

    def _warpers(self, sampling: Sampling) -> tuple[list, dict[str, Any]]:
        """(the transformers warpers of this run's sampling, empty for greedy decoding; the other
        --gen-kwargs, passed to generate as given). Refuses what the sampler cannot honour."""
        from transformers import MinPLogitsWarper, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

        extra = dict(sampling.extra)
        bypass = [k for k in UNSUPPORTED if k in extra]
        if bypass:
            raise UsageError(f"--gen-kwargs {bypass[0]}: the hf backend draws each request from its own seed and "
                             f"takes {', '.join(WARPERS)} (and generate's other settings), not {bypass[0]}")
        defaults = self.model.generation_config
        temperature, top_p = extra.pop("temperature", sampling.temperature), extra.pop("top_p", sampling.top_p)
        top_k, min_p = extra.pop("top_k", defaults.top_k), extra.pop("min_p", defaults.min_p)
        if not temperature:
            return [], extra
        try:
            warpers = [TemperatureLogitsWarper(float(temperature))]
            warpers += [TopKLogitsWarper(top_k)] if top_k else []
            warpers += [TopPLogitsWarper(top_p)] if top_p is not None and top_p < 1 else []
            warpers += [MinPLogitsWarper(min_p)] if min_p else []
        except (TypeError, ValueError) as e:
            raise UsageError(f"sampling settings (temperature {temperature!r}, top_p {top_p!r}, top_k {top_k!r}, "
                             f"min_p {min_p!r}): {e}") from None
        return warpers, extra

    def run(self, requests: list[Request], sampling: Sampling, emit: Emit) -> None:
        warpers, extra = self._warpers(sampling)  # bad settings are refused before any generation
        for start in range(0, len(requests), self.batch_size):
            batch = requests[start : start + self.batch_size]
            began = time.perf_counter()
            try:
                completions = self._generate(batch, sampling, warpers, extra)
            except Exception as e:  # noqa: BLE001 - a request that cannot be generated must not fail its batch
                completions = ([self._alone(r, sampling, warpers, extra) for r in batch] if len(batch) > 1 else
                               [Completion(None, latency_s=time.perf_counter() - began, error=_error(e))])
            for request, completion in zip(batch, completions):
                emit(request, completion)

    def _alone(self, request: Request, sampling: Sampling, warpers: list, extra: dict) -> Completion:
        """One request of a failed batch, generated by itself: its answer, or its own failure."""
        began = time.perf_counter()
        try:
            return self._generate([request], sampling, warpers, extra)[0]
        except Exception as e:  # noqa: BLE001 - recorded as this sample's failure, asked again next run
            return Completion(None, latency_s=time.perf_counter() - began, error=_error(e))

    def _generate(self, batch: list[Request], sampling: Sampling, warpers: list, extra: dict) -> list[Completion]:
        import torch
        from transformers import LogitsProcessorList

        began = time.perf_counter()
        inputs = self._inputs(batch).to(self.device)
        kwargs: dict[str, Any] = {"max_new_tokens": sampling.max_tokens, "do_sample": False,
                                  "pad_token_id": self.tokenizer.pad_token_id, **dict.fromkeys(WARPERS), **extra}
        if warpers:
            generators = [torch.Generator(device=self.device).manual_seed(request_seed(sampling.seed, r))
                          for r in batch]
            kwargs["logits_processor"] = LogitsProcessorList([GumbelSampler(warpers, generators)])
        with torch.no_grad():
            output = self.model.generate(**inputs, **kwargs)
        new = output[:, inputs["input_ids"].shape[1] :]
        texts = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        prompt_tokens = inputs["attention_mask"].sum(1).tolist()
        completion_tokens = (new != self.tokenizer.pad_token_id).sum(1).tolist()
        stops = torch.tensor(sorted(self._stop_ids()), dtype=new.dtype, device=new.device)
        ended = torch.isin(new, stops).any(1).tolist()  # an end-of-sequence token: the model stopped itself
        full = new.shape[1] >= sampling.max_tokens
        latency = (time.perf_counter() - began) / len(batch)
        return [Completion(text, int(p), int(c), latency, finish_reason="length" if full and not end else "stop")
                for text, p, c, end in zip(texts, prompt_tokens, completion_tokens, ended)]

    def _stop_ids(self) -> set[int]:
        """The token ids that end a generation (the generation config's and the tokenizer's end of sequence)."""
        eos = self.model.generation_config.eos_token_id
        ids = set(eos) if isinstance(eos, (list, tuple)) else {eos}
        return {i for i in ids | {self.tokenizer.eos_token_id} if i is not None}


def _error(e: Exception) -> str:
    return f"{type(e).__name__}: {e}"
