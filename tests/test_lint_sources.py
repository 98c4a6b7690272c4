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


# ------------------------------------------------------------------ the readers added for issue 20

def flat(parsed, doc=0):
    """(role, kind, text or slot source) of a doc's pieces, branches walked."""
    out = []

    def walk(role, pcs):
        for p in pcs:
            if p.kind == "branch":
                out.append((role, "branch", p.slot.source))
                for alt in p.branches:
                    walk(role, alt)
            else:
                out.append((role, p.kind, p.text if p.kind == "static" else p.slot.source if p.slot else ""))
    for part in parsed.docs[doc].parts:
        walk(part.role, part.pieces)
    return out


def test_typescript_ai_sdk_call_resolves_names_and_locates_values():
    src = ("import { generateText } from 'ai';\n"
           "const today = new Date().toLocaleDateString();\n"
           "const rules = `Rule one.\\nRule two.`;\n"
           "export async function answer(q: string, threadId: string, history: any[]) {\n"
           "  return generateText({\n"
           "    model: openai('gpt-4o'),\n"
           "    system: `Today is ${today}. Thread ${threadId}.\\n` + rules,\n"
           "    messages: [...history, { role: 'user', content: q }],\n"
           "  });\n"
           "}\n")
    p = parse_source("agent.ts", src)
    (doc,) = p.docs  # `rules` is used by the call, so it is not a prompt of its own
    assert (doc.name, doc.model, doc.provider) == ("generateText@5", "gpt-4o", "openai")
    assert [pt.role for pt in doc.parts] == ["system", "user", "user"]
    assert merged(p)[:5] == [("system", "static", "Today is "), ("system", "slot", "today"),
                             ("system", "static", ". Thread "), ("system", "slot", "threadId"),
                             ("system", "static", ".\nRule one.\nRule two.")]  # escapes decoded, `rules` followed
    assert slots(p)[:2] == [("today", 7, 25), ("threadId", 7, 42)]  # the expressions inside ${}
    today = doc.parts[0].pieces[1].slot
    assert "new Date().toLocaleDateString()" in today.probes  # what `today` was declared as


def test_langchain_js_templates_have_field_slots():
    src = ("const SYSTEM = 'You translate {input_language} to {output_language}. Use {{braces}} literally.';\n"
           "const prompt = ChatPromptTemplate.fromMessages([\n"
           "  ['system', SYSTEM],\n"
           "  new MessagesPlaceholder('history'),\n"
           "  ['human', '{text}'],\n"
           "]);\n")
    p = parse_source("chain.js", src)
    (doc,) = p.docs
    assert [pt.role for pt in doc.parts] == ["system", "user", "user"]
    assert pieces(p)[:5] == [("system", "static", "You translate "), ("system", "slot", "{input_language}"),
                             ("system", "static", " to "), ("system", "slot", "{output_language}"),
                             ("system", "static", ". Use {braces} literally.")]
    assert slots(p)[:2] == [("{input_language}", 1, 31), ("{output_language}", 1, 51)]


def test_go_sprintf_template_and_messages():
    src = ('package p\n'
           'import ("fmt"; "text/template"; "time")\n'
           'const rules = "Rule one."\n'
           'func systemPrompt(sid string) string {\n'
           '\treturn fmt.Sprintf("Now %s, session %[1]s. %s", time.Now().Format(time.RFC3339), rules)\n'
           '}\n'
           'var t = template.Must(template.New("x").Parse(`Hi {{ .UserName }}.{{ if .Admin }} A{{ else }} B{{ end }}`))\n')
    p = parse_source("p.go", src)
    names = [d.name for d in p.docs]
    assert names == ["template@7", "systemPrompt"]
    # explicit argument index [1] reuses the first argument; `rules` (a %s of a string) is inlined
    assert flat(p, 1) == [("system", "static", "Now "), ("system", "slot", "%s (time.Now().Format(time.RFC3339))"),
                          ("system", "static", ", session "),
                          ("system", "slot", "%[1]s (time.Now().Format(time.RFC3339))"),
                          ("system", "static", ". "), ("system", "static", "Rule one.")]
    assert slots(p, 1)[0] == ("%s (time.Now().Format(time.RFC3339))", 5, 26)  # at the verb
    assert flat(p, 0) == [("template", "static", "Hi "), ("template", "slot", "{{ .UserName }}"),
                          ("template", "static", "."), ("template", "branch", "{{ if .Admin }}"),
                          ("template", "static", " A"), ("template", "static", " B")]
    assert slots(p, 0)[0] == ("{{ .UserName }}", 7, 51)


def test_n8n_dify_flowise_and_semantic_kernel_files():
    n8n = ('{"nodes": [{"name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "parameters": {\n'
           '  "text": "={{ $json.chatInput }}",\n'
           '  "options": {"systemMessage": "=Today is {{ $now }}.\\nRules: {{ \\"x\\" }}"}}},\n'
           ' {"name": "Mail", "type": "n8n-nodes-base.gmail", "parameters": {"message": "={{ $json.x }}"}}],\n'
           ' "connections": {}}')
    p = parse_source("flow.json", n8n)
    (doc,) = p.docs  # the Gmail node is not an AI node
    assert [(pt.role, pt.name) for pt in doc.parts] == [("system", "systemMessage"), ("user", "text")]
    assert slots(p) == [("{{ $now }}", 3, 43), ('{{ "x" }}', 3, 63), ("{{ $json.chatInput }}", 2, 13)]
    dify = ("app:\n  mode: advanced-chat\nworkflow:\n  graph:\n    nodes:\n    - data:\n        type: llm\n"
            "        model: {name: gpt-4o}\n        prompt_template:\n        - role: system\n"
            "          text: 'Use {{#context#}} and {{#sys.query#}}; {literal}'\n")
    p = parse_source("app.yml", dify)
    (doc,) = p.docs
    assert doc.model == "gpt-4o" and slots(p) == [("{{#context#}}", 11, 22), ("{{#sys.query#}}", 11, 40)]
    flowise = ('{"nodes": [{"data": {"label": "Prompt", "inputs": {"systemMessagePrompt": "Hi {name}, session '
               '{{$flow.sessionId}}", "model": "{{chatOpenAI_0.data.instance}}"}}}], "edges": []}')
    p = parse_source("cf.json", flowise)
    assert [s[0] for s in slots(p)] == ["{name}", "{{$flow.sessionId}}"]  # `model` is a node reference, not a prompt
    sk = ('name: x\ntemplate: |\n  <message role="system">Today {{$today}}. Rules.</message>\n'
          '  <message role="user">{{$input}}</message>\ntemplate_format: semantic-kernel\n'
          'execution_settings:\n  default:\n    model_id: gpt-4o-mini\n')
    p = parse_source("prompt.yaml", sk)
    (doc,) = p.docs
    assert doc.model == "gpt-4o-mini"
    assert [(pt.role, [x.kind for x in pt.pieces]) for pt in doc.parts] == [
        ("system", ["static", "slot", "static"]), ("user", ["slot"])]
    assert slots(p) == [("{{$today}}", 3, 32), ("{{$input}}", 4, 24)]


def test_markdown_front_matter_is_metadata():
    src = "---\nmodel: claude-sonnet-4-5\nallowed-tools: Bash(git status:*)\n---\nStatus: !`git status`\nDo $ARGUMENTS.\n"
    p = parse_source(".claude/commands/ship.md", src)
    (doc,) = p.docs
    assert p.language == "markdown" and doc.model == "claude-sonnet-4-5"
    assert slots(p) == [("!`git status`", 5, 9), ("$ARGUMENTS", 6, 4)]
    assert pieces(p)[0] == ("template", "static", "Status: ")  # the front matter is not prompt text


def test_langchain_python_templates_and_partials():
    src = ('from datetime import datetime\n'
           'from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder, SystemMessagePromptTemplate\n'
           'SYS = "Date {today}. Rules."\n'
           'p = ChatPromptTemplate.from_messages([\n'
           '    ("system", SYS),\n'
           '    MessagesPlaceholder("history"),\n'
           '    ("human", "{input}"),\n'
           ']).partial(today=datetime.now().strftime("%Y-%m-%d"))\n'
           's = SystemMessagePromptTemplate.from_template("Now {{ current_date_time }}. {literal}", "jinja2")\n')
    p = parse_source("chain.py", src)
    assert [d.name for d in p.docs] == ["ChatPromptTemplate@4", "SystemMessagePromptTemplate@9"]
    assert [(pt.role, pt.name) for pt in p.docs[0].parts] == [("system", "messages[0]"), ("user", "messages[1]"),
                                                               ("user", "messages[2]")]
    today = p.docs[0].parts[0].pieces[1].slot
    assert (today.source, today.span.line, today.span.col) == ("{today}", 3, 13)
    assert 'datetime.now().strftime("%Y-%m-%d")' in today.probes  # what .partial bound it to
    assert flat(p, 1) == [("system", "static", "Now "), ("system", "slot", "{{ current_date_time }}"),
                          ("system", "static", ". {literal}")]


def test_branches_yield_one_variant_each_and_loops_vary_with_their_items():
    from promptcache.lint.checks import variants

    src = "{{#if isAdmin}}Admin {{a}}{{else}}User {{b}}{{/if}} {{#each docs}}- {{title}}{{/each}} end"
    (doc,) = parse_source("t.hbs", src).docs
    vs = variants(doc)
    assert len(vs) == 2
    seqs = [[(pc.kind, pc.text or pc.slot.source, pc.slot.kind if pc.slot else "") for pc in v.parts[0].pieces]
            for v in vs]
    assert seqs[0][:3] == [("slot", "{{#if isAdmin}}", "condition"), ("static", "Admin ", ""), ("slot", "{{a}}", "variable")]
    assert seqs[1][:3] == [("slot", "{{#if isAdmin}}", "condition"), ("static", "User ", ""), ("slot", "{{b}}", "variable")]
    assert ("slot", "{{#each docs}}", "loop") in seqs[0] and ("slot", "{{title}}", "in-loop") in seqs[0]
    nested = "{% if a %}{% if b %}x{% else %}y{% endif %}{% else %}z{% endif %}"
    (doc,) = parse_source("n.j2", nested).docs
    texts = sorted("".join(pc.text for pc in v.parts[0].pieces if pc.kind == "static") for v in variants(doc))
    assert texts == ["x", "y", "z"]  # every alternative, nested ones included


def test_python_jinja_templates_in_constants_and_template_calls():
    src = ('from jinja2 import Template\n'
           'AGENT_PROMPT = """Hi.\n{%- if tools %}\n{{ tools }}\n{%- endif %}\nDate: {{ current_date }}."""\n'
           'system_template = Template("Time {{ now }} and {name} stays text.")\n')
    p = parse_source("t.py", src)
    assert [d.name for d in p.docs] == ["system_template", "AGENT_PROMPT"]
    assert flat(p, 0) == [("system", "static", "Time "), ("system", "slot", "{{ now }}"),
                          ("system", "static", " and {name} stays text.")]
    assert slots(p, 0) == [("{{ now }}", 7, 34)]
    assert ("template", "branch", "{%- if tools %}") in flat(p, 1)
    assert slots(p, 1)[-1] == ("{{ current_date }}", 6, 7)
