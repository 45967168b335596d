"""`mmnp tiny-model`: a tiny Qwen2-style text model or Qwen2-VL-style vision-language
model with a tokenizer trained here on MM-NP-Bench prompts, for demos, tests and CPU smoke
runs. Nothing is downloaded. The weights are random: it answers badly, quickly."""

from __future__ import annotations

from pathlib import Path

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
           "<|video_pad|>"]
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{%- if message['content'] is string -%}{{ message['content'] }}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{%- elif part['type'] == 'text' -%}{{ part['text'] }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{ '<|im_end|>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\n' }}{%- endif -%}"
)
IMAGE_PIXELS = 112 * 112  # images shrink to at most this many pixels: 16 image tokens each


def corpus() -> list[str]:
    """Prompts, image instructions and answers of every task, to train the tokenizer on."""
    from mmnp.registry import list_tasks

    texts = []
    for task in list_tasks():
        for difficulty in ("easy", "medium", "hard"):
            for seed in range(2):
                inst = task.generate(difficulty, seed)
                texts += [inst.prompt, inst.image_prompt, task.format_answer(inst.reference["heuristic"]["solution"])]
    return texts


def build_tokenizer(vocab_size: int = 1024):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   chat_template=CHAT_TEMPLATE, padding_side="left")


def warm_start(model, tokenizer, steps: int, seed: int = 0) -> None:
    """A few supervised steps on reference answers, so the tiny model writes `Answer: [...]`
    lines often enough for rewards to vary (and RL smoke runs to have a gradient)."""
    import torch

    from mmnp.registry import list_tasks

    texts = []
    for task in list_tasks():
        for i in range(8):
            inst = task.generate("easy", seed=1000 + i)
            prompt = tokenizer.apply_chat_template([{"role": "user", "content": inst.prompt}], tokenize=False,
                                                   add_generation_prompt=True)
            texts.append((prompt, task.format_answer(inst.reference["heuristic"]["solution"]) + "<|im_end|>"))
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(steps):
        batch = [texts[int(i)] for i in torch.randint(len(texts), (8,), generator=generator)]
        encoded = [(tokenizer(p, add_special_tokens=False)["input_ids"], tokenizer(a, add_special_tokens=False)["input_ids"])
                   for p, a in batch]
        width = max(len(p) + len(a) for p, a in encoded)
        ids = torch.full((len(batch), width), tokenizer.pad_token_id)
        labels = torch.full((len(batch), width), -100)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, (p, a) in enumerate(encoded):
            ids[row, : len(p) + len(a)] = torch.tensor(p + a)
            labels[row, len(p) : len(p) + len(a)] = torch.tensor(a)
            mask[row, : len(p) + len(a)] = 1
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()


def write_tiny_model(out: str | Path, vision: bool = False, seed: int = 0, hidden: int = 32, layers: int = 2,
                     warm_steps: int = 0) -> Path:
    """Write a loadable model folder (config, weights, tokenizer / processor) to `out`, a new (or
    empty) folder that appears whole; `warm_steps` supervised steps on reference answers first
    (see `warm_start`)."""
    from mmnp.files import write_whole_folder

    write_whole_folder(Path(out), lambda staging: _write_model(staging, vision, seed, hidden, layers, warm_steps))
    return Path(out)


def _write_model(out: Path, vision: bool, seed: int, hidden: int, layers: int, warm_steps: int) -> None:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    tokenizer = build_tokenizer()
    text = dict(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                bos_token_id=None, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                tie_word_embeddings=True)
    if not vision:
        model = Qwen2ForCausalLM(Qwen2Config(**text))
        warm_start(model, tokenizer, warm_steps, seed)
        model.generation_config.eos_token_id = tokenizer.eos_token_id
        model.generation_config.pad_token_id = tokenizer.pad_token_id
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        return

    from transformers import (Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLImageProcessorPil,
                              Qwen2VLProcessor)

    from mmnp.evaluation.models import image_only_processor

    ids = {name: tokenizer.convert_tokens_to_ids(tok) for name, tok in
           (("image_token_id", "<|image_pad|>"), ("video_token_id", "<|video_pad|>"),
            ("vision_start_token_id", "<|vision_start|>"), ("vision_end_token_id", "<|vision_end|>"))}
    config = Qwen2VLConfig(
        text_config={**text, "rope_parameters": {"rope_type": "default", "mrope_section": [2, 1, 1],
                                                  "rope_theta": 10000.0}},
        vision_config=dict(depth=1, embed_dim=hidden, hidden_size=hidden, num_heads=2, mlp_ratio=2, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2, in_channels=3),
        **ids,
    )
    model = Qwen2VLForConditionalGeneration(config)
    warm_start(model, tokenizer, warm_steps, seed)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    # Built without torchvision (CPU machines have none). The folder names the full Qwen2VLProcessor, with a
    # video processor entry, so it loads with AutoProcessor where torchvision is and `load_processor` elsewhere.
    images = Qwen2VLImageProcessorPil(size={"shortest_edge": 56 * 56, "longest_edge": IMAGE_PIXELS})
    processor = image_only_processor(Qwen2VLProcessor)(images, tokenizer, chat_template=CHAT_TEMPLATE)
    model.save_pretrained(out)
    processor.save_pretrained(out)
