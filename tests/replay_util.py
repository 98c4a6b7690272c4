"""Helpers for the replay tests: a tiny ChatML tokenizer directory and synthetic chat logs."""

from __future__ import annotations

import json
import random
from pathlib import Path

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
          "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau "
         "upsilon phi chi psi omega policy refund account order ship track invoice").split()


def make_tokenizer_dir(path: Path, vocab_size: int = 400) -> Path:
    """A byte-level BPE tokenizer trained on a few sentences, with ChatML specials and template:
    ``tokenizer.json`` + ``tokenizer_config.json`` (what ``--tokenizer DIR`` loads)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    rng = random.Random(7)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(30)) + f" {rng.randrange(10**6)}." for _ in range(300)]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus, trainer)
    path.mkdir(parents=True, exist_ok=True)
    tok.save(str(path / "tokenizer.json"))
    (path / "tokenizer_config.json").write_text(json.dumps(
        {"chat_template": CHATML, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>"}), encoding="utf-8")
    return path


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def chat_log(path: Path, *, seed: int = 0, sessions: int = 3, turns: int = 3, system_words: int = 60,
             cache_key: bool = False) -> Path:
    """OpenAI chat requests: a shared system prompt, sessions whose conversations grow turn by
    turn (each request repeats the history), interleaved in arrival order."""
    rng = random.Random(seed)
    system = "You are a helpful agent. " + sentence(rng, system_words)
    records = []
    t = 1_700_000_000
    convs = {s: [{"role": "system", "content": system}] for s in range(sessions)}
    for turn in range(turns):
        for s in range(sessions):
            convs[s].append({"role": "user", "content": f"Question {s}.{turn}: " + sentence(rng, rng.randrange(5, 25))})
            body = {"model": "tiny", "messages": [dict(m) for m in convs[s]]}
            if cache_key:
                body["prompt_cache_key"] = f"team-{s % 2}"
            records.append({"timestamp": t, "request_id": f"s{s}-t{turn}", "request": body})
            convs[s].append({"role": "assistant", "content": "Answer: " + sentence(rng, rng.randrange(5, 20))})
            t += 7
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path
