"""The provider a log names reaches the router as logged (ingest no longer folds ``azure`` into
OpenAI or ``vertex_ai`` into the Gemini API): real record shapes from tests/data/formats, with the
provider fields a LiteLLM Azure deployment, a Vertex AI project, OpenTelemetry and the AI SDK
write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptcache.pipeline import AuditOptions, audit

FORMATS = Path(__file__).parent / "data" / "formats"


def _lines(name: str, edit, n: int = 2) -> str:
    out = []
    for line in (FORMATS / name).read_text(encoding="utf-8").splitlines()[:n]:
        rec = json.loads(line)
        edit(rec)
        out.append(json.dumps(rec))
    return "\n".join(out) + "\n"


def _files(res) -> set[str]:
    return {ns.split("/")[0] for ns in res.rules}


@pytest.mark.parametrize("provider,model,want", [
    ("azure", "gpt-4.1-mini", "azure"),                 # an Azure OpenAI deployment named after its model
    ("azure", "support-bot-prod", "azure"),             # ... or after anything else
    ("vertex_ai", "gemini-2.5-flash", "vertex-gemini"),  # Vertex with a plain model name
    ("vertex_ai", "claude-opus-4-1@20250805", "vertex-claude"),
    ("openai", "gpt-4.1-mini", "openai"),
    ("openai", "claude-sonnet-4-5", "anthropic"),       # an OpenAI-compatible endpoint in front of Claude
])
def test_litellm_custom_llm_provider_picks_the_rules(tmp_path, provider, model, want):
    """LiteLLM's StandardLoggingPayload (the fixture's own records) with ``custom_llm_provider``
    and ``model`` as LiteLLM logs an Azure deployment or a Vertex model."""
    def edit(rec):
        rec["custom_llm_provider"], rec["model"] = provider, model

    log = tmp_path / "litellm.jsonl"
    log.write_text(_lines("litellm_standard_logging_payload.jsonl", edit), encoding="utf-8")
    res = audit([log], AuditOptions(diagnose=False))
    assert {o.provider for o in res.outcomes} == {want}
    assert not [w for w in res.warnings if "applying openai rules" in w]


def test_vertex_request_response_log_is_vertex(tmp_path):
    """Vertex AI's request-response logging (BigQuery rows) names Vertex by its format: Gemini
    on Vertex's rules (its durable tier), not the Gemini API's."""
    res = audit([FORMATS / "vertex_ai_request_response_bq.jsonl"], AuditOptions(diagnose=False))
    assert _files(res) == {"vertex-gemini"}


def test_bedrock_invocation_log_is_bedrock():
    res = audit([FORMATS / "bedrock_invocation_logs.json.gz"], AuditOptions(diagnose=False))
    assert _files(res) == {"bedrock"}


@pytest.mark.parametrize("name,want", [("gcp.vertex_ai", "vertex-gemini"), ("gcp.gemini", "gemini"),
                                       ("aws.bedrock", "bedrock"), ("azure.ai.openai", "azure")])
def test_otel_provider_name_picks_the_rules(tmp_path, name, want):
    """OpenTelemetry GenAI spans (the semconv fixture) with the registry's ``gen_ai.provider.name``
    values; the model is a plain name, so only the provider tells the hosts apart."""
    model = {"vertex-gemini": "gemini-2.5-flash", "gemini": "gemini-2.5-flash", "bedrock": "anthropic.claude-sonnet-4-5-20250929-v1:0",
             "azure": "gpt-4.1-mini"}[want]
    text = (FORMATS / "otel_genai_semconv_otlp.jsonl").read_text(encoding="utf-8")
    text = text.replace('"gen_ai.provider.name", "value": {"stringValue": "openai"}',
                        f'"gen_ai.provider.name", "value": {{"stringValue": "{name}"}}')
    text = text.replace('"stringValue": "gpt-4.1-mini"', f'"stringValue": "{model}"')
    log = tmp_path / "otel.jsonl"
    log.write_text(text, encoding="utf-8")
    res = audit([log], AuditOptions(diagnose=False))
    assert _files(res) == {want}


def test_ai_sdk_vertex_provider_id(tmp_path):
    """The AI SDK names its provider ``<provider>.<api>``: ``google.vertex.chat`` is Vertex AI,
    ``openai.chat`` OpenAI."""
    text = (FORMATS / "vercel_ai_sdk_otlp.jsonl").read_text(encoding="utf-8")
    log = tmp_path / "sdk.jsonl"
    log.write_text(text, encoding="utf-8")
    assert _files(audit([log], AuditOptions(diagnose=False))) == {"openai"}
    log.write_text(text.replace('"stringValue": "openai.chat"', '"stringValue": "google.vertex.chat"')
                   .replace('"stringValue": "gpt-4.1-mini"', '"stringValue": "gemini-2.5-flash"'), encoding="utf-8")
    assert _files(audit([log], AuditOptions(diagnose=False))) == {"vertex-gemini"}


def test_an_unknown_provider_name_warns_and_the_run_goes_on(tmp_path):
    """A provider name no rules file claims, for a model none names: OpenAI's rules with a
    warning that names the provider (the audit is not stopped)."""
    def edit(rec):
        rec["custom_llm_provider"], rec["model"] = "hosted_vllm", "my-finetune"

    log = tmp_path / "litellm.jsonl"
    log.write_text(_lines("litellm_standard_logging_payload.jsonl", edit), encoding="utf-8")
    res = audit([log], AuditOptions(diagnose=False))
    assert _files(res) == {"openai"}
    assert any("provider 'hosted_vllm'" in w and "applying openai rules" in w for w in res.warnings)
