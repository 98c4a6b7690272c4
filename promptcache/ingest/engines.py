"""Inference servers' own request logs: vLLM (``--enable-log-requests`` text lines), SGLang
(``--log-requests --log-requests-format json``), Ollama (``OLLAMA_DEBUG=1`` server log lines, and
the ``/api/chat`` / ``/api/generate`` bodies ``OLLAMA_DEBUG_LOG_REQUESTS`` writes).

Sources (checked 2026-12-01):

- vLLM ``vllm/entrypoints/logger.py`` ``RequestLogger.log_inputs``: ``Received request %s:
  prompt: %r, params: %s, prompt_token_ids: %s, ...`` after the logger's ``INFO MM-DD HH:MM:SS
  [file:line]`` prefix (no year, local time). The prompt is the chat-templated text.
- SGLang ``python/sglang/srt/utils/request_logger.py``: ``{"timestamp", "event":
  "request.received" | "request.finished", "rid", "obj": GenerateReqInput fields (``text``,
  ``input_ids``, ``sampling_params`` ...), "out": {"text", "meta_info": {"prompt_tokens",
  "completion_tokens", "cached_tokens", ...}}}``: a request's two events are joined by ``rid``;
  ``prompt_tokens`` counts the whole prompt, ``cached_tokens`` the prefix-cache hits.
- Ollama (ollama/ollama#6560: the ``routes.go`` debug line ``msg="chat request" ... prompt="..."``
  in Go's slog text format; #14106: ``OLLAMA_DEBUG_LOG_REQUESTS`` bodies): ``/api/chat``
  ``{model, messages[{role, content, images?, tool_calls?}], tools, format, options, think,
  keep_alive}``.

The engine applied its chat template before logging, so a logged prompt is one text (read as
one user turn): pass the served model's tokenizer (``--tokenizer``) and the engine's rules
(``--cache-model vllm`` / ``sglang``).
"""

from __future__ import annotations

import ast
import os
import re
from datetime import datetime
from typing import Any

from ..errors import BadRecord
from ..model import Part, Request, Source, Usage
from .bodies import default_id, parse_body
from .common import MAPPING, provider_for_model
from .fields import parse_time
from .jsonio import TextLine
from .outcomes import Keyed, Skipped
from .reader import Reader
from .usage import count

_VLLM_LINE = re.compile(r"^(?:(INFO|DEBUG|WARNING|ERROR|CRITICAL) )?(\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? \[[^\]]*\] (.*)$")
_VLLM_RECEIVED = re.compile(r"^Received request (\S+?):? prompt: ")
_SLOG = re.compile(r"^time=(\S+) level=(\S+) ")
_GIN = re.compile(r"^\[GIN\] ")


def _prompt_request(text: str, path: str, src: Source, fmt: str, provider: str | None, rid: str | None,
                    arrival: float | None, model: str | None = None, usage: Usage | None = None) -> Request:
    """A request whose one part is the prompt an engine logged, as it received it (its chat
    template applied): counted as logged (``rendered``), not framed again."""
    return Request(id=rid or default_id(src), source=src, format=fmt, api="chat", provider=provider, model=model,
                   arrival=arrival, parts=(Part("user", path, text, "user", 0),), usage=usage, rendered=True)


def _repr_string(s: str, start: int) -> tuple[str, int] | None:
    """The Python ``repr`` of a string that starts at ``s[start]`` (a quote), decoded, and where
    it ends; ``None`` when there is none."""
    if start >= len(s) or s[start] not in "'\"":
        return None
    q = s[start]
    i = start + 1
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == q:
            import warnings

            try:
                with warnings.catch_warnings():  # a repr never holds an invalid escape; a damaged line may
                    warnings.simplefilter("ignore")
                    return ast.literal_eval(s[start:i + 1]), i + 1
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return None
        i += 1
    return None


class VLLMLogReader(Reader):
    """vLLM server log lines (see the module docstring): a ``Received request`` line is a
    request (its prompt text, its id); every other line of the log is skipped. The logger's
    time has no year: the year is taken from the log file's modification time (a guess, counted
    in the file's time notes) and the time, which has no zone, is read as UTC."""

    name = "vllm-log"
    producer = "vLLM (--enable-log-requests)"
    shapes = "text log lines: LEVEL MM-DD HH:MM:SS [file:line] Received request ID: prompt: '...', params: ..."
    looks_for = "a text line 'LEVEL MM-DD HH:MM:SS [file:line] ...'"
    records = "text"
    stateful = True

    def __init__(self) -> None:
        self.year: int | None = None

    def claim(self, rec: Any) -> str | None:
        if isinstance(rec, TextLine) and _VLLM_LINE.match(rec):
            return "a vLLM logger line (LEVEL MM-DD HH:MM:SS [file:line])"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Any:
        m = _VLLM_LINE.match(rec)
        if m is None:
            raise BadRecord("not a vLLM log line")
        msg = m.group(3)
        r = _VLLM_RECEIVED.match(msg)
        if r is None:
            return Skipped("vLLM log line that is no received request")
        got = _repr_string(msg, r.end())
        if got is None:
            return Skipped("vLLM received-request line without a prompt text (token ids or embeddings only)")
        text = got[0]
        if not isinstance(text, str):
            raise BadRecord("the logged prompt is not a text")
        if self.year is None:
            try:
                self.year = datetime.fromtimestamp(os.path.getmtime(src.path)).year
            except (OSError, ValueError, OverflowError):
                self.year = datetime.now().year
        from . import fields

        if fields.NOTES is not None:
            fields.NOTES.yearless += 1
        arrival = parse_time(f"{self.year}-{m.group(2).replace(' ', 'T')}")
        return _prompt_request(text, "prompt", src, self.name, "vllm", r.group(1), arrival,
                               getattr(opts, "model", None))


def _go_unquote(s: str, start: int) -> tuple[str, int] | None:
    """A Go-quoted string (``strconv.Quote``) starting at ``s[start]``, decoded, and where it ends."""
    if start >= len(s) or s[start] != '"':
        return None
    out: list[str] = []
    i = start + 1
    simple = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "'": "'"}
    raw = bytearray()

    def flush() -> None:
        if raw:
            out.append(raw.decode("utf-8", "replace"))
            raw.clear()

    while i < len(s):
        c = s[i]
        if c == '"':
            flush()
            return "".join(out), i + 1
        if c == "\\" and i + 1 < len(s):
            e = s[i + 1]
            if e in simple:
                flush()
                out.append(simple[e])
                i += 2
                continue
            if e == "x" and i + 3 < len(s):
                try:
                    raw.append(int(s[i + 2:i + 4], 16))
                except ValueError:
                    return None
                i += 4
                continue
            if e in "uU":
                n = 4 if e == "u" else 8
                try:
                    flush()
                    out.append(chr(int(s[i + 2:i + 2 + n], 16)))
                except (ValueError, OverflowError):
                    return None
                i += 2 + n
                continue
            return None
        flush()
        out.append(c)
        i += 1
    return None


class OllamaLogReader(Reader):
    """Ollama server log lines (see the module docstring): a debug ``msg="chat request"`` (or
    ``"generate request"``) line with ``prompt="..."`` is a request; access log (``[GIN]``) and
    other lines are skipped."""

    name = "ollama-log"
    producer = "Ollama server (OLLAMA_DEBUG=1)"
    shapes = 'text log lines: time=... level=DEBUG source=routes.go msg="chat request" prompt="..."; [GIN] lines'
    looks_for = "a text line 'time=... level=...' or '[GIN] ...'"
    records = "text"

    def claim(self, rec: Any) -> str | None:
        if isinstance(rec, TextLine) and (_SLOG.match(rec) or _GIN.match(rec)):
            return "an Ollama server log line (time=... level=... or [GIN])"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Any:
        if _GIN.match(rec):
            return Skipped("Ollama access log line ([GIN])")
        m = _SLOG.match(rec)
        if m is None:
            raise BadRecord("not an Ollama log line")
        if 'msg="chat request"' not in rec and 'msg="generate request"' not in rec:
            return Skipped("Ollama log line that is no request")
        k = rec.find(' prompt="')
        got = _go_unquote(rec, k + len(" prompt=")) if k >= 0 else None
        if got is None:
            return Skipped("Ollama request line without a prompt")
        return _prompt_request(got[0], "prompt", src, self.name, None, None, parse_time(m.group(1)),
                               getattr(opts, "model", None))


class SGLangReader(Reader):
    """SGLang request logs (see the module docstring): ``request.received`` (the prompt) and
    ``request.finished`` (the prompt again and the usage) of one ``rid`` are one request."""

    name = "sglang-log"
    producer = "SGLang (--log-requests-format json)"
    shapes = '{"timestamp", "event": "request.received" | "request.finished", "rid", "obj", "out"}'
    looks_for = "event request.* with rid"
    owns = ("rid",)

    def claim(self, rec: Any) -> str | None:
        if (type(rec) is dict or isinstance(rec, MAPPING)) and self.alone(rec) and "rid" in rec and str(rec.get("event", "")).startswith("request."):
            return f"an SGLang '{str(rec['event'])[:30]}' event"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Any:
        ev = rec.get("event")
        if ev not in ("request.received", "request.finished"):
            return Skipped(f"SGLang '{str(ev)[:30]}' event")
        obj = rec.get("obj") if isinstance(rec.get("obj"), MAPPING) else {}
        rid = rec.get("rid")
        text = obj.get("text")
        usage = None
        if ev == "request.finished":
            out = rec.get("out") if isinstance(rec.get("out"), MAPPING) else {}
            mi = out.get("meta_info") if isinstance(out.get("meta_info"), MAPPING) else {}
            p, c, o = count(mi.get("prompt_tokens"), "prompt_tokens"), count(mi.get("cached_tokens"), "cached_tokens"), \
                count(mi.get("completion_tokens"), "completion_tokens")
            if p is not None:
                usage = Usage(p, o or 0, c or 0, 0)
        if isinstance(text, list) or isinstance(rid, list):
            raise BadRecord("a batched request (text or rid is a list): not read")
        t = rec.get("timestamp")
        arrival = parse_time(t) if t not in (None, "") and ev == "request.received" else None
        model = getattr(opts, "model", None)
        if isinstance(text, str):
            req = _prompt_request(text, "obj.text", src, self.name, "sglang", str(rid) if rid is not None else None,
                                  arrival, model, usage)
        else:  # token ids only: nothing to tokenize
            req = Request(id=str(rid) if rid is not None else default_id(src), source=src, format=self.name, api="chat",
                          provider="sglang", model=model, arrival=arrival, usage=usage)
        return Keyed(req, keys=(f"sglang:{rid}",) if rid is not None else ())


class OllamaBodyReader(Reader):
    """Ollama ``/api/chat`` and ``/api/generate`` request bodies (see the module docstring):
    messages (with ``images``), ``tools``, ``system``/``prompt``; ``format`` and ``think`` kept
    as parameters."""

    name = "ollama"
    producer = "Ollama API (OLLAMA_DEBUG_LOG_REQUESTS bodies)"
    shapes = "/api/chat {model, messages, options, keep_alive} and /api/generate {model, prompt} bodies"
    looks_for = "model with messages or prompt, and keep_alive or options"
    owns = ("keep_alive", "options")

    def claim(self, rec: Any) -> str | None:
        if (type(rec) is dict or isinstance(rec, MAPPING)) and self.alone(rec) and ("keep_alive" in rec or isinstance(rec.get("options"), MAPPING)) \
                and ("messages" in rec or "prompt" in rec):
            return "an Ollama API body (keep_alive/options)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Request:
        model = rec.get("model") if isinstance(rec.get("model"), str) else getattr(opts, "model", None)
        params = {k: rec[k] for k in ("format", "think", "tools") if rec.get(k) is not None and k != "tools"}
        if "messages" in rec:
            msgs = rec.get("messages")
            if not isinstance(msgs, list):
                raise BadRecord("'messages' is not a list")
            conv = []
            for m in msgs:
                if isinstance(m, MAPPING) and isinstance(m.get("images"), list) and m["images"]:
                    blocks = ([{"type": "text", "text": m["content"]}] if isinstance(m.get("content"), str) and m["content"] else [])
                    blocks += [{"type": "image", "source": img} for img in m["images"]]
                    m = {**{k: v for k, v in m.items() if k != "images"}, "content": blocks}
                conv.append(m)
            b = parse_body({"messages": conv, "tools": rec.get("tools")}, "openai-chat")
            parts = b.parts
        else:
            p = rec.get("prompt")
            if not isinstance(p, str):
                raise BadRecord("'prompt' is not a text")
            parts = ((Part("system", "system", rec["system"], "system"),) if isinstance(rec.get("system"), str) else ()) \
                + (Part("user", "prompt", p, "user", 0),)
        return Request(id=default_id(src), source=src, format=self.name, api="chat", provider=provider_for_model(model),
                       model=model, arrival=None, parts=tuple(parts), params=params)
