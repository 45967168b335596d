"""verl: the reward function verl calls, the rows and parquet files its RLHFDataset reads, the
example configs, and mmnp's DMPO / ProGRPO registered with verl's registries (mmnp/trainers/verl.py). The tests marked `verl` use verl itself and are skipped where it is not installed
(see examples/verl/check_verl.sh for the environment they run in)."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
import yaml

datasets = pytest.importorskip("datasets", reason="needs the hf extra")

import mmnp  # noqa: E402
from conftest import SMALL_PER_DIFFICULTY  # noqa: E402
from mmnp.dataset import load_dataset  # noqa: E402
from mmnp.errors import UsageError  # noqa: E402
from mmnp.export import export_dataset  # noqa: E402
from mmnp.trainers.rewards import record_payload  # noqa: E402
from mmnp.trainers.rewards.verl import compute_score, to_verl_row  # noqa: E402

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
    assert len(ids["train"]) == len(ids["test"]) == SMALL_PER_DIFFICULTY and not set(ids["train"]) & set(ids["test"])
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
    assert OmegaConf.select(ours, "reward.custom_reward_function.path") == "pkg://mmnp.trainers.rewards.verl"
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
    from mmnp.trainers.tiny_model import write_tiny_model

    processor = load_processor(write_tiny_model(tmp_path / "vlm", vision=True))
    config = OmegaConf.create({"prompt_key": "prompt", "image_key": "images", "max_prompt_length": 100000,
                               "filter_overlong_prompts": False, "cache_dir": str(tmp_path / "cache")})
    ds = RLHFDataset([str(verl_export / "test.parquet")], processor.tokenizer, config, processor)
    assert len(ds) == SMALL_PER_DIFFICULTY
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


# -- mmnp's algorithms registered with verl (mmnp/trainers/verl.py) ----------------------------------------

def _actor_config(rollout_n: int, global_batch_size: int, **policy):
    from mmnp.trainers.verl import DMPOActorConfig

    config = DMPOActorConfig(strategy="fsdp", rollout_n=rollout_n, ppo_micro_batch_size=rollout_n)
    for key, value in policy.items():
        object.__setattr__(config.policy_loss, key, value)
    object.__setattr__(config.policy_loss, "loss_mode", "mmnp_dmpo")
    config.global_batch_info.update({"dp_size": 1, "batch_num_tokens": None, "global_batch_size": global_batch_size})
    return config


def _groups(g: int, n_groups: int, length: int = 5, seed: int = 0):
    """Token log-probs (with gradient), a ragged response mask, 0/1/2 rewards varying within
    each group, GRPO's advantages per token and the groups' uids, rows grouped by prompt."""
    import numpy as np
    import torch

    from mmnp.trainers.base import group_advantages

    generator = torch.Generator().manual_seed(seed)
    rows = g * n_groups
    log_prob = (-torch.rand(rows, length, generator=generator, dtype=torch.float64) * 3).requires_grad_()
    mask = torch.ones(rows, length, dtype=torch.bool)
    for i in range(rows):
        mask[i, length - i % 3 :] = False
    rewards = torch.tensor([float(i % 3) for i in range(rows)], dtype=torch.float64)
    advantages = group_advantages(rewards.view(n_groups, g)).flatten()[:, None].expand(rows, length) * mask
    uid = np.array([f"prompt-{i // g}" for i in range(rows)], dtype=object)
    return log_prob, mask, rewards, advantages, uid


@needs_verl
def test_importing_mmnp_never_imports_verl():
    import subprocess
    import sys

    code = ("import sys, mmnp, mmnp.trainers.rewards.verl, mmnp.trainers.algorithms.dmpo, mmnp.trainers.algorithms.progrpo; "
            "print(sorted(m for m in sys.modules if m == 'verl' or m.startswith('verl.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out


@needs_verl
@pytest.mark.parametrize("recipe", ["paper", "authors"])
def test_verls_mmnp_dmpo_loss_is_its_surrogate_plus_lambda_times_mmnps_l_dm(recipe):
    """verl's registered `mmnp_dmpo` on a micro-batch of whole groups: its loss and its gradient
    equal verl's vanilla surrogate plus lambda times L_DM and its closed-form gradient as mmnp's
    own trainer computes them (`Reading.loss_and_gradient`, chained through phi = mean log-prob)."""
    import torch
    from verl.trainer.ppo.core_algos import compute_policy_loss_vanilla, get_policy_loss_fn

    import mmnp.trainers.verl as mv

    g, n_groups = 6, 2
    log_prob, mask, rewards, advantages, uid = _groups(g, n_groups)
    config = _actor_config(g, g * n_groups, dmpo_recipe=recipe, dmpo_lambda=0.7, dmpo_alpha=0.8, dmpo_tau=0.5,
                           dmpo_fragment_size=4)
    lam, reading = mv.reading_of(config.policy_loss)
    assert (lam, reading.grouping) == (0.7, "exact" if recipe == "paper" else "fragments")
    old = log_prob.detach() - 0.01
    with mv.micro_batch(uid, rewards):
        loss, metrics = get_policy_loss_fn("mmnp_dmpo")(old, log_prob, advantages, mask, "token-mean", config, None)
    (grad,) = torch.autograd.grad(loss, log_prob)

    vanilla, _ = compute_policy_loss_vanilla(old, log_prob, advantages, mask, "token-mean", config, None)
    (vanilla_grad,) = torch.autograd.grad(vanilla, log_prob)
    lengths = mask.sum(-1, keepdim=True)
    phi = ((log_prob * mask).sum(-1) / lengths.squeeze(-1)).detach()
    l_dm, coef = reading.loss_and_gradient(phi.view(n_groups, g), rewards.view(n_groups, g),
                                           advantages[:, 0].view(n_groups, g))
    assert l_dm > 1e-3 and metrics["actor/dmpo_l_dm"] == pytest.approx(l_dm.item(), rel=1e-9)
    assert loss.item() == pytest.approx(vanilla.item() + 0.7 * l_dm.item(), rel=1e-9)
    expected = vanilla_grad + 0.7 * coef.flatten()[:, None] * mask / lengths
    assert torch.allclose(grad, expected, atol=1e-12)


@needs_verl
def test_verls_mmnp_dmpo_exact_reading_refuses_split_groups():
    import torch
    from verl.trainer.ppo.core_algos import get_policy_loss_fn

    import mmnp.trainers.verl as mv

    log_prob, mask, rewards, advantages, uid = _groups(4, 2)
    keep = torch.tensor([0, 1, 2, 4, 5, 6])  # three of each group: a micro-batch verl's length balancing could make
    config = _actor_config(4, 8, dmpo_recipe="paper")
    with mv.micro_batch(uid[keep.numpy()], rewards[keep]), pytest.raises(ValueError, match="whole groups"):
        get_policy_loss_fn("mmnp_dmpo")(log_prob[keep].detach(), log_prob[keep], advantages[keep], mask[keep],
                                        "token-mean", config, None)
    fragments = _actor_config(4, 8, dmpo_recipe="authors")
    with mv.micro_batch(uid[keep.numpy()], rewards[keep]):  # the authors' reading takes what the micro-batch holds
        get_policy_loss_fn("mmnp_dmpo")(log_prob[keep].detach(), log_prob[keep], advantages[keep], mask[keep],
                                        "token-mean", fragments, None)


@needs_verl
def test_verls_own_ppo_loss_hands_mmnp_dmpo_the_groups_and_rewards():
    """Through verl's ppo_loss (wrapped by importing mmnp.trainers.verl), on verl's no-padding
    micro-batch: the same loss as the registered function given the groups by hand."""
    import torch
    from tensordict import TensorDict
    from tensordict.tensorclass import NonTensorData, NonTensorStack
    from verl.trainer.ppo.core_algos import get_policy_loss_fn
    from verl.workers.utils import losses
    from verl.workers.utils.padding import no_padding_2_padding

    import mmnp.trainers.verl as mv

    assert hasattr(losses.ppo_loss, "mmnp_wrapped")
    g, rows, prompt_len, response_len = 2, 4, 1, 2
    config = _actor_config(g, rows, dmpo_recipe="paper", dmpo_lambda=2.0)
    object.__setattr__(config, "entropy_coeff", 0.0)
    uid = ["a", "a", "b", "b"]
    rewards = torch.tensor([[0.0, 1.0], [0.0, 0.0], [0.0, 0.5], [0.0, 1.0]])
    data = TensorDict({
        "prompts": torch.ones(rows, prompt_len, dtype=torch.long),
        "responses": torch.ones(rows, response_len, dtype=torch.long),
        "attention_mask": torch.ones(rows, prompt_len + response_len, dtype=torch.long),
        "response_mask": torch.ones(rows, response_len, dtype=torch.bool),
        "old_log_probs": torch.full((rows, response_len), -1.0),
        "advantages": torch.tensor([[0.7, 0.7], [-0.7, -0.7], [-0.7, -0.7], [0.7, 0.7]]),
        "token_level_rewards": rewards,
        "uid": NonTensorStack.from_list([NonTensorData(u) for u in uid]),
        "dp_size": NonTensorData(1), "batch_num_tokens": NonTensorData(None), "global_batch_size": NonTensorData(rows),
    }, batch_size=[rows])
    flat = torch.linspace(-2.0, -0.1, rows * (prompt_len + response_len), requires_grad=True)
    loss, metrics = losses.ppo_loss(config, {"log_probs": flat}, data)
    log_prob = no_padding_2_padding(flat, data)
    with mv.micro_batch(uid, rewards.sum(-1)):
        direct, _ = get_policy_loss_fn("mmnp_dmpo")(data["old_log_probs"], log_prob, data["advantages"],
                                                    data["response_mask"], config.loss_agg_mode, config, None)
    assert direct.item() != pytest.approx(0.0) and "actor/dmpo_l_dm" in str(list(metrics))
    assert loss.item() == pytest.approx(direct.item(), rel=1e-6)


def _confidence_by_hand(logps: list[float], fraction: float) -> float:
    k = max(1, math.ceil(len(logps) * fraction))
    return math.exp(sum(sorted(logps)[:k]) / k)


@needs_verl
def test_verls_mmnp_progrpo_advantage_shifts_grpos_on_correct_answers_by_the_confidence_gap():
    import numpy as np
    import torch
    from verl.protocol import DataProto
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage, get_adv_estimator_fn

    import mmnp.trainers.verl as mv

    generator = torch.Generator().manual_seed(1)
    rows, length, prompt_len = 6, 5, 7
    response_mask = torch.ones(rows, length)
    response_mask[1, 3:] = 0
    scores = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.0, 1.0])
    token_level_rewards = torch.zeros(rows, length)
    token_level_rewards[:, 2] = scores
    old_log_probs = -torch.rand(rows, length, generator=generator) * 2
    prompt_log_probs = -torch.rand(rows, prompt_len, generator=generator) * 4
    prompt_mask = torch.ones(rows, prompt_len)
    prompt_mask[:, :2] = 0  # left padding
    index = np.array(["p"] * 3 + ["q"] * 3, dtype=object)
    config = mv.ProGRPOAlgoConfig(adv_estimator="mmnp_progrpo", progrpo_alpha=0.3, progrpo_fraction=0.4)
    fn = get_adv_estimator_fn("mmnp_progrpo")
    advantages, _ = fn(token_level_rewards, response_mask, index, config, old_log_probs=old_log_probs,
                       prompt_log_probs=prompt_log_probs, prompt_mask=prompt_mask)
    grpo, _ = compute_grpo_outcome_advantage(token_level_rewards, response_mask, index)
    for i in range(rows):
        c_q = _confidence_by_hand(prompt_log_probs[i, 2:].tolist(), 0.4)
        c_o = _confidence_by_hand(old_log_probs[i][response_mask[i].bool()].tolist(), 0.4)
        shift = 0.3 * (c_q - c_o) if scores[i] > 0 else 0.0
        assert advantages[i, 0].item() == pytest.approx(grpo[i, 0].item() + shift, abs=1e-6), i
    assert (advantages - grpo).abs().max() > 1e-2
    with pytest.raises(ValueError, match="prompt_log_probs"):
        fn(token_level_rewards, response_mask, index, config, old_log_probs=old_log_probs)

    # the wrapper of verl's compute_advantage (ray_trainer's: not importable on this CPU venv) hands the
    # estimator the batch's log-probs, and leaves every other estimator to verl
    calls = []
    wrapped = mv._compute_advantage_with_log_probs(lambda data, adv_estimator, **kw: calls.append(adv_estimator))
    data = DataProto.from_dict({"token_level_rewards": token_level_rewards, "response_mask": response_mask,
                                "old_log_probs": old_log_probs, "prompt_log_probs": prompt_log_probs,
                                "prompt_mask": prompt_mask}, non_tensors={"uid": index})
    out = wrapped(data, adv_estimator="mmnp_progrpo", config=config)
    assert torch.allclose(out.batch["advantages"], advantages) and calls == []
    wrapped(data, adv_estimator="grpo", config=config)
    assert calls == ["grpo"]


@needs_verl
def test_the_dmpo_example_config_composes_with_verls_and_builds_mmnps_configs():
    from hydra import compose, initialize_config_dir, initialize_config_module
    from omegaconf import OmegaConf
    from verl.utils.config import omega_conf_to_dataclass

    import mmnp.trainers.verl as mv

    with initialize_config_dir(config_dir=str(EXAMPLE), version_base=None):
        ours = compose(config_name="mmnp_dmpo")
    with initialize_config_module("verl.trainer.config", version_base=None):
        base = compose(config_name="ppo_trainer")
    added = {f"actor_rollout_ref.actor.policy_loss.{name}" for name in mv.DMPOPolicyLossConfig.__dataclass_fields__}
    mine = {k: v for k, v in yaml.safe_load((EXAMPLE / "mmnp_dmpo.yaml").read_text()).items()
            if k not in ("hydra", "defaults")}
    for key in leaves(mine):
        assert key in added or OmegaConf.select(base, key, default="<absent>") != "<absent>", f"verl has no key {key}"
    actor = omega_conf_to_dataclass(ours.actor_rollout_ref.actor)
    assert isinstance(actor, mv.DMPOActorConfig) and actor.policy_loss.loss_mode == "mmnp_dmpo"
    lam, reading = mv.reading_of(actor.policy_loss)
    assert lam == 0.5 and (reading.target, reading.grouping, reading.fragment_size) == ("advantage", "fragments", 4)
    assert OmegaConf.select(ours, "actor_rollout_ref.model.external_lib") == "mmnp.trainers.verl"


@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.99])
def test_the_test_split_is_the_fraction_of_the_instances_stratified(small_dataset, tmp_path, fraction):
    """test.parquet holds round(f x N) of the N instances (at least 1 and at most N - 1: verl
    refuses an empty split), each task and each task x difficulty its proportional share rounded
    down or up (a ceiling per cell put 20 of 40 in test at f = 0.1, and all 40 at f = 0.99); both
    files have verl's columns and types whatever their rows."""
    import pyarrow.parquet as pq

    export_dataset(small_dataset, tmp_path / "x", "verl", test_fraction=fraction)
    source = {i.id: i for i in load_dataset(small_dataset)}
    ids = {s: pq.read_table(tmp_path / "x" / f"{s}.parquet").column("extra_info").to_pylist() for s in ("train", "test")}
    test = [source[row["id"]] for row in ids["test"]]
    total = len(source)
    assert len(test) == min(max(math.floor(fraction * total + 0.5), 1), total - 1)
    assert len(ids["train"]) + len(test) == total and {r["id"] for r in ids["train"]}.isdisjoint(i.id for i in test)
    for key in (lambda i: i.task, lambda i: (i.task, i.difficulty)):
        sizes: dict = {}
        for inst in source.values():
            sizes[key(inst)] = sizes.get(key(inst), 0) + 1
        for cell, size in sizes.items():
            quota = len(test) * size / total
            assert math.floor(quota) <= sum(key(i) == cell for i in test) <= math.ceil(quota), cell
    schemas = [pq.read_schema(tmp_path / "x" / f"{s}.parquet").remove_metadata() for s in ("train", "test")]
    assert schemas[0] == schemas[1] and schemas[0].names == ["data_source", "prompt", "ability", "reward_model",
                                                               "extra_info"]


def test_a_verl_export_of_one_instance_is_refused(tmp_path):
    from mmnp.dataset import GenerateSpec, generate_dataset

    generate_dataset(tmp_path / "one", GenerateSpec(tasks=("knapsack",), difficulties=("easy",), count=1, seed=0,
                                                    images=False, optimal=False), workers=1)
    with pytest.raises(UsageError, match=r"--format verl needs at least 2 instances .* holds 1: generate more"):
        export_dataset(tmp_path / "one", tmp_path / "x", "verl")
    assert not (tmp_path / "x").exists()
