"""Which provider file's rules a request gets, from its model name, the provider the log names,
and (behind a router) the upstream that served it.

Each ``rules/providers/*.yaml`` file declares what it answers for under ``route``:

- ``prefixes``: a model name's first path component (LiteLLM-style ``bedrock/...``,
  ``vertex_ai/...``, ``azure/...``, ``xai/...``, ``openrouter/...``);
- ``aliases``: provider names gateways and telemetry log (LiteLLM ``custom_llm_provider``,
  OpenTelemetry ``gen_ai.provider.name``);
- ``models``: model-name patterns (``fnmatch``, lower case) of the provider's own model ids
  (``us.anthropic.claude-*`` on Bedrock, ``grok-*``, ``qwen*``); a pattern with a ``/`` is matched
  against the whole name first (``vertex_ai/claude*`` before the ``vertex_ai`` prefix);
- ``family``: where several files share a prefix or alias (Vertex AI serves Claude and Gemini),
  the model patterns this file takes of them; the file without ``family`` takes the rest.

A router file (``kind: router``, OpenRouter) resolves to its upstream's file: the provider the
response names (``Request.response.upstream``, through ``upstream_providers``), else the model
name's organisation (``openrouter/anthropic/...`` → ``upstreams``). Its sticky routing keeps a
model's traffic on one upstream, so one upstream's cache serves it: the namespace carries the
upstream.

Resolution order: a router the log names (OpenRouter's own records); a model prefix; a model
pattern of a file that declares one; the log's provider (a file id or an alias: ingest keeps the
name as logged, so ``azure`` with ``gpt-4o`` is Azure OpenAI and ``vertex_ai`` with
``gemini-2.5-pro`` is Vertex AI); the first-party patterns of
``ingest.common.provider_for_model``. A first-party provider named for another first party's
model (``openai`` with ``claude-sonnet-4-5``: an OpenAI-compatible endpoint in front of Claude)
yields to the model's own provider.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

from .rules import ProviderFile


#: The providers ``ingest.common.provider_for_model`` names from a model name's own family: a log
#: naming one of them for another's model names an OpenAI-compatible endpoint, not a host.
FIRST_PARTY = ("openai", "anthropic", "gemini", "deepseek")


@dataclass(frozen=True)
class Route:
    """The rules a request gets.

    Attributes:
        file: the provider file whose rules apply.
        via: the router it came through (``openrouter``), or ``None``.
        upstream: the upstream as logged (``Amazon Bedrock``), or ``None``.
    """

    file: ProviderFile
    via: str | None = None
    upstream: str | None = None

    @property
    def label(self) -> str:
        """``openrouter>anthropic`` for routed traffic, else the file id."""
        return f"{self.via}>{self.file.id}" if self.via else self.file.id


class Router:
    """Resolves :class:`Route` s over a set of provider files (memoized per distinct input).

    Args:
        providers: provider files by id (:func:`~promptcache.simulate.rules.load_providers`).
    """

    def __init__(self, providers: Mapping[str, ProviderFile]):
        self.providers = providers
        self.prefixes: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        self.aliases: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        self.patterns: list[tuple[str, str]] = []
        for pid, pf in providers.items():
            fam = pf.route.get("family", ())
            for p in pf.route.get("prefixes", ()):
                self.prefixes.setdefault(p, []).append((pid, fam))
            for a in pf.route.get("aliases", ()):
                self.aliases.setdefault(a, []).append((pid, fam))
            for m in pf.route.get("models", ()):
                self.patterns.append((m, pid))
        for table in (self.prefixes, self.aliases):  # files with a family first
            for v in table.values():
                v.sort(key=lambda e: not e[1])
        self._memo: dict[tuple[str | None, str | None, str | None], Route | None] = {}
        self._by_model_memo: dict[str, str | None] = {}

    @staticmethod
    def _pick(cands: list[tuple[str, tuple[str, ...]]] | None, model: str | None) -> str | None:
        if not cands:
            return None
        name = (model or "").lower().split("/")[-1]
        for pid, fam in cands:
            if not fam or any(fnmatch.fnmatchcase(name, f) for f in fam):
                return pid
        return None

    def file_id(self, name: str | None, model: str | None = None) -> str | None:
        """A provider name as logged (file id or alias, any case) → file id, else ``None``
        (``model`` picks among files sharing an alias)."""
        if not name:
            return None
        n = str(name).strip().lower()
        return n if n in self.providers else self._pick(self.aliases.get(n), model)

    def by_model(self, model: str) -> str | None:
        """The file a model name routes to by prefix or pattern, else ``None`` (memoized)."""
        memo = self._by_model_memo
        if model in memo:
            return memo[model]
        got = memo[model] = self._by_model(model)
        return got

    def _by_model(self, model: str) -> str | None:
        m = model.lower()
        for pat, pid in self.patterns:
            if "/" in pat and fnmatch.fnmatchcase(m, pat):
                return pid
        head, sep, _ = m.partition("/")
        if sep and head in self.prefixes:
            return self._pick(self.prefixes[head], m)
        name = m.split("/")[-1]
        for pat, pid in self.patterns:
            if fnmatch.fnmatchcase(m, pat) or fnmatch.fnmatchcase(name, pat):
                return pid
        return None

    def resolve(self, provider: str | None, model: str | None, upstream: str | None = None) -> Route | None:
        """The route of a request, or ``None`` when nothing names a provider.

        Args:
            provider: the provider the log names (``Request.provider``).
            model: the model name as logged.
            upstream: who served it behind a router (``Request.response.upstream``).
        """
        key = (provider, model, upstream)
        if key in self._memo:
            return self._memo[key]
        got = self._resolve(provider, model, upstream)
        self._memo[key] = got
        return got

    def _resolve(self, provider: str | None, model: str | None, upstream: str | None) -> Route | None:
        named = self.file_id(provider, model)
        pid = named if named is not None and self.providers[named].is_router else None  # a router the log names
        if pid is None and model:
            pid = self.by_model(model)
        if pid is None:
            pid = self.file_id(provider, model)
            if pid is not None and model and pid in FIRST_PARTY:
                from ..ingest.common import provider_for_model

                own = provider_for_model(model)
                if own is not None and own != pid and own in self.providers:
                    pid = own
        if pid is None and model:
            from ..ingest.common import provider_for_model

            pid = provider_for_model(model)
        if pid is None or pid not in self.providers:
            return None
        pf = self.providers[pid]
        if not pf.is_router:
            return Route(pf)
        # behind a router: the upstream that served it, else the model's organisation
        target = None
        if upstream and self.file_id(upstream, model) == pid:
            upstream = None  # the "upstream" names the router itself (LiteLLM's custom_llm_provider): who served it is not logged
        if upstream:
            target = pf.upstream_providers.get(upstream.strip().lower()) or self.file_id(upstream, model)
            if target in self.providers and model:  # one upstream serving several families (Vertex)
                fam_target = self.file_id(upstream, model)
                if fam_target and fam_target != target and self.providers[target].route.get("family") is None:
                    target = fam_target
        if target is None and model:
            parts = model.lower().split("/")
            if parts and any(self.providers[pid].is_router for pid, _ in self.prefixes.get(parts[0], ())):
                parts = parts[1:]
            if len(parts) > 1:
                target = pf.upstreams.get(parts[0])
            if target is None:
                inner = self._resolve(None, "/".join(parts[-1:]), None)
                target = inner.file.id if inner else None
        if target is None or target not in self.providers or self.providers[target].is_router:
            return None
        return Route(self.providers[target], via=pf.id, upstream=upstream)


@lru_cache(maxsize=None)
def _router(directory: str | None = None) -> Router:
    from .rules import load_providers

    return Router(load_providers(directory))


def router(directory: str | None = None) -> Router:
    """The :class:`Router` over the shipped provider files (built once)."""
    return _router(directory)
