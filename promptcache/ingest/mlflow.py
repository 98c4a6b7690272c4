"""MLflow traces: ``Trace.to_json()`` / ``mlflow traces get`` output (MLflow 3), one trace per
line or per file.

Shape (mlflow/mlflow tracing: ``TraceInfo`` and ``Span.to_dict``; checked 2026-12-01):
``{"info": {trace_id, request_time, trace_metadata: {"mlflow.trace.session", ...}, ...},
"data": {"spans": [{trace_id, span_id, parent_span_id, name, start_time_unix_nano,
attributes: {...}}]}}``; attribute values are JSON-encoded (``"\"CHAT_MODEL\""``):
``mlflow.spanType``, ``mlflow.spanInputs`` (the call's arguments: a request body),
``mlflow.spanOutputs``, ``mlflow.chat.tokenUsage`` (``input_tokens``, ``output_tokens``).

Spans of type ``CHAT_MODEL`` and ``LLM`` are calls; the others are skipped; an LLM span inside
another is the call and its parent a duplicate.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import BadRecord
from ..model import Request, Source
from .bodies import BODY_APIS, body_format, default_id, parse_body, reprefix, response_of
from .common import MAPPING, loads_if_json, provider_for_model
from .fields import parse_time
from .outcomes import Keyed, Skipped
from .reader import Reader
from .usage import find_usage, normalize_usage

CALL_TYPES = ("CHAT_MODEL", "LLM")


def _decoded(v: Any) -> Any:
    """An MLflow attribute value: JSON text of the value."""
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


class MLflowReader(Reader):
    """MLflow traces (see the module docstring). ``id``: the span's ``span_id``; ``arrival``:
    ``start_time_unix_nano``; ``session``: ``mlflow.trace.session`` (or ``mlflow.trace.user``);
    ``model``: the ``model`` attribute or the inputs' ``model``."""

    name = "mlflow"
    producer = "MLflow Tracing"
    shapes = "Trace JSON {info, data: {spans}} (mlflow traces get, Trace.to_json)"
    looks_for = "info with trace_id/request_id and data.spans"
    owns = ("info",)

    def claim(self, rec: Any) -> str | None:
        if not (type(rec) is dict or isinstance(rec, MAPPING)) or not self.alone(rec):
            return None
        info, data = rec.get("info"), rec.get("data")
        if isinstance(info, MAPPING) and ("trace_id" in info or "request_id" in info) and isinstance(data, MAPPING) \
                and isinstance(data.get("spans"), list):
            return "an MLflow trace (info, data.spans)"
        return None

    def read(self, rec: Any, src: Source, opts: Any) -> list[Any]:
        info = rec["info"]
        md = info.get("trace_metadata") if isinstance(info.get("trace_metadata"), MAPPING) else {}
        session = md.get("mlflow.trace.session") or md.get("mlflow.trace.user")
        out: list[Any] = []
        for k, span in enumerate(rec["data"]["spans"]):
            try:
                out.append(self._span(span, src, opts, session, info))
            except BadRecord as e:
                out.append(BadRecord(f"span {k}: {e}"))
        return out

    def _span(self, span: Any, src: Source, opts: Any, session: Any, info: Any) -> Any:
        if not isinstance(span, MAPPING):
            raise BadRecord("span is not an object")
        attrs = span.get("attributes") if isinstance(span.get("attributes"), MAPPING) else {}
        a = {k: _decoded(v) for k, v in attrs.items()}
        st = str(a.get("mlflow.spanType") or "")
        if st not in CALL_TYPES:
            return Skipped(f"MLflow {st[:20] or 'untyped'} span (not an LLM call)")
        inputs = loads_if_json(a.get("mlflow.spanInputs"))
        parts: tuple = ()
        params: dict[str, Any] = {}
        fmt = "openai-chat"
        if isinstance(inputs, MAPPING) and body_format(inputs):
            fmt = body_format(inputs) or fmt
            b = parse_body(inputs, fmt)
            parts, params = reprefix(b.parts, "", "mlflow.spanInputs."), b.params
        elif isinstance(inputs, list):
            b = parse_body({"messages": inputs}, "openai-chat")
            parts, params = reprefix(b.parts, "messages", "mlflow.spanInputs"), b.params
        outputs = loads_if_json(a.get("mlflow.spanOutputs"))
        usage = find_usage(outputs) or normalize_usage(loads_if_json(a.get("mlflow.chat.tokenUsage")))
        model = a.get("model") or (inputs.get("model") if isinstance(inputs, MAPPING) else None) or getattr(opts, "model", None)
        model = str(model) if model else None
        ns = span.get("start_time_unix_nano")
        t = parse_time(int(ns) / 1e9) if isinstance(ns, (int, str)) and str(ns).isdigit() else \
            (parse_time(info.get("request_time")) if info.get("request_time") not in (None, "") else None)
        sid = span.get("span_id")
        parent = span.get("parent_span_id")
        req = Request(id=str(sid) if sid else default_id(src), source=src, format=self.name, api=BODY_APIS[fmt][0],
                      provider=provider_for_model(model) or BODY_APIS[fmt][1], model=model, arrival=t, parts=parts,
                      params=params, session=str(session) if session else None, usage=usage,
                      response=response_of(fmt, inputs, outputs) if isinstance(inputs, MAPPING) else None)
        return Keyed(req, keys=(f"mlflow:{sid}",) if sid else (), supersedes=(f"mlflow:{parent}",) if parent else ())
