"""A synthetic multi-answer task run through the real trainers: one prompt whose valid
completions are four single-token answers, two of them equally best (A and B reward 1, C 0.5,
D 0; anything else -10, so the Boltzmann target gives it no mass). The policy starts away
from the Boltzmann shape (A 0.55, B, C, D 0.15 each), is trained by a registered trainer,
and its distribution over the answers is read from its logits at the prompt. Shared by
tests/test_multi_answer.py and benchmarks/multi_answer.py."""

from __future__ import annotations

from pathlib import Path

import torch

from mmnp.trainers.rewards import completion_text

PROMPT = "Answer with one letter:"
ANSWERS = ("A", "B", "C", "D")
REWARDS = (1.0, 1.0, 0.5, 0.0)
NOT_AN_ANSWER = -10.0
START = (0.55, 0.15, 0.15, 0.15)
# G = 8 samples per group, two groups per step, one token per completion, a large lr: a
# few seconds per run on one CPU core. 60 steps: Adam's momentum makes the A share of DMPO
# swing past 0.5 and settle (0.36 at step 20, 0.59 at 30, 0.47-0.51 from 50 on).
SETTINGS = {"num_generations": 8, "per_device_train_batch_size": 16, "max_completion_length": 1,
            "learning_rate": 1e-2, "max_steps": 60, "temperature": 1.0, "beta": 0.0}


def answer_reward(prompts, completions, **columns) -> list[float]:
    """The task's reward: exact single-letter answers by REWARDS, anything else NOT_AN_ANSWER."""
    table = dict(zip(ANSWERS, REWARDS))
    return [table.get(completion_text(c), NOT_AN_ANSWER) for c in completions]


def boltzmann(alpha: float) -> torch.Tensor:
    """DMPO's target over the answers, softmax(r / alpha)."""
    return torch.softmax(torch.tensor(REWARDS, dtype=torch.float64) / alpha, 0)


def a_share(q: torch.Tensor) -> float:
    """A's share of the two equally rewarded answers A + B (0.5: an even split)."""
    return float(q[0] / (q[0] + q[1]))


def kl(q: torch.Tensor, p: torch.Tensor) -> float:
    """KL(q || p) over the answers."""
    return float((q * (q / p).log()).sum())


def _answer_ids(tokenizer) -> list[int]:
    ids = [tokenizer.convert_tokens_to_ids(a) for a in ANSWERS]
    assert [tokenizer.decode([i]) for i in ids] == list(ANSWERS), "each answer must be one token"
    return ids


def answer_distribution(model, tokenizer) -> tuple[torch.Tensor, float]:
    """(the policy's next-token distribution at the prompt renormalised over the answers, the
    probability mass it puts on them)."""
    prompt = tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt], device=model.device)).logits[0, -1].double()
    p = torch.softmax(logits, -1)[_answer_ids(tokenizer)].cpu()
    return p / p.sum(), float(p.sum())


def start_model(base: Path, out: Path, steps: int = 60) -> Path:
    """`base` fine-tuned (cross-entropy at the prompt's last position) to answer with START,
    saved to `out`: a start away from the Boltzmann shape, with A favoured over B."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(base)
    tokenizer = AutoTokenizer.from_pretrained(base)
    prompt = torch.tensor([tokenizer(PROMPT, add_special_tokens=False)["input_ids"]])
    target = torch.zeros(model.config.vocab_size)
    target[_answer_ids(tokenizer)] = torch.tensor(START)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-2)
    model.train()
    for _ in range(steps):
        loss = -(target * torch.log_softmax(model(input_ids=prompt).logits[0, -1].float(), -1)).sum()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def train(algo: str, model: Path, out: Path, seed: int, **options) -> tuple[torch.Tensor, float]:
    """Train `model` with the registered trainer of `algo` on the task (SETTINGS, then
    `options`); the answer distribution and mass afterwards."""
    from datasets import Dataset
    from mmnp.trainers.algorithms import get_algorithm
    from transformers import AutoTokenizer, PrinterCallback

    cls = get_algorithm(algo)
    args = cls.config_class(**{**SETTINGS, **options}, output_dir=str(out), seed=seed, report_to="none",
                            use_cpu=True, logging_steps=1000, save_strategy="no", bf16=False,
                            remove_unused_columns=False, log_completions=False, disable_tqdm=True)
    tokenizer = AutoTokenizer.from_pretrained(model, padding_side="left")
    data = Dataset.from_list([{"prompt": PROMPT}] * args.per_device_train_batch_size)
    trainer = cls(model=str(model), reward_funcs=[answer_reward], args=args, train_dataset=data,
                  processing_class=tokenizer)
    trainer.remove_callback(PrinterCallback)  # no log lines on the console
    trainer.train()
    policy = trainer.accelerator.unwrap_model(trainer.model).eval()
    return answer_distribution(policy, tokenizer)
