"""verl: the reward function verl calls, the rows and parquet files its RLHFDataset reads, and the
example config. The tests marked `verl` use verl itself and are skipped where it is not installed
(see examples/verl/check_verl.sh for the environment they run in)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

datasets = pytest.importorskip("datasets", reason="needs the hf extra")

import mmnp  # noqa: E402
from mmnp.dataset import load_dataset  # noqa: E402
from mmnp.errors import UsageError  # noqa: E402
from mmnp.export import export_dataset  # noqa: E402
from mmnp.rewards import record_payload  # noqa: E402
from mmnp.rewards.verl import compute_score, to_verl_row  # noqa: E402

EXAMPLE = Path(__file__).parent.parent / "examples" / "verl"
try:
    import verl  # noqa: F401

    HAVE_VERL = True
except ImportError:
    HAVE_VERL = False
needs_verl = pytest.mark.skipif(not HAVE_VERL, reason="verl is not installed: its pip install replaces transformers "
                                                      "and pulls ray; run examples/verl/check_verl.sh")


@pytest.fixture(scope="module")
def verl_export(small_dataset, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("verl") / "x"
    export_dataset(small_dataset, out, "verl", modality="image", reward="quality", test_fraction=0.5)
    return out


def answers(inst) -> tuple[str, str]:
    task = mmnp.get_task(inst.task)
    best = inst.reference.get("optimal") or inst.reference["heuristic"]
    return task.format_answer(inst.reference["heuristic"]["solution"]), task.format_answer(best["solution"])


def test_compute_score_takes_what_verl_passes(small_dataset):
    inst = next(load_dataset(small_dataset, ["tsp"], ["medium"]))
    truth, (heuristic, best) = record_payload(inst), answers(inst)
    verl_kwargs = {"reward_router_address": None, "reward_model_tokenizer": None, "some_reward_kwarg": 3}
    assert compute_score("mmnp/tsp", heuristic, truth, {"index": 0}, **verl_kwargs) == 1.0
    expected = mmnp.get_task("tsp").quality_ratio(inst.best_objective, inst.reference_objective)
    assert compute_score(data_source="mmnp/tsp", solution_str=best, ground_truth=truth, extra_info=None) == expected
    assert compute_score("mmnp/tsp", "no idea", truth, {"reward": "feasible"}, **verl_kwargs) == 0.0


def test_image_rows_carry_the_png_behind_one_image_tag(small_dataset):
    inst = next(load_dataset(small_dataset, ["knapsack"], ["easy"]))
    png = (small_dataset / inst.image).read_bytes()
    row = to_verl_row(inst, "image", png=png, index=5)
    assert row["images"] == [{"bytes": png}]
    assert row["prompt"][0]["content"] == "<image>" + inst.image_prompt
    assert row["extra_info"]["index"] == 5 and row["extra_info"]["id"] == inst.id
    assert "images" not in to_verl_row(inst, "text")
    with pytest.raises(UsageError, match="needs the instance's PNG"):
        to_verl_row(inst, "image")


def test_verl_export_is_a_stratified_train_test_split(small_dataset, verl_export):
    from PIL import Image

    source = {i.id: i for i in load_dataset(small_dataset)}
    parts = {s: datasets.load_dataset("parquet", data_files=str(verl_export / f"{s}.parquet"))["train"]
             for s in ("train", "test")}
    ids = {s: [r["extra_info"]["id"] for r in parts[s]] for s in parts}
    assert len(ids["train"]) == len(ids["test"]) == 20 and not set(ids["train"]) & set(ids["test"])
    assert {(source[i].task, source[i].difficulty) for i in ids["test"]} == {(i.task, i.difficulty) for i in source.values()}
    for split, part in parts.items():
        for index, row in enumerate(part):
            inst = source[row["extra_info"]["id"]]
            assert row["extra_info"]["index"] == index and row["extra_info"]["split"] == split
            assert row["images"][0]["bytes"] == (small_dataset / inst.image).read_bytes()
            assert Image.open(io.BytesIO(row["images"][0]["bytes"])).width == 768  # --image-size
            heuristic, _ = answers(inst)
            assert compute_score(row["data_source"], heuristic, row["reward_model"]["ground_truth"],
                                 row["extra_info"]) == 1.0


def leaves(tree: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in tree.items():
        out += leaves(value, f"{prefix}{key}.") if isinstance(value, dict) and value else [f"{prefix}{key}"]
    return out


@needs_verl
def test_the_example_config_uses_only_keys_verl_has_and_loads_compute_score():
    from hydra import compose, initialize_config_dir, initialize_config_module
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    with initialize_config_dir(config_dir=str(EXAMPLE), version_base=None):
        ours = compose(config_name="mmnp_grpo")
    with initialize_config_module("verl.trainer.config", version_base=None):
        base = compose(config_name="ppo_trainer")  # verl's own defaults
    mine = {k: v for k, v in yaml.safe_load((EXAMPLE / "mmnp_grpo.yaml").read_text()).items()
            if k not in ("hydra", "defaults")}
    for key in leaves(mine):
        assert OmegaConf.select(base, key, default="<absent>") != "<absent>", f"verl has no config key {key}"
    assert OmegaConf.select(ours, "reward.custom_reward_function.path") == "pkg://mmnp.rewards.verl"
    fn = get_custom_reward_fn(ours)
    inst = mmnp.get_task("knapsack").generate("easy", 3)
    heuristic, _ = answers(inst)
    assert fn(data_source="mmnp/knapsack", solution_str=heuristic, ground_truth=record_payload(inst),
              extra_info={"index": 0}, reward_router_address=None, reward_model_tokenizer=None) == 1.0
    assert fn(data_source="mmnp/knapsack", solution_str="no", ground_truth=record_payload(inst), extra_info={}) == 0.0


@needs_verl
def test_verls_rlhf_dataset_reads_the_image_export(small_dataset, verl_export, tmp_path):
    from omegaconf import OmegaConf
    from PIL import Image
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from mmnp.evaluation.models import load_processor
    from mmnp.tiny_model import write_tiny_model

    processor = load_processor(write_tiny_model(tmp_path / "vlm", vision=True))
    config = OmegaConf.create({"prompt_key": "prompt", "image_key": "images", "max_prompt_length": 100000,
                               "filter_overlong_prompts": False, "cache_dir": str(tmp_path / "cache")})
    ds = RLHFDataset([str(verl_export / "test.parquet")], processor.tokenizer, config, processor)
    assert len(ds) == 20
    source = {i.id: i for i in load_dataset(small_dataset)}
    for k in (0, 7, 19):
        item = ds[k]
        inst = source[item["extra_info"]["id"]]
        (message,) = item["raw_prompt"]
        image, text = message["content"]
        assert image["type"] == "image" and text == {"type": "text", "text": inst.image_prompt}
        png = Image.open(small_dataset / inst.image)
        assert image["image"].size == png.size and image["image"].convert("RGB").tobytes() == png.convert("RGB").tobytes()
        assert item["index"] == k and item["reward_model"]["ground_truth"] == record_payload(inst)
