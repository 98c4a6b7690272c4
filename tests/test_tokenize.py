"""Tokenizers offline: byte-identical vocabularies, memo, HF loading."""

from __future__ import annotations

import base64
import hashlib
import json

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


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_backend_tokenizes_a_lone_surrogate_as_one_replacement_character(name):
    """A lone surrogate (a ``"\\udc00"`` escape decoded from JSON, TypeScript or Python source:
    lint tokenizes such strings without the memo) is one U+FFFD, as tiktoken's
    ``encode_ordinary`` counts it; quicktok refused the text (TypeError, and lint exited 3)."""
    tok = resolve_tokenizer(name, default=None, model=None)
    enc = load_encoding(name)
    texts = ["rules \udc00 end", "\ud800", "pair \ud83d\ude00 ok", "plain"]
    assert tok.encode_batch(texts) == [enc.encode_ordinary(t) for t in texts]
    assert tok.encode_batch(["rules \udc00 end"]) == tok.encode_batch(["rules \ufffd end"])
    assert [bytes_to_ids(b) for b in tok.encode_batch_bytes(texts)] == [enc.encode_ordinary(t) for t in texts]


def test_a_huggingface_backend_tokenizes_a_lone_surrogate_as_one_replacement_character():
    from tokenizers import Tokenizer as HFTok, models, pre_tokenizers

    from promptcache.tokenize.hf_backend import HFTokenizer

    raw = HFTok(models.WordLevel({"rules": 0, "\ufffd": 1, "end": 2, "[UNK]": 3}, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = HFTokenizer(raw, "hf:test")
    assert tok.encode_batch(["rules \udc00 end"]) == [[0, 1, 2]]


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


def _chunks_by_rescanning(text: str, size: int = 4096) -> list[str]:
    """The cut places as first written: every window searched to the last cut made (quadratic
    in the length of a text with few places to cut), kept as the reference."""
    from promptcache.tokenize import _CUT

    cuts: list[int] = []
    end = len(text)
    target = end - size
    while target > 0:
        m = _CUT.search(text, target, end)
        if m is not None:
            p = m.end()
            if 0 < p < end:
                cuts.append(p)
                end = p
        target -= size
    cuts.reverse()
    return [text[i:j] for i, j in zip([0] + cuts, cuts + [len(text)])]


def test_text_chunks_cuts_where_rescanning_to_the_last_cut_does():
    """Each window is searched only up to the next window (plus the two characters a cut looks
    ahead at): the cuts are the same as searching on to the last cut, on texts whose places to
    cut are dense, sparse, clustered at window edges or absent, for small and large windows."""
    import random

    from promptcache.tokenize import text_chunks

    rng = random.Random(11)
    plain = ["x", "Q7", "+/=", "日本", "{\"k\":1}", ",", "\t", "  ", "\n ", "\n/", " 1", "é"]
    checked = 0
    for _ in range(800):
        size = rng.choice([3, 8, 16, 64, 4096])
        density = rng.choice([0.0, 0.01, 0.05, 0.3, 0.9])
        n = rng.randint(0, 60 if size < 64 else 400)
        pieces = [rng.choice(CUT_PIECES) if rng.random() < density else rng.choice(plain) for _ in range(n)]
        text = "".join(pieces)
        if size == 4096:
            text = text * rng.randint(1, 40)
        got = text_chunks(text, size)
        assert "".join(got) == text
        assert got == _chunks_by_rescanning(text, size), (text, size)
        checked += len(got) > 1
    assert checked > 300


def test_text_chunks_reads_each_character_a_bounded_number_of_times(monkeypatch):
    """Linear in the text's length: with no place to cut (a 4 MB base64 attachment, a text
    without spaces, minified JSON), each window's search reads that window and no further. The
    search was from each window to the end of the text: about n^2 / (2 * 4096) characters."""
    import random

    import promptcache.tokenize as tk

    real = tk._CUT
    read = [0]

    class Counting:
        def search(self, text, pos, endpos):
            read[0] += max(0, min(endpos, len(text)) - pos)
            return real.search(text, pos, endpos)

    monkeypatch.setattr(tk, "_CUT", Counting())
    rng = random.Random(5)
    b64 = base64.b64encode(rng.randbytes(300_000)).decode()  # 400,000 characters
    nospace = "".join(rng.choices("abcdefghij", k=400_000))
    minified = json.dumps([{"id": i, "name": f"item{i}", "tags": ["a", "b"]} for i in range(9000)], separators=(",", ":"))
    for text in (b64, nospace, minified, "word " * 80_000):
        read[0] = 0
        chunks = tk.text_chunks(text)
        assert "".join(chunks) == text
        n, windows = len(text), len(text) // 4096 + 1
        assert read[0] <= n + 2 * windows, (n, read[0])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_memo_ids_of_long_texts_without_places_to_cut_are_tiktokens(name):
    """A 256 KB base64 string, a text without spaces and minified JSON, through the memo (the
    audit's path): tiktoken's ids of the whole text."""
    import random

    tok = resolve_tokenizer(name, default=None, model=None)
    enc = load_encoding(name)
    rng = random.Random(9)
    texts = [base64.b64encode(rng.randbytes(192_000)).decode(),
             "".join(rng.choices("abcdefghij", k=100_000)),
             json.dumps([{"id": i, "v": [i, i / 3]} for i in range(5000)], separators=(",", ":")),
             "Para one.\nPara two has words.\n" * 4000]
    got = TokenMemo(tok).encode(texts)
    assert [bytes_to_ids(b) for b in got] == [enc.encode_ordinary(t) for t in texts]
