"""Offline vLLM for text and multimodal models: the optional `vllm` extra, imported only
when this backend is chosen (GPU machines)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from mmnp.evaluation.backend import Completion, Emit, Request, Sampling, SelfTest, option
from mmnp.evaluation.models import load_vllm, weights_fingerprint


@dataclass(frozen=True)
class VLLMOptions:
    gpu_memory_utilization: float = option(0.9, "fraction of GPU memory vLLM may use")
    max_model_len: int | None = option(None, "context length (default: the model's)")
    tensor_parallel_size: int = option(1, "GPUs per model")
    dtype: str = option("auto", "auto, float32, bfloat16 or float16", sample=True)


class VLLMBackend:
    Options = VLLMOptions
    self_test = SelfTest(target="{tiny_text_model}", model_args={"gpu_memory_utilization": 0.3},
                         requires=("vllm", "cuda"))

    def __init__(self, path: str, options: VLLMOptions | None = None) -> None:
        o = options or VLLMOptions()
        self.name = f"vllm:{path}"
        self.weights = weights_fingerprint(path)  # part of the run's identity (`EvalConfig.weights`)
        self.llm = load_vllm(path, gpu_memory_utilization=o.gpu_memory_utilization, max_model_len=o.max_model_len,
                             tensor_parallel_size=o.tensor_parallel_size, dtype=o.dtype)

    def run(self, requests: list[Request], sampling: Sampling, emit: Emit) -> None:
        from vllm import SamplingParams

        params = [SamplingParams(**{"temperature": sampling.temperature, "top_p": sampling.top_p,
                                    "max_tokens": sampling.max_tokens, "seed": sampling.seed + r.sample,
                                    **sampling.extra}) for r in requests]
        began = time.perf_counter()
        outputs = self.llm.chat([r.openai_messages() for r in requests], params, use_tqdm=True)
        latency = (time.perf_counter() - began) / max(len(requests), 1)
        for request, output in zip(requests, outputs):
            completion = output.outputs[0]
            finish = completion.finish_reason
            if finish not in ("stop", "length"):  # "abort" (or unfinished): no answer, asked again next run
                emit(request, Completion(None, latency_s=latency, error=f"vLLM ended the request without an answer "
                                                                        f"(finish_reason {finish!r})"))
                continue
            emit(request, Completion(completion.text, len(output.prompt_token_ids or []), len(completion.token_ids),
                                     latency, finish_reason=finish))
