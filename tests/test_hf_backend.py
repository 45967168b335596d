"""The transformers backend on tiny local models (built here, no hub): a Qwen2-style text
model and a Qwen2-VL-style vision-language model answering image requests."""

from __future__ import annotations

import json
import re

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
    # how each answer ended: at the 12-token limit, or by the model's end of sequence
    assert {r["finish_reason"] for r in records} <= {"stop", "length"}
    assert all(r["completion_tokens"] == 12 for r in records if r["finish_reason"] == "length")
    assert all(r["finish_reason"] == "stop" for r in records if r["completion_tokens"] < 12)
    assert results["usage"]["length_stops"] == sum(r["finish_reason"] == "length" for r in records) > 0


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


def test_a_request_that_cannot_be_generated_fails_alone(tiny_text):
    """A batch that fails is generated again one request at a time: only the bad request fails (here a
    picture for a text-only model, which `mmnp eval` refuses before any work), its company is answered."""
    task = mmnp.get_task("knapsack")
    inst = task.generate("easy", seed=0)
    requests = [Request(inst, "text", 0, inst.prompt), Request(inst, "image", 0, inst.image_prompt, task.render(inst)),
                Request(inst, "text", 1, inst.prompt)]
    out = {}
    HFBackend(str(tiny_text), batch_size=3, device="cpu").run(requests, Sampling(temperature=0.7, max_tokens=4),
                                                              lambda r, c: out.setdefault(r.key, c))
    bad = out[requests[1].key]
    assert bad.error and "text-only" in bad.error and bad.text is None
    for request in (requests[0], requests[2]):
        assert out[request.key].error is None and isinstance(out[request.key].text, str)


@pytest.mark.parametrize("args, asks", [(["--modality", "both"], "--modality both"),
                                        (["--modality", "image"], "--modality image"),
                                        (["--probe", "transcribe"], "--probe transcribe")])
def test_a_text_only_model_is_refused_pictures_before_any_work(args, asks, tiny_text, tmp_path):
    """Every image sample of a text-only model would fail, on every rerun: refused in one line instead."""
    from typer.testing import CliRunner

    from mmnp.cli import app

    result = CliRunner().invoke(app, ["eval", "--model", f"hf:{tiny_text}", "--model-args", "device=cpu", "--tasks",
                                      "knapsack", "--difficulty", "easy", "--count", "1", "--max-tokens", "4",
                                      "--output-path", str(tmp_path / "out"), *args])
    assert result.exit_code == 2, result.output
    assert f"is a text-only model, but {asks} asks it about pictures: evaluate it with --modality text" in \
        " ".join(result.output.split())
    assert not (tmp_path / "out").exists()  # nothing written, nothing to resume


def test_a_sampled_answer_depends_only_on_its_request(tiny_text, small_dataset, tmp_path):
    """A run stopped and resumed (here: --limit 1, then all) answers exactly as a straight run: each
    request draws from its own seed (run seed, sample key, messages), whatever its batch or position."""
    selection = select_instances("knapsack,tsp", ["easy"], data=small_dataset)
    config = EvalConfig(f"hf:{tiny_text}", ("text",), 3, Sampling(temperature=0.8, max_tokens=16, seed=5))

    def run(instances, out) -> dict:
        backend = HFBackend(str(tiny_text), batch_size=4, device="cpu")
        evaluate(backend, instances, config, tmp_path / out, image_loader=selection.image, dataset=selection.identity)
        log = next((tmp_path / out).glob("*/samples.jsonl"))
        return {r["key"]: r["response"] for r in map(json.loads, log.read_text().splitlines())}

    straight = run(selection.instances, "straight")
    first = [i for i in selection.instances if i.id.endswith("-0000")]
    assert 0 < len(first) < len(selection.instances)
    run(first, "resumed")
    resumed = run(selection.instances, "resumed")
    assert resumed == straight and len(straight) == 3 * len(selection.instances)
    assert len(set(straight.values())) > len(selection.instances)  # samples do differ: it did sample
    # the same through the backend alone: other batch company, order and padding
    requests = [Request(i, "text", k, i.prompt) for i in selection.instances for k in range(3)][::-1][:5]
    alone = {}
    HFBackend(str(tiny_text), batch_size=3, device="cpu").run(requests, config.sampling,
                                                              lambda r, c: alone.setdefault(r.key, c.text))
    assert alone == {r.key: straight[r.key] for r in requests}


def test_temperature_zero_is_greedy(tiny_text):
    """--temperature 0 decodes greedily, as transformers does; a sampler kept to one token (top_k=1) too."""
    import torch

    inst = mmnp.get_task("knapsack").generate("easy", seed=0)
    backend = HFBackend(str(tiny_text), batch_size=2, device="cpu")
    requests = [Request(inst, "text", k, inst.prompt) for k in range(2)]
    out = {}
    for sampling in (Sampling(temperature=0.0, max_tokens=12), Sampling(temperature=0.9, max_tokens=12,
                                                                        extra={"top_k": 1})):
        backend.run(requests, sampling, lambda r, c: out.setdefault((sampling.temperature, r.sample), c.text))
    inputs = backend._inputs(requests[:1])
    with torch.no_grad():
        plain = backend.model.generate(**inputs, max_new_tokens=12, do_sample=False,
                                       pad_token_id=backend.tokenizer.pad_token_id)
    greedy = backend.tokenizer.decode(plain[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
    assert set(out.values()) == {greedy}


def test_the_gumbel_sampler_draws_from_the_warped_softmax():
    """argmax(warped logits + Gumbel noise) is a draw from softmax(warped logits): the frequencies of
    20,000 draws match it, and a token top-p removes is never drawn."""
    import torch
    from transformers import TemperatureLogitsWarper, TopPLogitsWarper

    from mmnp.evaluation.hf_backend import GumbelSampler

    logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -3.0]])
    warpers = [TemperatureLogitsWarper(0.7), TopPLogitsWarper(0.98)]
    expected = torch.softmax(warpers[1](None, warpers[0](None, logits.clone())), -1)[0]
    assert expected[-1] == 0 and (expected[:-1] > 0).all()
    generator = torch.Generator().manual_seed(0)
    sampler, rows = GumbelSampler(warpers, [generator] * 1000), 1000  # one stream, 1000 rows a step
    draws = torch.cat([sampler(None, logits.expand(rows, -1).clone()).argmax(-1) for _ in range(20)])
    frequencies = torch.bincount(draws, minlength=5).double() / len(draws)
    bound = 5 * torch.sqrt(expected.double() * (1 - expected.double()) / len(draws))
    assert ((frequencies - expected.double()).abs() <= bound).all(), (frequencies, expected)
    assert frequencies[-1] == 0


def test_settings_that_bypass_the_sampler_are_refused(tiny_text):
    inst = mmnp.get_task("knapsack").generate("easy", seed=0)
    backend, out = HFBackend(str(tiny_text), device="cpu"), []
    for extra, named in (({"num_beams": 2}, "--gen-kwargs num_beams"), ({"top_k": -1}, "top_k -1")):
        with pytest.raises(UsageError, match=re.escape(named)):
            backend.run([Request(inst, "text", 0, inst.prompt)], Sampling(temperature=0.7, extra=extra), out.append)
    assert out == []  # refused before anything was generated


def test_another_dtype_is_refused_on_resume_and_recorded(tiny_text, tmp_path):
    """fp32 and bf16 answers differ: a folder's samples are resumed only with the dtype they were made with."""
    from typer.testing import CliRunner

    from mmnp.cli import app

    def run(dtype: str):
        return CliRunner().invoke(app, ["eval", "--model", f"hf:{tiny_text}", "--model-args",
                                        f"device=cpu,dtype={dtype}", "--tasks", "knapsack", "--difficulty", "easy",
                                        "--count", "1", "--max-tokens", "4", "--output-path", str(tmp_path)])

    assert run("float32").exit_code == 0
    results = json.loads(next(tmp_path.glob("*/results.json")).read_text())
    assert results["config"]["model_args"] == {"dtype": "float32"}
    refused = run("bfloat16")
    assert refused.exit_code == 2 and "different settings" in refused.output and "bfloat16" in refused.output


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
