"""The transformers backend on tiny local models (built here, no hub): a Qwen2-style text
model and a Qwen2-VL-style vision-language model answering image requests."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch", reason="the hf backend needs the train extra")

import mmnp  # noqa: E402
from mmnp.evaluation.backend import Request, Sampling  # noqa: E402
from mmnp.evaluation.hf_backend import HFBackend  # noqa: E402
from mmnp.evaluation.runner import EvalConfig, evaluate  # noqa: E402
from mmnp.evaluation.sources import load_instances  # noqa: E402


def test_text_model_batched_generation(tiny_text, small_dataset, tmp_path):
    instances, loader, dataset = load_instances(small_dataset, "knapsack,tsp", ["easy"], 0, 0, None, False)
    results = evaluate(HFBackend(str(tiny_text), batch_size=3), instances,
                       EvalConfig(f"hf:{tiny_text}", ("text",), 2, Sampling(temperature=0.8, max_tokens=12)),
                       tmp_path, image_loader=loader, dataset=dataset)
    records = [json.loads(line) for line in next(tmp_path.glob("*/samples.jsonl")).read_text().splitlines()]
    assert len(records) == len(instances) * 2
    for r in records:
        assert isinstance(r["response"], str) and not r["failed"]
        assert r["prompt_tokens"] > 100 and 0 < r["completion_tokens"] <= 12
        assert r["ratio"] == 0.0 or r["feasible"]  # random weights: almost surely unparsed, never a crash
    assert results["metrics"]["text"]["overall"]["fail_rate"] == 0.0
    # sampling differs between the two samples of an instance (temperature > 0)
    pairs = {}
    for r in records:
        pairs.setdefault(r["id"], []).append(r["response"])
    assert any(a != b for a, b in pairs.values())


def test_vision_language_model_answers_image_requests(tiny_vlm):
    task = mmnp.get_task("graph_coloring")
    inst = task.generate("easy", seed=0)
    backend = HFBackend(str(tiny_vlm), batch_size=2)
    assert backend.vision
    requests = [Request(inst, "image", 0, inst.image_prompt, task.render(inst)), Request(inst, "text", 0, inst.prompt)]
    out = {}
    backend.run(requests, Sampling(temperature=0.0, max_tokens=8), lambda r, c: out.setdefault(r.modality, c))
    assert out["image"].error is None and out["text"].error is None
    assert out["image"].completion_tokens == 8 or out["image"].completion_tokens <= 8
    # the picture becomes image tokens: the image prompt is short text but not a short input
    assert out["image"].prompt_tokens > len(backend.tokenizer(inst.image_prompt)["input_ids"])


def test_text_model_refuses_images(tiny_text):
    task = mmnp.get_task("knapsack")
    inst = task.generate("easy", seed=0)
    out = []
    HFBackend(str(tiny_text)).run([Request(inst, "image", 0, inst.image_prompt, task.render(inst))], Sampling(max_tokens=4),
                                  lambda r, c: out.append(c))
    assert out[0].error and "text-only" in out[0].error


def test_one_loader_for_evaluation_and_disa(tiny_text, tiny_vlm):
    """evaluation.models.load_hf: the checkpoint's kind decides model class and processor; dtype is honoured."""
    import torch

    from mmnp.errors import UsageError
    from mmnp.evaluation.models import load_hf

    text = load_hf(str(tiny_text), dtype="bfloat16", device="cpu")
    assert not text.vision and text.processor is None and text.tokenizer.padding_side == "left"
    assert next(text.model.parameters()).dtype == torch.bfloat16 and not text.model.training
    vlm = load_hf(str(tiny_vlm), device="cpu")
    assert vlm.vision and vlm.tokenizer is vlm.processor.tokenizer
    with pytest.raises(UsageError, match="dtype 'float13'"):
        load_hf(str(tiny_text), dtype="float13")
    with pytest.raises(UsageError, match="not a transformers model folder"):
        load_hf(str(tiny_text / "nothing-here"))
