#!/usr/bin/env python3
"""Write a byte-level tokenizer (one token per byte, no merges, Llama 3's header and turn
markers as special tokens) with Ollama's llama3.1 chat template, for the tests and rule examples
that need a chat template that renders by conversation state:

    PYTHONPATH=. python tests/data/make_template_tokenizer.py rules/lint/data/ollama-llama31

The template is Ollama's llama3.1 / llama3.2 ``TEMPLATE`` (https://ollama.com/library/llama3.1,
the Go template also quoted in HKUDS/nanobot#4867) written as Jinja: the tool definitions are
rendered inside the last message only when it is a user message.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

SPECIALS = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
TEMPLATE = """<|start_header_id|>system<|end_header_id|>

Cutting Knowledge Date: December 2023

{% for m in messages if m.role == 'system' %}{{ m.content }}{% endfor %}
{%- if tools %}When you receive a tool call response, use the output to format an answer to the orginal user question.

You are a helpful assistant with tool calling capabilities.
{%- endif %}<|eot_id|>
{%- set conv = messages | rejectattr('role', 'equalto', 'system') | list %}
{%- for m in conv %}
{%- set last = loop.last %}
{%- if m.role == 'user' %}<|start_header_id|>user<|end_header_id|>
{%- if tools and last %}

Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.

Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. Do not use variables.

{% for t in tools %}{{ t | tojson }}
{% endfor %}
{{ m.content }}<|eot_id|>
{%- else %}

{{ m.content }}<|eot_id|>
{%- endif %}{% if last %}<|start_header_id|>assistant<|end_header_id|>

{% endif %}
{%- elif m.role == 'assistant' %}<|start_header_id|>assistant<|end_header_id|>
{%- if m.tool_calls %}
{% for c in m.tool_calls %}
{"name": "{{ c.function.name }}", "parameters": {{ c.function.arguments }}}{% endfor %}
{%- else %}

{{ m.content }}
{%- endif %}{% if not last %}<|eot_id|>{% endif %}
{%- elif m.role == 'tool' %}<|start_header_id|>ipython<|end_header_id|>

{{ m.content }}<|eot_id|>{% if last %}<|start_header_id|>assistant<|end_header_id|>

{% endif %}
{%- endif %}
{%- endfor %}"""


def build() -> Tokenizer:
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS])
    return tok


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    build().save(str(out / "tokenizer.json"))
    (out / "chat_template.jinja").write_text(TEMPLATE, encoding="utf-8")
    (out / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}),
                                               encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1]))
