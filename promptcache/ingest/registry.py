"""Every reader, one line each: detection asks them per record (:func:`claimants`).

A new producer is one module with a :class:`~promptcache.ingest.reader.Reader`, its fixtures,
and one line here. Readers claim disjoint records (``tests/test_ingest_registry.py`` fails when
two claim one); the order below is only the order ``promptcache formats`` lists them in.
"""

from __future__ import annotations

from typing import Any

from . import reader as _reader
from .bedrock import BedrockReader
from .bodies import AnthropicReader, GeminiReader, OpenAIChatReader, ResponsesReader
from .braintrust import BraintrustReader
from .batches import AnthropicBatchReader, AnthropicResultsReader, OpenAIBatchOutputReader, ResponseObjectReader
from .cloud_logs import AzureDiagnosticsReader, CloudflareReader, OpenRouterReader
from .conversations import ConversationReader
from .engines import OllamaBodyReader, OllamaLogReader, SGLangReader, VLLMLogReader
from .hashed import BailianReader, LengthsReader, MooncakeReader
from .helicone import HeliconeReader
from .langfuse import LangfuseReader
from .litellm import LiteLLMReader
from .logfire import LogfireReader
from .mlflow import MLflowReader
from .otel import OTelReader
from .portkey import PortkeyReader
from .prompt import PromptReader
from .reader import Reader
from .sharegpt import ShareGPTReader
from .vertex import VertexReader

#: Every reader, in the order ``promptcache formats`` lists them.
READERS: tuple[Reader, ...] = (
    MooncakeReader(),
    BailianReader(),
    LengthsReader(),
    OTelReader(),
    LangfuseReader(),
    LiteLLMReader(),
    HeliconeReader(),
    BraintrustReader(),
    MLflowReader(),
    LogfireReader(),
    PortkeyReader(),
    BedrockReader(),
    VertexReader(),
    OpenRouterReader(),
    CloudflareReader(),
    AzureDiagnosticsReader(),
    SGLangReader(),
    VLLMLogReader(),
    OllamaLogReader(),
    OllamaBodyReader(),
    OpenAIBatchOutputReader(),
    AnthropicBatchReader(),
    AnthropicResultsReader(),
    ResponseObjectReader(),
    ShareGPTReader(),
    ConversationReader(),
    ResponsesReader(),
    AnthropicReader(),
    OpenAIChatReader(),
    GeminiReader(),
    PromptReader(),
)

_BY_NAME = {r.name: r for r in READERS}
assert len(_BY_NAME) == len(READERS), "two readers share a name"
_reader.FOREIGN.update(k for r in READERS for k in r.owns)
for _r in READERS:
    type(_r).others = frozenset(_reader.FOREIGN - set(_r.owns))


def by_name(name: str) -> Reader:
    """The reader of an ``--input-format`` name.

    Raises:
        KeyError: for an unknown name.
    """
    return _BY_NAME[name]


def claimants(rec: Any) -> list[tuple[Reader, str]]:
    """Every reader that claims ``rec``, with its evidence (more than one is a bug the tests
    catch; at run time the first is used and the record is counted as ambiguous)."""
    out = []
    for r in READERS:
        try:
            why = r.claim(rec)
        except Exception:  # noqa: BLE001 - a claim never raises; a reader that does is no claimant
            why = None
        if why is not None:
            out.append((r, why))
    return out


def explain(rec: Any) -> list[tuple[Reader, bool, str]]:
    """For each reader: whether it claims ``rec`` and why (or why not), for ``promptcache
    formats FILE``."""
    out = []
    for r in READERS:
        try:
            why = r.claim(rec)
        except Exception as e:  # noqa: BLE001
            why = None
            out.append((r, False, f"its check failed ({type(e).__name__})"))
            continue
        out.append((r, True, why) if why is not None else (r, False, r.why_not(rec)))
    return out
