"""Template sources: what each parser sees as static text and slots, and where."""

from __future__ import annotations

from promptcache.lint.checks import metrics, region_parts, target_for
from promptcache.lint.config import Settings
from promptcache.lint.sources import parse_source
from promptcache.tokenize.tiktoken_backend import load_encoding


def pieces(parsed, doc=0):
    out = []
    for part in parsed.docs[doc].parts:
        for p in part.pieces:
            out.append((part.role, p.kind, p.text if p.kind == "static" else p.slot.source))
    return out


def _walk(pieces):
    for p in pieces:
        if p.kind == "branch":  # its condition, then each alternative's slots
            yield p.slot
            for alt in p.branches:
                yield from _walk(alt)
        elif p.kind == "slot":
            yield p.slot


def slots(parsed, doc=0):
    return [(s.source, s.span.line, s.span.col) for part in parsed.docs[doc].parts for s in _walk(part.pieces)]


def merged(parsed):
    out = []
    for role, kind, text in pieces(parsed):
        if out and kind == "static" and out[-1][1] == "static":
            out[-1] = (role, kind, out[-1][2] + text)
        else:
            out.append((role, kind, text))
    return out


def test_jinja_renders_static_text_as_jinja_would():
    src = ("{% macro greet(n) %}Hello {{ n }}{% endmacro %}"
           "{# note #}A  {{- x -}}  B\n"
           "{% raw %}{{ not a slot }}{% endraw %}\n"
           "{% set ts = time.time() %}T {{ ts }}\n")
    p = parse_source("t.j2", src)
    # macro bodies are not output, `-` strips whitespace, raw blocks are text, comments vanish,
    # and the single trailing newline is dropped
    assert merged(p) == [("template", "static", "A"), ("template", "slot", "{{- x -}}"),
                         ("template", "static", "B\n{{ not a slot }}\nT "), ("template", "slot", "{{ ts }}")]
    ts = p.docs[0].parts[0].pieces[-1].slot
    assert "time.time()" in ts.probes  # what `{% set %}` bound the name to


def test_jinja_syntax_error_is_a_finding_at_its_line():
    p = parse_source("t.j2", "ok\n{{ a + }}\n")
    (i,) = p.issues
    assert (i.rule, i.span.line) == ("template-syntax", 2)


def test_mustache_sections_comments_and_helpers():
    p = parse_source("m.mustache", "{{! c }}{{#items}}- {{name}}\n{{/items}}{{formatDate now}}")
    assert slots(p) == [("{{#items}}", 1, 9), ("{{name}}", 1, 21), ("{{formatDate now}}", 2, 11)]
    helper = p.docs[0].parts[0].pieces[-1].slot
    assert "{{ now }}" in helper.probes  # each helper argument is probed as a variable
    bad = parse_source("m.mustache", "{{#a}}x{{/b}}")
    assert bad.issues[0].rule == "template-syntax" and "closes `a`" in bad.issues[0].values["reason"]


def test_prompty_messages_and_model():
    src = ("---\nname: x\nmodel:\n  configuration:\n    azure_deployment: gpt-4o-mini\n---\n"
           "system:\nYou are X.\n\nuser:\n{{ q }}\n")
    p = parse_source("a.prompty", src)
    (doc,) = p.docs
    assert doc.model == "gpt-4o-mini"
    assert [(pt.role, pt.name) for pt in doc.parts] == [("system", "messages[0]"), ("user", "messages[1]")]
    assert pieces(p) == [("system", "static", "You are X."), ("user", "slot", "{{ q }}")]
    assert slots(p) == [("{{ q }}", 11, 1)]
    assert region_parts(doc) == 1  # the final user message is not part of the cacheable region


def test_yaml_positions_in_block_and_flow_scalars():
    src = ("messages:\n  - role: system\n    content: |\n      Intro.\n      Now {{ now() }} and {{ now() }}.\n"
           "  - {role: user, content: \"Q: {{ q }}\"}\n")
    p = parse_source("b.yaml", src)
    assert slots(p) == [("{{ now() }}", 5, 11), ("{{ now() }}", 5, 27), ("{{ q }}", 6, 31)]


def test_promptfoo_config_prompts():
    src = "prompts:\n  - 'Summarize {{ text }}'\n  - file://other.json\n  - {label: v2, raw: 'Hi {{ name }}'}\n"
    p = parse_source("promptfooconfig.yaml", src)
    assert [d.name for d in p.docs] == ["prompts[0]", "v2"]
    assert slots(p, 1) == [("{{ name }}", 4, 26)]


def test_non_prompt_yaml_and_json_give_nothing():
    assert parse_source("ci.yaml", "jobs:\n  test: {runs-on: ubuntu}\n").docs == []
    assert parse_source("pkg.json", '{"name": "x", "version": "1"}').docs == []


def test_openai_chat_body_puts_tools_after_system():
    src = ('{"model": "gpt-4o", "tools": [{"type": "function", "function": {"name": "f"}}],\n'
           ' "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "{{ q }}"}]}')
    (doc,) = parse_source("body.json", src).docs
    assert [pt.name for pt in doc.parts] == ["messages[0].content", "tools[0]", "messages[1].content"]


def test_python_format_fields_and_function_inlining():
    src = ('import textwrap\n'
           'TEMPLATE = textwrap.dedent("""\\\n'
           '    Hello {name}.\n'
           '    Rules follow.\n'
           '""")\n'
           'def build(name):\n'
           '    return TEMPLATE.format(name=name)\n'
           'def ask(client, name, history):\n'
           '    return client.chat.completions.create(model="gpt-4o",\n'
           '        messages=[{"role": "system", "content": build(name)}, *history])\n')
    p = parse_source("a.py", src)
    (doc,) = p.docs  # TEMPLATE is used by the call, so it is not a prompt of its own
    assert doc.name == "completions.create@9" and doc.model == "gpt-4o"
    assert pieces(p)[:3] == [("system", "static", "Hello "), ("system", "slot", "{name}"),
                             ("system", "static", ".\nRules follow.\n")]
    assert slots(p)[0] == ("{name}", 3, 11)
    assert [pt.role for pt in doc.parts] == ["system", "user"]  # *history varies per conversation


def test_static_token_counts_are_per_static_run():
    src = "Intro text here.\n{{ a }}\nMiddle part.\n{{ b }}\nEnd."
    (doc,) = parse_source("t.j2", src).docs
    enc = load_encoding("o200k_base")
    m = metrics(doc, target_for(doc, Settings(root=__import__("pathlib").Path("."))))
    assert m.stable_tokens == len(enc.encode_ordinary("Intro text here.\n"))
    assert [it.tokens for it in m.items if it.piece.kind == "static"] == [
        len(enc.encode_ordinary(t)) for t in ("Intro text here.\n", "\nMiddle part.\n", "\nEnd.")]
