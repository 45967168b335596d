"""transformers: batched generation for text models and vision-language models, through
the model's own chat template and processor. Needs the `train` extra (torch)."""

from __future__ import annotations

import io
import time
from dataclasses import dataclass, replace

from mmnp.evaluation.backend import Completion, Emit, Request, Sampling, SelfTest, option
from mmnp.evaluation.models import load_hf, weights_fingerprint

from mmnp.errors import UsageError


@dataclass(frozen=True)
class HFOptions:
    batch_size: int = option(8, "generation batch size")
    device: str | None = option(None, "cuda, cpu, cuda:1... (default: cuda if available)")
    dtype: str = option("auto", "auto, float32, bfloat16 or float16")


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

    def run(self, requests: list[Request], sampling: Sampling, emit: Emit) -> None:
        import torch

        for start in range(0, len(requests), self.batch_size):
            batch = requests[start : start + self.batch_size]
            began = time.perf_counter()
            try:
                inputs = self._inputs(batch).to(self.device)
                torch.manual_seed(sampling.seed + start)
                with torch.no_grad():
                    kwargs = {"max_new_tokens": sampling.max_tokens, "do_sample": sampling.temperature > 0,
                              "temperature": sampling.temperature if sampling.temperature > 0 else None,
                              "top_p": sampling.top_p if sampling.temperature > 0 else None,
                              "pad_token_id": self.tokenizer.pad_token_id, **sampling.extra}
                    output = self.model.generate(**inputs, **kwargs)
            except ValueError as e:
                for request in batch:
                    emit(request, Completion(None, latency_s=time.perf_counter() - began, error=str(e)))
                continue
            new = output[:, inputs["input_ids"].shape[1] :]
            texts = self.tokenizer.batch_decode(new, skip_special_tokens=True)
            prompt_tokens = inputs["attention_mask"].sum(1).tolist()
            completion_tokens = (new != self.tokenizer.pad_token_id).sum(1).tolist()
            latency = (time.perf_counter() - began) / len(batch)
            for request, text, p, c in zip(batch, texts, prompt_tokens, completion_tokens):
                emit(request, Completion(text, int(p), int(c), latency))
