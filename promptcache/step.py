"""The per-request record the pipeline produces and every downstream stage reads.

:class:`Step` lives apart from :mod:`promptcache.pipeline` so that the stages downstream of the
simulation (diagnosis, template inference, replay) can read it without importing the pipeline
that produces it: data flows one way, ingest → render → tokenize → simulate → :class:`Step` →
diagnose → price → report.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Request
from .prepare import Context
from .simulate import Outcome, Prompt, RequestRef
from .simulate.rules import CacheRules


@dataclass(slots=True)
class Step:
    """One request after simulation: what downstream stages (diagnosis, replay, reports) see.

    Attributes:
        request: the parsed request.
        prompt: its tokens and segments.
        context: tokenizer and chat format (``None`` for hashed traces).
        rules: the cache rules applied.
        outcome: simulated and ideal results (``ideal_write_tokens`` is final only after the
            stream ends).
        other: the earlier request this one diverged from, or ``None``.
    """

    request: Request
    prompt: Prompt
    context: Context | None
    rules: CacheRules
    outcome: Outcome
    other: RequestRef | None
