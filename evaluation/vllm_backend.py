"""Offline vLLM for text and multimodal models: the optional `vllm` extra, imported only
when this backend is chosen (GPU machines)."""

from __future__ import annotations

import time

from mmnp.evaluation.backend import Completion, Emit, Request, Sampling


class VLLMBackend:
    def __init__(self, path: str, **engine_args) -> None:
        try:
            from vllm import LLM
        except ImportError:
            raise ValueError("the vllm backend needs vLLM on a GPU machine: pip install 'mmnp[vllm]'") from None
        self.name = f"vllm:{path}"
        self.llm = LLM(model=path, limit_mm_per_prompt={"image": 1}, **engine_args)

    def run(self, requests: list[Request], sampling: Sampling, emit: Emit) -> None:
        from vllm import SamplingParams

        params = [SamplingParams(temperature=sampling.temperature, top_p=sampling.top_p,
                                 max_tokens=sampling.max_tokens, seed=sampling.seed + r.sample) for r in requests]
        began = time.perf_counter()
        outputs = self.llm.chat([r.openai_messages() for r in requests], params, use_tqdm=True)
        latency = (time.perf_counter() - began) / max(len(requests), 1)
        for request, output in zip(requests, outputs):
            completion = output.outputs[0]
            emit(request, Completion(completion.text, len(output.prompt_token_ids or []), len(completion.token_ids),
                                     latency))
