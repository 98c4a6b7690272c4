"""Batch APIs and stored responses: OpenAI Batch output lines, Anthropic Message Batches
requests and results, and OpenAI Response objects.

- OpenAI Batch output JSONL: ``{id, custom_id, response: {status_code, request_id, body}, error}``
  (https://platform.openai.com/docs/guides/batch, checked 2026-12-01); joined to its input line
  (read by the body readers) by ``custom_id``.
- Anthropic Message Batches: requests ``{custom_id, params}`` (the SDK's
  ``MessageBatchIndividualRequest``: ``params`` is a Messages body) and results
  ``{custom_id, result: {type: succeeded | errored | canceled | expired, message}}``
  (https://platform.claude.com/docs/en/api/retrieving-message-batch-results, checked 2026-12-01).
- OpenAI Response objects (``GET /v1/responses/{id}``, ``object: "response"``): the output and
  usage of a response, never a request (its input items are at ``/input_items``).

Result and output files hold no prompt: read alone they are usage-only records; given with
their input files, every result joins its request (usage, response), whichever file comes first.
"""

from __future__ import annotations

from typing import Any

from ..errors import BadRecord
from ..model import Request, Response, Source
from . import anthropic as _anthropic
from . import openai as _openai
from .bodies import base_fields, default_id, parse_body, response_of
from .common import MAPPING, provider_for_model
from .fields import parse_time
from .outcomes import Keyed, Skipped
from .reader import BODY_KEYS, Reader
from .usage import find_usage


def _cid(rec: Any) -> str | None:
    cid = rec.get("custom_id")
    return str(cid) if isinstance(cid, (str, int)) and not isinstance(cid, bool) and cid != "" else None


def _usage_only(src: Source, fmt: str, api: str, model: Any, usage: Any, response: Response | None,
                arrival: float | None = None, rid: str | None = None) -> Request:
    model = str(model) if isinstance(model, str) and model else None
    return Request(id=rid or default_id(src), source=src, format=fmt, api=api, provider=provider_for_model(model),
                   model=model, arrival=arrival, usage=usage, response=response)


class OpenAIBatchOutputReader(Reader):
    """OpenAI Batch output lines: usage and response of the input line with the same
    ``custom_id``."""

    name = "openai-batch-output"
    producer = "OpenAI Batch API"
    shapes = "output JSONL: {id, custom_id, response: {status_code, body}, error}"
    looks_for = "custom_id with response.status_code (or error) and no request body"
    responses_only = True

    def claim(self, rec: Any) -> str | None:
        if not (type(rec) is dict or isinstance(rec, MAPPING)) or "custom_id" not in rec or "body" in rec \
                or not self.alone(rec) or any(k in rec for k in BODY_KEYS) or "result" in rec or "params" in rec:
            return None
        r = rec.get("response")
        if (isinstance(r, MAPPING) and "status_code" in r) or (r is None and "error" in rec):
            return "custom_id with a response status (a Batch output line)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Keyed | Skipped:
        cid = _cid(rec)
        r = rec.get("response")
        body = r.get("body") if isinstance(r, MAPPING) else None
        if rec.get("error") or not isinstance(body, MAPPING) or (isinstance(r, MAPPING) and r.get("status_code") not in (200, "200", None)):
            return Skipped("OpenAI Batch output line of a failed request")
        resp = Response(str(body["id"]) if isinstance(body.get("id"), str) else None, None,
                        _openai.chat_response_parts(body, 0) or _openai.responses_output_parts(body, 0))
        # ``created``: when the batch served this request (epoch seconds; the chat completion's and
        # the response's own time), the arrival its input line, which holds none, takes on joining
        created = body.get("created", body.get("created_at"))
        req = _usage_only(src, "openai-batch-output", "chat", body.get("model"), find_usage(body), resp,
                          arrival=parse_time(created) if created is not None else None, rid=cid)
        return Keyed(req, keys=(f"openai-batch:{cid}",) if cid else ())


class AnthropicBatchReader(Reader):
    """Anthropic Message Batches requests: ``params`` is the Messages body; ``id``:
    ``custom_id`` (results join by it)."""

    name = "anthropic-batch"
    producer = "Anthropic Message Batches API"
    shapes = "requests {custom_id, params: Messages body}"
    looks_for = "custom_id with params holding messages"

    def claim(self, rec: Any) -> str | None:
        if (type(rec) is dict or isinstance(rec, MAPPING)) and self.alone(rec) and "custom_id" in rec \
                and "result" not in rec and not any(k in rec for k in BODY_KEYS):
            p = rec.get("params")
            if isinstance(p, MAPPING) and "messages" in p:
                return "custom_id with a Messages body in params"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Keyed:
        body = rec.get("params")
        if not isinstance(body, MAPPING):
            raise BadRecord("'params' is not a Messages body")
        b = parse_body(body, "anthropic")
        base = base_fields(body, None, rec, src, getattr(opts, "model", None))
        base["provider"] = base["provider"] or "anthropic"
        cid = _cid(rec)
        if cid:
            base["id"] = cid
        req = Request(format="anthropic-batch", api="anthropic", parts=b.parts, params=b.params, **base)
        return Keyed(req, keys=(f"anthropic-batch:{cid}",) if cid else ())

    def merge(self, first: Request, later: Request) -> Request:
        """A request and its result: the result's usage and response (its turn numbered after
        the request's messages)."""
        from dataclasses import replace

        from .bodies import shifted

        if first.response is None and later.response is not None and later.response.parts:
            n = 1 + max((p.message for p in first.parts if p.message is not None), default=-1)
            later = replace(later, response=shifted(later.response, n))
        return super().merge(first, later)


class AnthropicResultsReader(Reader):
    """Anthropic Message Batches results: a succeeded result's ``message`` gives usage and the
    response of the request with the same ``custom_id``; other results are skipped."""

    name = "anthropic-batch-results"
    producer = "Anthropic Message Batches API"
    shapes = "results JSONL: {custom_id, result: {type, message}}"
    looks_for = "custom_id with result.type"
    responses_only = True

    def claim(self, rec: Any) -> str | None:
        if (type(rec) is dict or isinstance(rec, MAPPING)) and self.alone(rec) and "custom_id" in rec \
                and "params" not in rec and not any(k in rec for k in BODY_KEYS):
            r = rec.get("result")
            if isinstance(r, MAPPING) and isinstance(r.get("type"), str):
                return "custom_id with a result (a Message Batches result)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Keyed | Skipped:
        r = rec["result"]
        if r.get("type") != "succeeded" or not isinstance(r.get("message"), MAPPING):
            return Skipped(f"Anthropic batch result '{str(r.get('type'))[:20]}' (no response)")
        msg = r["message"]
        cid = _cid(rec)
        resp = Response(str(msg["id"]) if isinstance(msg.get("id"), str) else None, None,
                        _anthropic.response_parts(msg, 0))
        req = _usage_only(src, "anthropic-batch-results", "anthropic", msg.get("model"), find_usage(msg), resp, rid=cid)
        return Keyed(req, keys=(f"anthropic-batch:{cid}",) if cid else ())


class ResponseObjectReader(Reader):
    """OpenAI Response objects (``object: "response"``): usage, output and the provider's cache
    verdict, with no prompt (usage-only)."""

    name = "openai-response-object"
    producer = "OpenAI Responses API (GET /v1/responses/{id})"
    shapes = "Response objects: {id, object: response, output, usage, previous_response_id}"
    looks_for = "object 'response'"
    responses_only = True
    owns = ("object",)

    def claim(self, rec: Any) -> str | None:
        if (type(rec) is dict or isinstance(rec, MAPPING)) and self.alone(rec) and rec.get("object") == "response":
            return "object 'response' (a Response, not a request)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Request:
        resp = response_of("openai-responses", {"input": []}, rec)
        prev = rec.get("previous_response_id")
        t = rec.get("created_at")
        req = _usage_only(src, "openai-response-object", "responses", rec.get("model"), find_usage(rec), resp,
                          arrival=parse_time(t) if t not in (None, "") else None,
                          rid=str(rec["id"]) if isinstance(rec.get("id"), str) else None)
        if isinstance(prev, str) and prev:
            from dataclasses import replace

            req = replace(req, previous_response_id=prev)
        return req
