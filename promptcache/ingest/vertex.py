"""Vertex AI request-response logging (Gemini on Vertex AI writes every request and response to
a BigQuery table; rows exported as newline-delimited JSON).

Columns (https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/request-response-logging;
elastic/beats ``x-pack/metricbeat/module/gcp/vertexai_logs``; checked 2026-12-01): ``endpoint``,
``deployed_model_id``, ``logging_time`` (BigQuery TIMESTAMP text, ``YYYY-MM-DD HH:MM:SS.ffffff
UTC``), ``request_id`` (INT64, as text), ``request_payload`` / ``response_payload`` (text
arrays), ``model``, ``model_version``, ``api_method``, ``full_request`` / ``full_response``
(the ``generateContent`` request and response, JSON), ``metadata``.
"""

from __future__ import annotations

from typing import Any

from ..errors import BadRecord
from ..model import Request, Source
from . import gemini as _gemini
from .bodies import default_id, response_of, server_state
from .common import MAPPING, loads_if_json
from .fields import parse_time
from .reader import Reader
from .usage import find_usage


class VertexReader(Reader):
    """Vertex AI request-response log rows: ``full_request`` is read as a ``generateContent``
    body; ``usage``: ``full_response.usageMetadata``; ``arrival``: ``logging_time``; ``id``:
    ``request_id``; ``model``: ``model``, else the endpoint's last segment."""

    name = "vertex-logs"
    producer = "Vertex AI request-response logging (BigQuery)"
    shapes = "BigQuery rows {logging_time, request_id, model, full_request, full_response}, exported as JSON lines"
    looks_for = "full_request with logging_time, endpoint or api_method"
    owns = ("full_request", "logging_time")

    def claim(self, rec: Any) -> str | None:
        if (type(rec) is dict or isinstance(rec, MAPPING)) and self.alone(rec) and "full_request" in rec and (
                "logging_time" in rec or "endpoint" in rec or "api_method" in rec):
            return "full_request with logging_time/endpoint (a request-response log row)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> Request:
        body = loads_if_json(rec.get("full_request"))
        resp = loads_if_json(rec.get("full_response"))
        if body in (None, "", {}):
            parts: tuple = ()
            params: dict[str, Any] = {}
            body = {}
        elif not isinstance(body, MAPPING):
            raise BadRecord("full_request is not a generateContent body")
        else:
            parts = tuple(_gemini.parse_gemini(body))
            params = _gemini.params_of(body)
        model = rec.get("model") or (str(rec.get("endpoint", "")).rsplit("/", 1)[-1] or None) or getattr(opts, "model", None)
        model = str(model) if model else None
        t = rec.get("logging_time")
        rid = rec.get("request_id")
        return Request(id=str(rid) if isinstance(rid, (str, int)) and rid != "" else default_id(src), source=src,
                       format=self.name, api="gemini", provider="vertex_ai", model=model,
                       arrival=parse_time(t) if t not in (None, "") else None, parts=parts, params=params,
                       usage=find_usage(resp), response=response_of("gemini", body, resp),
                       prefix_on_server=server_state("gemini", body))
