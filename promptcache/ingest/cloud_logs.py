"""Gateway and cloud logs that hold usage but no prompt, or nothing to audit: OpenRouter
generation stats, Cloudflare AI Gateway logs, Azure OpenAI diagnostic logs. They are read so
that the report says what they hold (usage-only records, skipped with a reason), never taken
for requests and never a silent "unknown format".

- OpenRouter ``GET /api/v1/generation?id=`` → ``{"data": {id, model, provider_name, created_at,
  tokens_prompt, tokens_completion, native_tokens_prompt, native_tokens_completion,
  native_tokens_cached, ...}}`` (openrouter.ai/docs, the client SDK's
  ``GenerationResponseData``; checked 2026-12-01): no prompt.
- Cloudflare AI Gateway logs API ``{"result": [log, ...], "result_info", "success"}`` (the API's
  ``AIGatewayLog``: ``id``, ``created_at``, ``model``, ``provider``, ``tokens_in``, ``tokens_out``,
  ``cached``, ``metadata``); Logpush ``ai_gateway_events`` (``RequestBody`` encrypted with the
  Logpush public key; developers.cloudflare.com/logs/reference/log-fields/account/ai_gateway_events).
- Azure OpenAI resource logs (Azure Monitor schema ``{time, resourceId, category,
  operationName, properties}``; category ``RequestResponse``): no prompt and no token counts
  (learn.microsoft.com, Azure OpenAI monitoring).
"""

from __future__ import annotations

from typing import Any

from ..model import Request, Response, Source, Usage
from .bodies import default_id
from .common import MAPPING, loads_if_json, logged_provider
from .fields import parse_time
from .outcomes import Keyed, Skipped
from .reader import Reader
from .usage import count, including_cache


class OpenRouterReader(Reader):
    """OpenRouter generation stats: per generation, ``native_tokens_*`` as the upstream counted
    them (else OpenRouter's normalised ``tokens_*``) and ``upstream``: ``provider_name``. Joined
    to the logged request whose response id is the generation's (a gateway record of the same
    call, in another file); a usage-only record where none is."""

    name = "openrouter-generation"
    producer = "OpenRouter"
    shapes = "GET /api/v1/generation results {data: {tokens_prompt, native_tokens_cached, provider_name, ...}}"
    looks_for = "tokens_prompt or native_tokens_prompt (in data)"
    owns = ("native_tokens_prompt", "tokens_prompt")
    #: A generation's stats join the logged request whose response has its id (``gen-...``),
    #: in another file: they say which upstream served it.
    responses_only = True

    @staticmethod
    def _data(rec: Any) -> Any:
        d = rec.get("data") if isinstance(rec.get("data"), MAPPING) else rec
        return d if ("native_tokens_prompt" in d or "tokens_prompt" in d) else None

    def claim(self, rec: Any) -> str | None:
        if (type(rec) is dict or isinstance(rec, MAPPING)) and self.alone(rec) and self._data(rec) is not None:
            return "generation stats (tokens_prompt / native_tokens_prompt)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Keyed:
        d = self._data(rec)
        native = d.get("native_tokens_prompt") is not None
        prompt = count(d.get("native_tokens_prompt" if native else "tokens_prompt"), "tokens_prompt") or 0
        out = count(d.get("native_tokens_completion" if native else "tokens_completion"), "tokens_completion") or 0
        read = count(d.get("native_tokens_cached"), "native_tokens_cached") or 0
        model = d.get("model") if isinstance(d.get("model"), str) else None
        up = d.get("provider_name")
        t = d.get("created_at")
        gid = d.get("id") if isinstance(d.get("id"), str) else None
        req = Request(id=gid or default_id(src), source=src,
                      format=self.name, api="chat", provider="openrouter", model=model,
                      arrival=parse_time(t) if t not in (None, "") else None,
                      usage=Usage(including_cache(prompt, read, 0), out, read, 0),
                      response=Response(str(d.get("upstream_id")) if d.get("upstream_id") else None,
                                        up if isinstance(up, str) else None))
        return Keyed(req, keys=(f"openrouter:{gid}",) if gid else ())


class CloudflareReader(Reader):
    """Cloudflare AI Gateway: a logs API page (a usage-only record per log: ``tokens_in``,
    ``tokens_out``; the bodies are only at ``/logs/{id}/request``), or a Logpush
    ``ai_gateway_events`` record (skipped: its bodies are encrypted)."""

    name = "cloudflare-ai-gateway"
    producer = "Cloudflare AI Gateway"
    shapes = "logs API pages {result: [...], result_info}; Logpush ai_gateway_events"
    looks_for = "result with result_info (a logs page), or Gateway with RequestBody (Logpush)"
    owns = ("result_info", "RequestBody", "Gateway")

    def claim(self, rec: Any) -> str | None:
        if not (type(rec) is dict or isinstance(rec, MAPPING)) or not self.alone(rec):
            return None
        if isinstance(rec.get("result"), list) and "result_info" in rec:
            return "a logs API page (result, result_info)"
        if "Gateway" in rec and "RequestBody" in rec:
            return "a Logpush ai_gateway_events record (Gateway, RequestBody)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Any:
        if "Gateway" in rec:
            body = rec.get("RequestBody")
            if isinstance(body, MAPPING) and body.get("type") == "encrypted":
                return Skipped("Cloudflare Logpush event: bodies encrypted with the Logpush key, no token counts")
            return Skipped("Cloudflare Logpush event: no token counts")
        out: list[Any] = []
        for k, log in enumerate(rec["result"]):
            if not isinstance(log, MAPPING):
                out.append(Skipped("Cloudflare log entry that is not an object"))
                continue
            model = log.get("model") if isinstance(log.get("model"), str) else None
            md = loads_if_json(log.get("metadata"))
            md = md if isinstance(md, MAPPING) else {}
            session = md.get("session") or md.get("session_id")
            t = log.get("created_at")
            inp, outp = count(log.get("tokens_in"), "tokens_in"), count(log.get("tokens_out"), "tokens_out")
            up = log.get("provider")
            out.append(Request(id=str(log["id"]) if log.get("id") else default_id(src, f"#{k}"), source=src,
                               format=self.name, api="chat", provider=logged_provider(up, model),
                               model=model, arrival=parse_time(t) if t not in (None, "") else None,
                               session=str(session) if session else None,
                               usage=Usage(inp or 0, outp or 0) if inp is not None else None,
                               response=Response(upstream=up) if isinstance(up, str) else None))
        return out


class AzureDiagnosticsReader(Reader):
    """Azure Monitor resource logs of Azure OpenAI (and other Azure services): skipped, with a
    reason (no prompt and no token counts)."""

    name = "azure-diagnostics"
    producer = "Azure OpenAI (Azure Monitor resource logs)"
    shapes = "{time, resourceId, category, operationName, properties}"
    looks_for = "resourceId with category and operationName"
    owns = ("resourceId",)

    def claim(self, rec: Any) -> str | None:
        if (type(rec) is dict or isinstance(rec, MAPPING)) and self.alone(rec) and "resourceId" in rec and "category" in rec \
                and "operationName" in rec:
            return "an Azure Monitor resource log (resourceId, category, operationName)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Skipped:
        return Skipped(f"Azure {str(rec.get('category'))[:30]} log: no prompt and no token counts")
