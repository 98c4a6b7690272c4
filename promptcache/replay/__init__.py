"""Replay: prove the simulated savings on a model whose prefix cache is on.

``verify(paths, ReplayOptions(...))`` replays a log's requests (and a proposed rewrite of it)
in arrival order on an engine with prefix caching and compares, per request, the cached tokens
it measured with the simulator's, the prefill time with and without the cache against the
speedup the cached fraction implies, and the greedy tokens with and without the cache.

Engines: ``hf`` (in process, transformers on torch, with its own block-hashed prefix cache),
``vllm`` (offline ``LLM``), ``openai`` (any OpenAI-compatible server). Nothing here imports
torch or transformers until an engine is built, so ``import promptcache.replay`` stays cheap.

Public API: :func:`verify`, :class:`ReplayOptions`, :class:`ReplayResult`,
:func:`render_replay` (terminal), :func:`replay_record` (``promptcache.replay/v1`` JSON),
:func:`make_engine`, :func:`parse_size`.
"""

from __future__ import annotations

from .engine import ENGINES, Engine, EngineRequest, EngineResult
from .report import SCHEMA, render_replay, replay_record
from .verify import (DEFAULT_KV_BUDGET, ReplayOptions, ReplayRecord, ReplayResult, Summary, make_engine, parse_size,
                     verify)

__all__ = ["ENGINES", "Engine", "EngineRequest", "EngineResult", "SCHEMA", "render_replay", "replay_record",
           "DEFAULT_KV_BUDGET", "ReplayOptions", "ReplayRecord", "ReplayResult", "Summary", "make_engine",
           "parse_size", "verify"]
