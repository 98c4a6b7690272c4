"""Lint picks a prompt's cache rules with the audit's router (promptcache/simulate/routing.py):
a Bedrock id, a ``vertex_ai/…`` or ``openrouter/…`` name gets the rules the audit gives it, not
those of the SDK that sent it."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptcache.lint import lint_paths
from promptcache.lint.checks import target_for
from promptcache.lint.config import Settings
from promptcache.lint.sources import parse_source
from promptcache.simulate.routing import router

ANTHROPIC_CALL = '''import anthropic

client = anthropic.Anthropic()
SYSTEM = """{text}"""


def ask(question):
    return client.messages.create(
        model="{model}",
        max_tokens=512,
        system=[{{"type": "text", "text": SYSTEM, "cache_control": {{"type": "ephemeral"}}}}],
        messages=[{{"role": "user", "content": question}}],
    )
'''

OPENAI_CALL = '''from openai import OpenAI

client = OpenAI()


def ask(question):
    return client.chat.completions.create(
        model="{model}",
        messages=[{{"role": "system", "content": "You are a helpful assistant."}}, {{"role": "user", "content": question}}],
    )
'''


def _target(src: str, name: str = "app.py"):
    (doc,) = parse_source(name, src).docs
    return target_for(doc, Settings(root=Path(".")))


@pytest.mark.parametrize("model,provider,min_tokens", [
    ("us.anthropic.claude-opus-4-6-v1:0", "bedrock", 4096),           # cross-region inference profile id
    ("anthropic.claude-haiku-4-5-20251001-v1:0", "bedrock", 4096),
    ("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3", "bedrock", 1024),
    ("claude-opus-4-6", "anthropic", 4096),
    ("claude-sonnet-4-5", "anthropic", 1024),
])
def test_anthropic_sdk_call_gets_the_routed_rules(model, provider, min_tokens):
    t = _target(ANTHROPIC_CALL.format(text="Answer briefly.", model=model))
    assert (t.provider, t.rules.min_tokens) == (provider, min_tokens)
    assert t.provider == router().resolve("anthropic", model).file.id


@pytest.mark.parametrize("model,provider,min_tokens", [
    ("vertex_ai/claude-opus-4-5@20251101", "vertex-claude", 4096),     # LiteLLM proxy model names
    ("vertex_ai/gemini-2.5-pro", "vertex-gemini", 2048),
    ("openrouter/anthropic/claude-haiku-4.5", "anthropic", 4096),        # OpenRouter: the upstream's rules
    ("bedrock/anthropic.claude-opus-4-5-20251101-v1:0", "bedrock", 4096),
    ("gpt-4o", "openai", 1024),
])
def test_openai_sdk_call_gets_the_routed_rules(model, provider, min_tokens):
    t = _target(OPENAI_CALL.format(model=model))
    assert (t.provider, t.rules.min_tokens) == (provider, min_tokens)


def test_breakpoint_minimum_is_bedrocks(tmp_path):
    """About 1,500 static tokens before the breakpoint: enough for Claude Sonnet 4.5 (1,024)
    but under Bedrock's 4,096 for Opus 4.6 under its cross-region id, which lint read as the
    Claude API's default (1,024) before."""
    text = " ".join(f"Rule {i}: answer in the traveller's language and cite the tariff section." for i in range(100))
    for model, fires in (("us.anthropic.claude-opus-4-6-v1:0", True), ("claude-sonnet-4-5", False)):
        f = tmp_path / f"app_{fires}.py"
        f.write_text(ANTHROPIC_CALL.format(text=text, model=model), encoding="utf-8")
        found = [x for x in lint_paths([f]).findings if x.rule_id == "breakpoint-below-minimum"]
        assert bool(found) is fires, model
        if fires:
            assert "under the 4,096-token minimum" in found[0].message and model in found[0].message
