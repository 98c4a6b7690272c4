"""Hugging Face tokenizers from a local directory, a ``tokenizer.json``, or a GGUF file.

GGUF files carry the vocabulary, merges and chat template but not the Hugging Face
pre-tokenizer; it is rebuilt from ``tokenizer.ggml.pre``. For SmolLM2 (``smollm``) the
pre-tokenizer is ``Sequence([Digits(individual_digits=True), ByteLevel(add_prefix_space=False)])``,
which matched llama.cpp on all 4,580 documents tried (``../shared/docs/environment.md``,
measured 2026-11-29); the tokenizer transformers derives from the same GGUF lacks the digit
split and differs on about 1 document in 5.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from tokenizers import Regex, Tokenizer as HFTok, decoders, models, pre_tokenizers

from ..errors import ConfigError
from .base import without_lone_surrogates

# llama.cpp's pre-tokenizer regexes (llama-vocab.cpp), by ``tokenizer.ggml.pre``.
_LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def _pre_tokenizer(pre: str) -> tuple[Any, bool]:
    """(pre-tokenizer, exact) for a GGUF ``tokenizer.ggml.pre`` value."""
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    if pre == "smollm":
        return pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                        pre_tokenizers.ByteLevel(add_prefix_space=False)]), True
    if pre in ("llama-bpe", "llama3"):
        return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(_LLAMA3_SPLIT), behavior="isolated"), byte_level]), True
    if pre == "qwen2":
        return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(_QWEN2_SPLIT), behavior="isolated"), byte_level]), True
    if pre in ("gpt2", "default", ""):
        return pre_tokenizers.ByteLevel(add_prefix_space=False), pre == "gpt2"
    return pre_tokenizers.ByteLevel(add_prefix_space=False), False


class HFTokenizer:
    """A Hugging Face ``tokenizers`` tokenizer plus its chat template.

    Attributes:
        tok: the ``tokenizers.Tokenizer``.
        chat_template: Jinja chat template text, or ``None``.
        bos_token, eos_token: special token texts the template may use.
    """

    def __init__(self, tok: HFTok, name: str, *, chat_template: str | None = None,
                 bos_token: str | None = None, eos_token: str | None = None, exact: bool = True, note: str = ""):
        self.tok = tok
        self.name = name
        self.exact = exact
        self.note = note
        self.chat_template = chat_template
        self.bos_token = bos_token
        self.eos_token = eos_token
        self._special = {t.content: i for i, t in tok.get_added_tokens_decoder().items() if t.special}

    @property
    def special_tokens(self) -> dict[str, int]:
        """Special token text → id."""
        return dict(self._special)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text; special-token text is split out as its id (as the model sees
        rendered chat templates)."""
        try:
            return [e.ids for e in self.tok.encode_batch(list(texts), add_special_tokens=False)]
        except (TypeError, UnicodeEncodeError, ValueError):
            # a lone surrogate (no UTF-8 holds one): each becomes one U+FFFD, as tiktoken does
            texts = [without_lone_surrogates(t) for t in texts]
            return [e.ids for e in self.tok.encode_batch(texts, add_special_tokens=False)]

    def decode(self, ids: Sequence[int]) -> str:
        """Text of the ids, special tokens included."""
        return self.tok.decode(list(ids), skip_special_tokens=False)

    def special_id(self, token: str) -> int | None:
        """Id of a special token, or ``None``."""
        return self._special.get(token)


def load_hf_dir(path: Path) -> HFTokenizer:
    """Load ``tokenizer.json`` (and the chat template from ``tokenizer_config.json`` or
    ``chat_template.jinja``) from a model directory or a tokenizer.json path.

    Raises:
        ConfigError: when the files are missing or unreadable.
    """
    tj = path if path.is_file() else path / "tokenizer.json"
    d = tj.parent
    if not tj.exists():
        raise ConfigError(f"{path}: no tokenizer.json (give a model directory, a tokenizer.json or a .gguf file)")
    try:
        tok = HFTok.from_file(str(tj))
    except Exception as e:  # tokenizers raises plain Exception subclasses
        raise ConfigError(f"{tj}: cannot load tokenizer: {e}") from None
    cfg: dict[str, Any] = {}
    if (d / "tokenizer_config.json").exists():
        try:
            cfg = json.loads((d / "tokenizer_config.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise ConfigError(f"{d / 'tokenizer_config.json'}: {e}") from None
    tmpl = cfg.get("chat_template")
    if isinstance(tmpl, list):  # named templates: take "default"
        tmpl = next((t.get("template") for t in tmpl if t.get("name") == "default"), None)
    if (d / "chat_template.jinja").exists():
        tmpl = (d / "chat_template.jinja").read_text(encoding="utf-8")

    def tok_text(v: Any) -> str | None:
        return v.get("content") if isinstance(v, dict) else v

    return HFTokenizer(tok, f"hf:{d.name}", chat_template=tmpl,
                       bos_token=tok_text(cfg.get("bos_token")), eos_token=tok_text(cfg.get("eos_token")))


def load_gguf(path: Path) -> HFTokenizer:
    """Build the tokenizer of a GGUF file from its vocabulary, merges and ``tokenizer.ggml.pre``.

    Raises:
        ConfigError: when ``gguf`` is not installed, the file is unreadable, or its tokenizer is
            not byte-level BPE.
    """
    try:
        from gguf import GGUFReader
    except ImportError:
        raise ConfigError("reading a GGUF tokenizer needs the 'gguf' package: pip install 'promptcache[gguf]'") from None
    try:
        reader = GGUFReader(str(path))
    except Exception as e:
        raise ConfigError(f"{path}: not a readable GGUF file: {e}") from None

    def field(name: str) -> Any:
        f = reader.fields.get(name)
        if f is None:
            return None
        return f.contents()

    kind = field("tokenizer.ggml.model")
    if kind != "gpt2":
        raise ConfigError(f"{path}: tokenizer model {kind!r} is not byte-level BPE; give the model's tokenizer.json instead")
    tokens: list[str] = field("tokenizer.ggml.tokens")
    merges: list[str] = field("tokenizer.ggml.merges") or []
    types: list[int] = field("tokenizer.ggml.token_type") or [1] * len(tokens)
    vocab = {t: i for i, t in enumerate(tokens)}
    bpe = models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges], fuse_unk=False, byte_fallback=False)
    tok = HFTok(bpe)
    pre = field("tokenizer.ggml.pre") or ""
    tok.pre_tokenizer, exact = _pre_tokenizer(pre)
    tok.decoder = decoders.ByteLevel()
    from tokenizers import AddedToken

    specials = [AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types) if ty in (3, 4)]
    tok.add_special_tokens(specials)

    def token(idx_field: str) -> str | None:
        i = field(idx_field)
        return tokens[int(i)] if i is not None and 0 <= int(i) < len(tokens) else None

    name = field("general.name") or path.stem
    return HFTokenizer(tok, f"hf:{name}", chat_template=field("tokenizer.chat_template"),
                       bos_token=token("tokenizer.ggml.bos_token_id"), eos_token=token("tokenizer.ggml.eos_token_id"),
                       exact=exact, note="" if exact else f"pre-tokenizer {pre!r} approximated as GPT-2 byte-level")
