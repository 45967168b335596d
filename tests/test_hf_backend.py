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
from mmnp.dataset import select_instances  # noqa: E402
from mmnp.errors import UsageError  # noqa: E402


def test_text_model_batched_generation(tiny_text, small_dataset, tmp_path):
    selection = select_instances("knapsack,tsp", ["easy"], data=small_dataset)
    instances, loader, dataset = selection.instances, selection.image, selection.identity
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


def test_tiny_vlm_processor_needs_no_torchvision_and_names_the_full_processor(tiny_vlm):
    """The tiny VL folder is Qwen2-VL's normal layout (processor class, image and video processor
    entries), so AutoProcessor loads it where torchvision is; `load_processor` builds it on PIL
    where torchvision is not, with the image tokens the picture's grid asks for."""
    from PIL import Image
    from transformers import Qwen2VLImageProcessorPil

    from mmnp.evaluation.models import load_processor, torchvision_available

    saved = json.loads((tiny_vlm / "processor_config.json").read_text())
    assert saved["processor_class"] == "Qwen2VLProcessor"
    assert saved["video_processor"]["video_processor_type"] == "Qwen2VLVideoProcessor"
    assert saved["video_processor"]["size"] == saved["image_processor"]["size"]
    processor = load_processor(str(tiny_vlm), padding_side="left")
    assert processor.tokenizer.padding_side == "left" and "<|image_pad|>" in processor.chat_template
    if not torchvision_available():
        assert getattr(processor, "video_processor", None) is None
        assert isinstance(processor.image_processor, Qwen2VLImageProcessorPil)
    picture = Image.new("RGB", (300, 200), "white")
    out = processor(text=["<|vision_start|><|image_pad|><|vision_end|>x"], images=[picture], return_tensors="pt")
    grid = out["image_grid_thw"][0]
    assert (out["input_ids"][0] == processor.image_token_id).sum() == int(grid.prod()) // 4  # 2x2 merge
    assert out["pixel_values"].shape[0] == int(grid.prod())


def test_other_weights_under_the_same_path_are_refused_on_resume(tiny_text, tmp_path):
    """A resumed run whose model folder now holds other weights (a retrained checkpoint) would score
    two models' samples as one: refused, naming the weights."""
    import shutil

    from mmnp.trainers.tiny_model import write_tiny_model

    model = tmp_path / "model"
    shutil.copytree(tiny_text, model)
    selection = select_instances("knapsack", ["easy"], count=1)

    def run(samples: int) -> dict:
        config = EvalConfig(f"hf:{model}", ("text",), samples, Sampling(temperature=0.8, max_tokens=4))
        return evaluate(HFBackend(str(model), batch_size=2, device="cpu"), selection.instances, config,
                        tmp_path / "out", image_loader=selection.image, dataset=selection.identity)

    run(1)
    (model / "README.md").write_text("notes beside the model are not the model")
    assert run(2)["timing"]["this_run_calls"] == 1  # the same weights: resumed
    write_tiny_model(tmp_path / "other", seed=1)
    shutil.copy(tmp_path / "other" / "model.safetensors", model / "model.safetensors")
    with pytest.raises(UsageError, match="different settings.*weights"):
        run(3)
