"""Each algorithm's distinctive term, checked through its real trainer (TRL's loop, a tiny
model, one or a few steps) against an independent computation, so that the test fails if
the algorithm is replaced by GRPO or its term is wrong (sign, scope, scaling, anchor)."""

from __future__ import annotations

import json
import math
import warnings

import pytest

torch = pytest.importorskip("torch", reason="training needs the train extra")
pytest.importorskip("trl", reason="training needs the train extra")

from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback  # noqa: E402

from mmnp.errors import UsageError  # noqa: E402
from mmnp.trainers.rewards import completion_text  # noqa: E402
from mmnp.trainers.algorithms import get_algorithm  # noqa: E402
from mmnp.trainers.base import length_normalised  # noqa: E402


def varied_reward(prompts, completions, **columns):
    """Rewards that vary within every group whatever the model samples: a function of the
    completion's text plus half a point on every other completion (a group's members are
    consecutive in the batch)."""
    return [len(completion_text(c)) % 3 + 0.5 * (i % 2) for i, c in enumerate(completions)]


def binary_reward(prompts, completions, **columns):
    return [float(len(completion_text(c)) % 2) for c in completions]


class GradientAtFirstStep(TrainerCallback):
    """The accumulated gradient of every parameter just before the first optimiser step."""

    def __init__(self):
        self.grad = None

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        if self.grad is None:
            self.grad = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten().clone()
                                   for name, p in sorted(model.named_parameters()) if not name.startswith("logz_head")])


def _dataset(n_prompts: int, same: bool = False):
    from datasets import Dataset

    from mmnp.trainers.data import to_rows, training_instances

    instances = training_instances("knapsack", ["easy"], 1 if same else n_prompts, seed=5, params={"n": 4})
    return Dataset.from_list(to_rows(instances * (n_prompts if same else 1)))


def _trainer(algo, model, tmp_path, reward, data, **config):
    cls = get_algorithm(algo)
    defaults = dict(output_dir=str(tmp_path / algo), num_generations=4, per_device_train_batch_size=8,
                    max_completion_length=8, learning_rate=1e-6, max_steps=1, report_to="none", use_cpu=True,
                    seed=0, logging_steps=1, save_strategy="no", bf16=False, remove_unused_columns=False,
                    log_completions=False, max_grad_norm=0.0, temperature=1.0, beta=0.0)
    args = cls.config_class(**{**defaults, **config})
    tok = AutoTokenizer.from_pretrained(model, padding_side="left")
    return cls(model=str(model), reward_funcs=[reward], args=args, train_dataset=data, processing_class=tok)


def _record_scored(trainer) -> list:
    """Wrap on_scored: record (advantages before, the batch after, the GroupScores)."""
    seen = []
    original = trainer.on_scored

    def on_scored(batch, scores):
        before = batch["advantages"].clone()
        out = original(batch, scores)
        seen.append((before, out, scores))
        return out

    trainer.on_scored = on_scored
    return seen


def _completion_logps(model, batch, grad: bool = False) -> torch.Tensor:
    """Per-token log-probs of the batch's completions by one plain full forward."""
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    with torch.set_grad_enabled(grad):
        logits = model(input_ids=ids, attention_mask=mask).logits[:, batch["prompt_ids"].size(1) - 1 : -1].float()
    return torch.log_softmax(logits, -1).gather(-1, batch["completion_ids"][..., None]).squeeze(-1)


def _param_grad(model, loss) -> torch.Tensor:
    """d loss / d every policy parameter (FlowRL's log Z head left out, as GradientAtFirstStep does)."""
    named = [(n, p) for n, p in sorted(model.named_parameters()) if not n.startswith("logz_head")]
    grads = torch.autograd.grad(loss, [p for _, p in named], allow_unused=True)
    return torch.cat([(g if g is not None else torch.zeros_like(p)).flatten() for g, (_, p) in zip(grads, named)])


# -- DMPO ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("recipe", ["paper", "authors"])
def test_dmpo_gradient_is_grpo_plus_lambda_times_direct_group_loss_gradient(recipe, tiny_text, tmp_path):
    """Groups cut across micro-batches of 6, two accumulated per step: DMPO's gradient minus
    GRPO's (same seed, same samples) equals lambda times the autograd gradient of L_DM
    written by hand over the whole step: the paper's mean over groups of 4, or the authors'
    sum over fragments (groups of 6 cut into 4 + 2) with the advantage target."""
    from dmpo_by_hand import l_dm_by_hand

    g = 4 if recipe == "paper" else 6
    data = _dataset(12 // g * 2)
    common = dict(per_device_train_batch_size=6, gradient_accumulation_steps=2, num_generations=g)
    options = {"dmpo_recipe": recipe, "dmpo_lambda": 0.7, "dmpo_alpha": 0.8, "dmpo_tau": 0.5, "dmpo_fragment_size": 4}
    runs = {}
    for algo, extra in (("grpo", {}), ("dmpo", options)):
        trainer = _trainer(algo, tiny_text, tmp_path, varied_reward, data, **common, **extra)
        seen, grads = _record_scored(trainer), GradientAtFirstStep()
        trainer.add_callback(grads)
        trainer.train()
        runs[algo] = (seen[0], grads.grad, trainer.args)
    (advantages, batch, scores), dmpo_grad, args = runs["dmpo"]
    (_, grpo_batch, _), grpo_grad, _ = runs["grpo"]
    assert torch.equal(batch["completion_ids"], grpo_batch["completion_ids"]), "same seed, same samples"
    assert scores.rewards.std(dim=1).min() > 0, "every group needs reward variance for L_DM to pull"

    model = AutoModelForCausalLM.from_pretrained(tiny_text)
    phi = length_normalised(_completion_logps(model, batch, grad=True), batch["completion_mask"]).view(-1, g)
    l_dm = l_dm_by_hand(phi, scores.rewards, advantages.view(-1, g), args.dmpo_reading)
    direct = 0.7 * _param_grad(model, l_dm)
    difference = dmpo_grad - grpo_grad
    assert direct.norm() > 1e-4
    assert (difference - direct).norm() / direct.norm() < 1e-3


def test_dmpo_at_lambda_0_and_progrpo_at_alpha_0_are_grpo_to_the_bit(tiny_text, tmp_path):
    """The comparisons are fair: neither algorithm's machinery (no-grad passes, added terms,
    shifted advantages) changes GRPO's own numerical path, so at zero weight three steps
    land on GRPO's parameters exactly. (Inserting the no-grad pass as TRL's old log-probs,
    which differ from the loss's own by ~1e-6, already breaks this.)"""
    data = _dataset(8)
    common = dict(max_steps=3, learning_rate=1e-3, per_device_train_batch_size=8)
    final = {}
    for name, algo, extra in (("grpo", "grpo", {}), ("dmpo", "dmpo", {"dmpo_lambda": 0.0}),
                              ("dmpo-paper", "dmpo", {"dmpo_lambda": 0.0, "dmpo_recipe": "paper"}),
                              ("progrpo", "progrpo", {"progrpo_alpha": 0.0})):
        trainer = _trainer(algo, tiny_text, tmp_path, varied_reward, data, **common, **extra)
        trainer.train()
        model = trainer.accelerator.unwrap_model(trainer.model)
        final[name] = torch.cat([p.detach().flatten() for _, p in sorted(model.named_parameters())])
    start = torch.cat([p.flatten() for _, p in sorted(AutoModelForCausalLM.from_pretrained(tiny_text).named_parameters())])
    assert (final["grpo"] - start).abs().max() > 1e-3, "GRPO must move for the comparison to mean anything"
    for name in ("dmpo", "dmpo-paper", "progrpo"):
        assert torch.equal(final[name], final["grpo"]), (name, (final[name] - final["grpo"]).abs().max())


def test_dmpo_refuses_settings_where_its_gradient_is_inexact(tiny_text, tmp_path):
    data = _dataset(4)
    for bad in ({"num_iterations": 2}, {"steps_per_generation": 2}):
        with pytest.raises(UsageError, match="exact only"):
            _trainer("dmpo", tiny_text, tmp_path, varied_reward, data, **bad)
    with pytest.warns(UserWarning, match="approximate"):
        _trainer("dmpo", tiny_text, tmp_path, varied_reward, data, num_iterations=2, allow_inexact=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        _trainer("grpo", tiny_text, tmp_path, varied_reward, data, num_iterations=2)  # GRPO has no such limit


# -- ProGRPO -------------------------------------------------------------------------------------------

def test_progrpo_shifts_trl_advantages_by_the_confidence_gap_on_correct_answers_only(tiny_text, tmp_path):
    from mmnp.trainers.algorithms.progrpo import confidence

    trainer = _trainer("progrpo", tiny_text, tmp_path, binary_reward, _dataset(2), progrpo_alpha=0.3,
                       progrpo_fraction=0.2)
    seen = _record_scored(trainer)
    trainer.train()
    before, batch, scores = seen[0]
    correct = scores.local > 0
    assert correct.any() and (~correct).any(), "needs correct and incorrect answers"

    model = AutoModelForCausalLM.from_pretrained(tiny_text)

    def alone(ids):  # c(q) of the prompt by itself: no padding, tokens 1..n-1 from their real prefixes
        with torch.no_grad():
            logits = model(input_ids=ids[None]).logits[:, :-1].float()
        logps = torch.log_softmax(logits, -1).gather(-1, ids[None, 1:, None]).squeeze(-1)
        return confidence(logps, torch.ones_like(logps), 0.2)[0]

    prompt_c = torch.stack([alone(ids[mask.bool()]) for ids, mask in zip(batch["prompt_ids"], batch["prompt_mask"])])
    answer_c = confidence(_completion_logps(model, batch), batch["completion_mask"], 0.2)
    expected = torch.where(correct, 0.3 * (prompt_c - answer_c), torch.zeros_like(prompt_c))
    applied = batch["advantages"] - before
    assert expected[correct].abs().max() > 1e-3
    assert torch.allclose(applied, expected, atol=1e-4), (applied, expected)


# -- FlowRL --------------------------------------------------------------------------------------------

def test_flowrl_log_z_moves_to_the_value_that_zeroes_the_mean_residual(tiny_text, tmp_path):
    """The policy is frozen (lr 0) and made uniform, far from the reference, so the residual
    has a large mean that only log Z can absorb; its head (own lr) must move towards it."""
    trainer = _trainer("flowrl", tiny_text, tmp_path, varied_reward, _dataset(8, same=True), learning_rate=0.0,
                       logz_learning_rate=0.1, logz_hidden=16, max_steps=12, per_device_train_batch_size=8)
    model = trainer.accelerator.unwrap_model(trainer.model)
    with torch.no_grad():
        model.model.norm.weight.zero_()  # a uniform policy: phi - phi_ref = -log V - phi_ref, far below 0
    trainer.train()
    logged = [h for h in trainer.state.log_history if "flowrl/log_z" in h]
    log_z = [h["flowrl/log_z"] for h in logged]
    target = [h["flowrl/log_z"] - h["flowrl/delta_mean"] for h in logged]  # log Z that zeroes the mean residual
    goal = sum(target) / len(target)
    assert abs(goal - log_z[0]) > 0.5, "the test needs a target away from the head's start"
    assert abs(log_z[-1] - goal) < 0.5 * abs(log_z[0] - goal), (log_z, goal)  # at least half-way there
    assert abs(logged[-1]["flowrl/delta_mean"]) < 0.5 * abs(logged[0]["flowrl/delta_mean"])


def test_flowrl_residual_and_gradient_match_trajectory_balance_by_hand(tiny_text, tmp_path):
    """A policy moved away from its reference (one layer's weights scaled), frozen with its
    head (lr 0): every completion's delta = log Z(q) + phi(o) - beta r~ - phi_ref(o) is checked
    against an independent computation (the reference from the checkpoint itself, log Z from
    the head on the policy's pooled prompt states), and the policy's gradient equals that of
    mean(delta^2) (w = 1 at the first step)."""
    trainer = _trainer("flowrl", tiny_text, tmp_path, varied_reward, _dataset(2), learning_rate=0.0,
                       logz_learning_rate=0.0, logz_hidden=16, flowrl_beta=3.0)
    policy = trainer.accelerator.unwrap_model(trainer.model)
    with torch.no_grad():
        policy.model.layers[0].mlp.down_proj.weight.mul_(3.0)  # pi != pi_ref
        trainer.logz_head[-1].bias.fill_(0.7)
    seen, grad = _record_scored(trainer), GradientAtFirstStep()
    trainer.add_callback(grad)
    trainer.train()
    advantages, batch, _ = seen[0]
    mask = batch["completion_mask"]

    reference = AutoModelForCausalLM.from_pretrained(tiny_text)
    phi_ref = length_normalised(_completion_logps(reference, batch), mask)
    phi = length_normalised(_completion_logps(policy, batch, grad=True), mask)
    with torch.no_grad():
        hidden = policy(input_ids=batch["prompt_ids"], attention_mask=batch["prompt_mask"],
                        output_hidden_states=True).hidden_states[-1]
        pooled = (hidden * batch["prompt_mask"][..., None]).sum(1) / batch["prompt_mask"].sum(1, keepdim=True)
        log_z = trainer.logz_head(pooled.float()).squeeze(-1)
    delta = log_z + phi - 3.0 * advantages - phi_ref
    assert (phi - phi_ref).abs().mean() > 0.1, "the policy must differ from its reference"
    logged = [h for h in trainer.state.log_history if "flowrl/delta_mean" in h][0]
    assert logged["flowrl/delta_mean"] == pytest.approx(delta.mean().item(), abs=1e-4)
    assert logged["flowrl/delta_abs"] == pytest.approx(delta.abs().mean().item(), abs=1e-4)
    expected = _param_grad(policy, (delta**2).mean())
    assert (grad.grad - expected).norm() / expected.norm() < 1e-3


# -- DISA ----------------------------------------------------------------------------------------------

def _anchor_folder(tmp_path, model_dir, value: float):
    """An anchor that predicts `value` for every prompt (its output layer zero, its offset
    `value`), with the configuration `mmnp disa fit` writes."""
    from mmnp.registry import list_tasks
    from mmnp.trainers.disa.anchor import REGRESSOR, REGRESSOR_CONFIG, Anchor

    folder = tmp_path / f"anchor{value}"
    folder.mkdir()
    tasks = [t.name for t in list_tasks()]
    hidden = AutoModelForCausalLM.from_pretrained(model_dir).config.hidden_size
    anchor = Anchor(hidden + len(tasks) + 3, 4)
    with torch.no_grad():
        anchor.net[-1].weight.zero_()
        anchor.net[-1].bias.zero_()
        anchor.y_mean.fill_(value)
    torch.save(anchor.state_dict(), folder / REGRESSOR)
    (folder / REGRESSOR_CONFIG).write_text(json.dumps({
        "width": hidden + len(tasks) + 3, "hidden": 4, "size_tasks": tasks,
        "estimate": {"beta": 2.0, "reward": "quality", "loglik": "sum", "ref": str(model_dir)}}))
    return folder


def test_disa_loss_is_stationary_at_the_exact_anchor_and_pulls_with_a_wrong_one(tiny_text, tmp_path):
    """Zero rewards and pi = pi_ref (first step) make the target pi_ref itself, with log Z = 0:
    with that exact anchor every residual and the gradient vanish; with an anchor of 3 the
    gradient is exactly d/dtheta mean_i 2 * 3 * log pi(o_i|q) (each residual is 3)."""

    def quality_reward(prompts, completions, **columns):  # the estimate's reward name, zero everywhere
        return [0.0] * len(completions)

    grads, batches = {}, {}
    for value in (0.0, 3.0):
        trainer = _trainer("disa", tiny_text, tmp_path, quality_reward, _dataset(2),
                           logz=str(_anchor_folder(tmp_path, tiny_text, value)))
        seen, grad = _record_scored(trainer), GradientAtFirstStep()
        trainer.add_callback(grad)
        trainer.train()
        grads[value], batches[value] = grad.grad, seen[0][1]
        residual = [h["disa/residual"] for h in trainer.state.log_history if "disa/residual" in h][0]
        assert residual == pytest.approx(value, abs=1e-3)

    model = AutoModelForCausalLM.from_pretrained(tiny_text)
    batch = batches[3.0]
    logp = (_completion_logps(model, batch, grad=True) * batch["completion_mask"]).sum(-1)
    expected = _param_grad(model, (2 * 3.0 * logp).mean())
    assert (grads[3.0] - expected).norm() / expected.norm() < 1e-3
    assert grads[0.0].norm() < 1e-4 * expected.norm()


def test_disa_residual_uses_the_raw_reward_not_the_advantage(tiny_text, tmp_path):
    """Rewards that vary within each group, pi = pi_ref at the first step (w = 1): the
    residual of each completion is g(q) - beta r_i with r_i the reward itself, so the
    gradient is exactly d/dtheta mean_i 2 (g - beta r_i) log pi(o_i|q); the group-normalised
    advantage in its place gives another gradient."""

    def quality_reward(prompts, completions, **columns):  # the estimate's reward name
        return [float(len(completion_text(c)) % 3) / 2 for c in completions]

    trainer = _trainer("disa", tiny_text, tmp_path, quality_reward, _dataset(2),
                       logz=str(_anchor_folder(tmp_path, tiny_text, 0.5)))
    seen, grad = _record_scored(trainer), GradientAtFirstStep()
    trainer.add_callback(grad)
    trainer.train()
    advantages, batch, scores = seen[0]
    rewards = scores.local
    assert rewards.view(-1, 4).std(dim=1).min() > 0, "the rewards must vary within each group"
    assert not torch.allclose(advantages, rewards), "the test needs advantages unlike the rewards"

    model = AutoModelForCausalLM.from_pretrained(tiny_text)
    logp = (_completion_logps(model, batch, grad=True) * batch["completion_mask"]).sum(-1)
    residual = 0.5 - 2.0 * rewards  # g(q) - beta r~, beta = 2 from the anchor's estimate
    expected = _param_grad(model, (2 * residual * logp).mean())
    assert (grad.grad - expected).norm() / expected.norm() < 1e-3
    logged = [h["disa/residual"] for h in trainer.state.log_history if "disa/residual" in h][0]
    assert logged == pytest.approx(residual.abs().mean().item(), abs=1e-4)


def test_disa_anchor_keeps_its_task_list(tmp_path, monkeypatch):
    """Size features one-hot over the task list stored with the anchor, not the live registry."""
    from mmnp.trainers.disa.anchor import size_features

    payload = json.dumps({"task": "knapsack", "instance": {"w": [1, 2]}, "reference_objective": 3})
    old = size_features(payload, ["knapsack", "tsp"])
    assert old[:2] == [1.0, 0.0] and len(old) == 5
    assert size_features(payload, ["knapsack", "tsp"]) == old  # unaffected by what the registry holds now


def test_disa_forwards_are_padded_to_a_common_count(tiny_text):
    """ZeRO-3 needs every process to run as many forwards: extra ones are made and discarded."""
    from mmnp.trainers.disa.anchor import pooled_prompt_features

    model = AutoModelForCausalLM.from_pretrained(tiny_text)
    calls = []
    model.register_forward_hook(lambda *a: calls.append(1))
    ids = torch.tensor([[0, 5, 6, 7], [8, 9, 10, 11]])
    mask = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 1]])
    features = pooled_prompt_features(model, ids, mask, forwards=5)
    assert len(calls) == 5 and features.shape == (2, model.config.hidden_size)
    alone = pooled_prompt_features(model, ids[:1], mask[:1])
    assert torch.allclose(alone[0], features[0], atol=1e-6)


# -- the no-grad pass under model-specific logit transforms ------------------------------------------

def _gemma2(path):
    from transformers import Gemma2Config, Gemma2ForCausalLM

    config = Gemma2Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                          num_attention_heads=2, num_key_value_heads=1, head_dim=8, final_logit_softcapping=0.5,
                          attn_logit_softcapping=None, sliding_window=64, max_position_embeddings=128)
    return Gemma2ForCausalLM(config)


def _cohere(path):
    from transformers import CohereConfig, CohereForCausalLM

    config = CohereConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                          num_attention_heads=2, num_key_value_heads=1, logit_scale=0.25,
                          max_position_embeddings=128)
    return CohereForCausalLM(config)


@pytest.mark.parametrize("build", [_gemma2, _cohere], ids=["gemma2-softcapping", "cohere-logit-scale"])
def test_cached_logps_apply_the_models_logit_transforms(build, tmp_path):
    """The prompt-cached no-grad pass equals the model's own full forward on models whose
    logits are soft-capped (Gemma-2) or scaled (Cohere)."""
    from mmnp.trainers.base import cached_completion_logps

    torch.manual_seed(0)
    model = build(tmp_path).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(8.0)  # large logits, so the transform matters
    prompt_ids = torch.tensor([[0, 5, 6, 7], [0, 5, 6, 7], [8, 9, 10, 11]])
    prompt_mask = torch.tensor([[0, 1, 1, 1], [0, 1, 1, 1], [1, 1, 1, 1]])
    completion_ids = torch.tensor([[20, 21, 22], [23, 24, 0], [25, 26, 27]])
    completion_mask = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 1, 1]])
    cached = cached_completion_logps(model, prompt_ids, prompt_mask, completion_ids, completion_mask, 0.7, chunk=2)
    with torch.no_grad():
        logits = model(input_ids=torch.cat([prompt_ids, completion_ids], 1),
                       attention_mask=torch.cat([prompt_mask, completion_mask], 1)).logits.float()
    full = torch.log_softmax(logits[:, 3:-1] / 0.7, -1).gather(-1, completion_ids[..., None]).squeeze(-1)
    assert torch.allclose(cached, full * completion_mask, atol=1e-4)
    raw = model.get_output_embeddings()(model(input_ids=prompt_ids[:1], output_hidden_states=True).hidden_states[-1])
    assert not torch.allclose(raw[0, -1], logits[0, 3], atol=1e-2), "the transform must matter here"


def test_cached_pass_uses_no_transformers_api_announced_for_removal(tmp_path, caplog):
    """transformers 5.24 renamed the forward's `past_key_values` to `cache` and removes the old
    name in 5.40 (inside mmnp's pin, <6): the cached pass takes whichever name the model's
    forward declares, and on a version that has `cache` it triggers no deprecation at all
    (transformers warns through both `warnings` and its logger)."""
    import inspect
    import logging

    from transformers import Qwen2Config, Qwen2ForCausalLM

    from mmnp.trainers.base import cache_keyword, cached_completion_logps

    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                         num_attention_heads=2, num_key_value_heads=1)).eval()
    declared = inspect.signature(model.forward).parameters
    assert cache_keyword(model) == ("cache" if "cache" in declared else "past_key_values")
    prompt_ids = torch.tensor([[1, 2, 3], [1, 2, 3], [4, 5, 6]])
    completion_ids = torch.tensor([[7, 8, 9], [10, 11, 12], [13, 14, 15]])
    ones = torch.ones(3, 3, dtype=torch.long)
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        cached = cached_completion_logps(model, prompt_ids, ones, completion_ids, ones, 1.0, chunk=3)
    if "cache" in declared:
        assert not [w for w in caught if "deprecat" in str(w.message).lower()], [str(w.message) for w in caught]
        assert "deprecated" not in caplog.text, caplog.text
    with torch.no_grad():
        logits = model(input_ids=torch.cat([prompt_ids, completion_ids], 1)).logits[:, 2:-1]
    full = torch.log_softmax(logits, -1).gather(-1, completion_ids[..., None]).squeeze(-1)
    assert torch.allclose(cached, full, atol=1e-5)


# -- DISA's proposal density ---------------------------------------------------------------------------

def test_disa_proposals_ignore_the_checkpoints_sampling_processors(tiny_text, tmp_path):
    """A checkpoint whose generation_config sets every kind of processor transformers would
    fill in from it (min_p, no_repeat_ngram_size, bad_words_ids on the likeliest first token,
    suppress_tokens on the next, forced_eos_token_id, a repetition penalty, top_k): the sampled
    first tokens still follow exp(log p_T) as DISA records it, token by token."""
    import shutil

    from mmnp.trainers.disa.estimate import TransformersProposals

    model = AutoModelForCausalLM.from_pretrained(tiny_text).eval()
    tok = AutoTokenizer.from_pretrained(tiny_text)
    prompt = tok(tok.apply_chat_template([{"role": "user", "content": "Answer: [0, 2]"}], add_generation_prompt=True,
                                         tokenize=False), add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        first = torch.softmax(model(input_ids=torch.tensor([prompt])).logits[0, -1].double(), -1)
    ranked = first.argsort(descending=True).tolist()
    assert first[ranked[0]] > 0.3, "the processors must have mass to move"
    path = tmp_path / "processors"
    shutil.copytree(tiny_text, path)
    config = json.loads((path / "generation_config.json").read_text())
    (path / "generation_config.json").write_text(json.dumps({
        **config, "min_p": 0.3, "no_repeat_ngram_size": 1, "bad_words_ids": [[ranked[0]]],
        "suppress_tokens": [ranked[1]], "forced_eos_token_id": ranked[2], "repetition_penalty": 3.0, "top_k": 2}))
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    n = 2000
    completions, logps = TransformersProposals(model, tok, "cpu").sample(prompt, n, 1, seed=0, loglik="sum")
    sampled = [c[0] for c in completions]
    recorded = {t: math.exp(lp) for t, lp in zip(sampled, logps)}
    for token, p in recorded.items():  # log p_T is the model's own first-token probability
        assert p == pytest.approx(first[token].item(), rel=1e-4), token
    for token in ranked[:6]:  # and the samples land at those rates
        p = first[token].item()
        share = sampled.count(token) / n
        assert abs(share - p) < 4 * math.sqrt(p * (1 - p) / n) + 0.005, (token, share, p)


def test_disa_vllm_claims_memory_before_the_reference_loads(tmp_path, monkeypatch):
    from mmnp.trainers.disa import estimate as module

    order = []

    class FakeVLLM:
        def __init__(self, path):
            order.append("vllm")
            raise RuntimeError("stop")

    monkeypatch.setattr(module, "VLLMProposals", FakeVLLM)
    monkeypatch.setattr(module, "load_model", lambda path, device: order.append("reference"))
    with pytest.raises(RuntimeError, match="stop"):
        module.estimate(module.EstimateSpec(ref="r", proposal="p", engine="vllm", prompts=1), tmp_path)
    assert order == ["vllm"]
