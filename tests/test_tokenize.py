"""Tokenizers offline: byte-identical vocabularies, memo, HF loading."""

from __future__ import annotations

import base64
import hashlib

import numpy as np
import pytest

from promptcache.errors import ConfigError
from promptcache.tokenize import TokenMemo, bytes_to_ids, resolve_tokenizer
from promptcache.tokenize.tiktoken_backend import TiktokenTokenizer, encoding_for_model, load_encoding

# tiktoken's own expected hashes of the published BPE files (tiktoken_ext/openai_public.py)
EXPECTED = {"o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
            "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_offline_vocabulary_is_byte_identical(name):
    enc = load_encoding(name)
    ranks = enc._mergeable_ranks
    text = b"".join(base64.b64encode(tok) + b" " + str(rank).encode() + b"\n"
                    for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1]))
    assert hashlib.sha256(text).hexdigest() == EXPECTED[name]


def test_known_encodings_and_special_text():
    enc = load_encoding("cl100k_base")
    assert enc.encode_ordinary("hello world") == [15339, 1917]      # tiktoken README example
    tok = resolve_tokenizer("o200k_base", default=None, model=None)
    ids = tok.encode_batch(["<|endoftext|> is text here"])[0]
    assert 199999 not in ids                                         # never the special token


def test_model_to_encoding():
    assert encoding_for_model("gpt-4") == "cl100k_base"
    assert encoding_for_model("gpt-4o-2024-08-06") == "o200k_base"
    assert encoding_for_model("openai/gpt-4.1-mini") == "o200k_base"


def test_memo_tokenizes_each_text_once():
    tok = resolve_tokenizer("cl100k_base", default=None, model=None)
    memo = TokenMemo(tok)
    out = memo.encode(["hello world", "hello world", "bye"])
    assert bytes_to_ids(out[0]) == [15339, 1917] and out[0] == out[1]
    memo.encode(["bye", "hello world"])
    assert memo.misses == 2 and memo.hits == 3


def test_approximation_is_labelled():
    tok = resolve_tokenizer(None, default="approx:cl100k_base", model="claude-sonnet-4-5")
    assert tok.exact is False and tok.name == "approx:cl100k_base" and "approximate" in tok.note


def test_unknown_tokenizer_says_what_to_pass():
    with pytest.raises(ConfigError, match="o200k_base, cl100k_base, approx"):
        resolve_tokenizer("nope", default=None, model=None)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fast_batch_encoder_gives_tiktokens_ids(name):
    import random

    tok = resolve_tokenizer(name, default=None, model=None)
    rng = random.Random(3)
    pieces = ["hello", " world", "<|endoftext|>", "<|im_start|>", "naïve", "𝔘𝔫𝔦", "\u00a0", "  \n\n\t", "12345",
              "1234567", "a\r\nb", "日本語", "{\"k\": [1, 2.5e-3]}", "'s", " don't", "\u200b", "🙂"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(300)]
    enc = load_encoding(name)
    assert tok.encode_batch(texts) == [enc.encode_ordinary(t) for t in texts]
    assert tok.encode_batch_bytes(texts) == [np.asarray(enc.encode_ordinary(t), "<u4").tobytes() for t in texts]


CUT_PIECES = ["Rule", " one", " One", "\n", "\r\n", " \n", "\n\n", ".\n", "!\n/", "\n/", "\n ", "\n\t", "\u00a0\n",
              "\n#", "\n-", "\n'", "'s", " 's", "\n's", "\n123", "4567", " 89", "\n日本", " 日本", "\u2028", "\x1c", "\n\u00a0",
              "naïve", " naïve", "🙂", "  ", "   x", ":\n", "\n*", "\n>", "\n{", "\"k\": 1", "\n\"", "\n_x", "\n~", "x/y",
              "\n.", "?!\n\n#", " ABCdef", " McDonald", "I'm", " don't", "(", ") ", ", ", "...", " a", "\t b", "\u00a0b"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_text_tokenizes_as_its_two_sides_at_any_place_it_may_be_cut(name):
    """The property ``text_chunks`` rests on: at every place it may cut a text (after a newline
    before printable ASCII other than the space and "/", or before a space between printable
    ASCII and an ASCII letter), tiktoken's ids of the whole text are the ids of its two sides,
    concatenated."""
    import random

    from promptcache.tokenize import _CUT

    enc = load_encoding(name)
    rng = random.Random(7)
    cuts = 0
    for _ in range(600):
        text = "".join(rng.choice(CUT_PIECES) for _ in range(rng.randint(1, 30)))
        whole = enc.encode_ordinary(text)
        for m in _CUT.finditer(text):
            p = m.end()
            assert enc.encode_ordinary(text[:p]) + enc.encode_ordinary(text[p:]) == whole, (text, p)
            cuts += 1
    assert cuts > 3000
    # a cut it must not make: o200k_base joins the newlines after punctuation to a following "/"
    if name == "o200k_base":
        assert enc.encode_ordinary("a.\n/b") != enc.encode_ordinary("a.\n") + enc.encode_ordinary("/b")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_memo_tokenizes_a_long_text_whose_start_changed_only_at_its_start(name):
    from promptcache.tokenize import text_chunks

    tok = resolve_tokenizer(name, default=None, model=None)
    memo = TokenMemo(tok)
    body = "".join(f"Rule {i}: every reply must cite rule {i} when it applies, in full. " for i in range(400))
    first = f"Current time: 2026-11-30T10:00:00Z. Hello Ann. {body}"
    second = f"Current time: 2026-11-30T10:00:07Z. Hello Bartholomew. {body}"  # another length
    enc = load_encoding(name)
    assert len(text_chunks(first)) > 5
    got = memo.encode([first])[0]
    assert bytes_to_ids(got) == enc.encode_ordinary(first)
    before = memo.tokenized_chars
    got = memo.encode([second])[0]
    assert bytes_to_ids(got) == enc.encode_ordinary(second)
    assert memo.tokenized_chars - before <= 2 * 4096  # only the first chunk (or two)
    assert memo.misses == 2  # each whole text is a miss once, then a hit
    memo.encode([second])
    assert memo.hits == 1


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_characters_newer_than_tiktokens_tables_and_lone_surrogates_tokenize_as_tiktoken(name):
    """quicktok's Unicode tables are newer than tiktoken's (U+11DB7 is a letter to it, not to
    tiktoken): texts with characters Python's database holds unassigned go to tiktoken itself.
    A lone surrogate becomes one U+FFFD, as in tiktoken."""
    tok = resolve_tokenizer(name, default=None, model=None)
    enc = load_encoding(name)
    texts = ["\U00011db7'x", "naïve \U00011db7 text", "a\u088fb", "\U00016ea0 \u1acf word", "plain ascii", "café"]
    assert tok.encode_batch(texts) == [enc.encode_ordinary(t) for t in texts]
    assert [bytes_to_ids(b) for b in TokenMemo(tok).encode(texts)] == [enc.encode_ordinary(t) for t in texts]
    assert bytes_to_ids(TokenMemo(tok).encode(["x\ud800y"])[0]) == enc.encode_ordinary("x\ud800y")


def test_one_thread_per_batch_while_two_processes_audit(monkeypatch):
    """The two-process audit tokenizes each batch on one thread (each process has a core), and
    puts the setting back afterwards; ids are the same either way."""
    from promptcache.tokenize import one_thread_per_batch, tiktoken_backend

    tok = TiktokenTokenizer("o200k_base")
    texts = ["Threads do not change ids. " * 40, "déjà vu 🙂 " * 30]
    assert tiktoken_backend.THREADS is None
    with one_thread_per_batch():
        assert tiktoken_backend.THREADS == 1
        one = tok.encode_batch_bytes(texts)
    assert tiktoken_backend.THREADS is None
    assert one == tok.encode_batch_bytes(texts)
