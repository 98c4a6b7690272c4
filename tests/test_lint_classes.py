"""The classes of problem a second trial of lint found on 45 real templates it had never seen
(77% recall, 25% of findings off the expected lines, one crash): each rebuilt from the real
template's structure with invented wording (the repository and file named), as a test that
failed before. Expected places are computed from the text itself (where the value is written),
token counts with the tokenizer on the static text alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptcache.lint import LintOptions, lint_paths
from promptcache.tokenize import resolve_tokenizer

RULES = "Keep every answer short, cite the handbook section you rely on, and never guess. "
LONG = RULES * 6  # about 100 tokens: long enough after any value (16), short of an unknown's 256


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".promptcache.toml").write_text("", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def at(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """1-based (line, column) of the ``nth`` occurrence of ``needle`` in ``text``."""
    i = -1
    for _ in range(nth + 1):
        i = text.index(needle, i + 1)
    return text.count("\n", 0, i) + 1, i - (text.rfind("\n", 0, i) + 1) + 1


def tokens(text: str) -> int:
    return len(resolve_tokenizer("o200k_base", default=None, model=None).encode_batch([text])[0])


def lint(repo: Path, name: str, content: str, **opts):
    p = repo / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(content, encoding="utf-8")
    run = lint_paths([p], LintOptions(use_lockfile=False, **opts))
    assert not run.errors and not getattr(run, "internal", []), run.errors
    return run


def found(run) -> list[tuple[str, int, int]]:
    return sorted((f.code, f.span.line, f.span.col) for f in run.active)


# ----------------------------------------------------------------------------- misses

def test_retrieved_content_named_for_what_it_is(repo):
    """temibabs/NaijaEchoes prompt/intro.py: `{recent_news}` (retrieved) before the closing
    instructions; contoso-chat's chat.prompty: a loop over `documentation` (retrieved items)."""
    py = ('from langchain.prompts import ChatPromptTemplate, SystemMessagePromptTemplate\n\n'
          'INTRO = """You are {persona}.\n\nThe latest reports about {persona}:\n---\n{recent_news}\n---\n\n'
          'Introduce yourself. ' + LONG + '"""\n\n'
          'PROMPT = ChatPromptTemplate(messages=[SystemMessagePromptTemplate.from_template(INTRO)])\n')
    run = lint(repo, "intro.py", py)
    assert ("PC110", *at(py, "{recent_news}")) in found(run)
    prompty = ("---\nname: shop\nmodel:\n  api: chat\n---\nsystem:\nYou help shoppers.\n\n# Reference\n"
               "{% for item in documentation %}\nid: {{item.id}}\ntext: {{item.content}}\n{% endfor %}\n\n"
               + LONG + "\n\nuser:\n{{question}}\n")
    run = lint(repo, "chat.prompty", prompty)
    assert ("PC110", *at(prompty, "{% for item in documentation %}")) in found(run)


def test_location_fields_and_fields_read_with_them_are_per_user(repo):
    """vercel/ai-chatbot lib/ai/prompts.ts: `requestHints.latitude`, `.longitude` and `.name`
    (read from the object `.city` and `.email` are read from) in a hints block, and the system
    prompt assembled from three constants by a function with two returns: the tokens at risk
    are counted through the whole assembled prompt (the artifacts text after the hints)."""
    artifacts = "Artifacts mode opens a side panel for long documents. " * 10
    ts = ("export const artifactsPrompt = `\n" + artifacts + "`;\n\n"
          "export const regularPrompt = 'You are a friendly assistant.';\n\n"
          "export const getRequestPromptFromHints = (requestHints: RequestHints) => `\\\n"
          "About the origin of the request:\n- lat: ${requestHints.latitude}\n- lon: ${requestHints.longitude}\n"
          "- city: ${requestHints.city}\n- email: ${requestHints.email}\n- name: ${requestHints.name}\n`;\n\n"
          "export const systemPrompt = ({ selectedChatModel, requestHints }) => {\n"
          "  const requestPrompt = getRequestPromptFromHints(requestHints);\n"
          "  if (selectedChatModel === 'chat-model-reasoning') {\n"
          "    return `${regularPrompt}\\n\\n${requestPrompt}`;\n"
          "  } else {\n"
          "    return `${regularPrompt}\\n\\n${requestPrompt}\\n\\n${artifactsPrompt}`;\n  }\n};\n")
    run = lint(repo, "prompts.ts", ts)
    got = {(f.code, f.span.line, f.span.col): f for f in run.active}
    for field in ("latitude", "longitude", "city", "email", "name"):
        assert ("PC108", *at(ts, f"requestHints.{field}}}")) in got, field
    name = got[("PC108", *at(ts, "requestHints.name}"))]
    assert name.doc == "systemPrompt"
    assert name.tokens_at_risk == tokens("\n\n\n" + artifacts)  # through the second return's artifacts text


def test_a_template_function_of_the_request_input_is_retrieved(repo):
    """microsoft/semantic-kernel samples/skills/ChatSkill/ChatGPT/skprompt.txt: `{{recall
    $input}}` (memories recalled for the request) before the rules."""
    sk = "This is a chat with {{$firstName}}.\n[CONTEXT]\nTODAY is {{time.date}}\n{{recall $input}}\n[END]\n" + LONG
    run = lint(repo, "ChatGPT/skprompt.txt", sk)
    assert ("PC110", *at(sk, "{{recall $input}}")) in found(run)


def test_n8n_expressions_in_the_workflow_sdk(repo):
    """n8n-io/n8n packages/@n8n/workflow-sdk test-fixtures/real-workflows/8597.generated.ts: the
    agent's `systemMessage: '=...{{ $now }}...'` in TypeScript (0 prompts before)."""
    ts = ("return workflow('id1', 'Booking agent', { executionOrder: 'v1' })\n"
          "  .add(trigger({ type: '@n8n/n8n-nodes-langchain.chatTrigger', version: 1.3, config: { name: 'Chat' } }))\n"
          "  .then(node({ type: '@n8n/n8n-nodes-langchain.agent', version: 2.2, config: { parameters: {\n"
          "      options: {\n        systemMessage: '=GOAL\\n\\nBook visits.\\nThe time now is {{ $now }}.\\n\\n"
          + LONG + "'\n      }\n    }, name: 'Agent' } }));\n")
    run = lint(repo, "wf.generated.ts", ts)
    (f,) = run.active
    assert (f.code, f.span.line, f.span.col, f.doc) == ("PC101", *at(ts, "{{ $now }}"), "Agent")
    assert f.token_index == tokens("GOAL\n\nBook visits.\nThe time now is ")


def test_wrapped_workflow_exports(repo):
    """n8n's template API (`{"workflow": {..., "workflow": {nodes, connections}}}`) and Dify's
    export API (`{"data": "<the DSL as a string>"}`) were read as 0 prompts, silently."""
    inner = {"nodes": [{"name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "parameters": {
        "options": {"systemMessage": "=<role>You help.</role>\nIt is {{ $now }}.\n" + LONG}}}], "connections": {}}
    text = json.dumps({"workflow": {"id": 6270, "name": "First agent", "workflow": inner}}, indent=2)
    run = lint(repo, "n8n_template.json", text)
    assert found(run) == [("PC101", *at(text, "{{ $now }}"))]
    dsl = ("app:\n  mode: workflow\n  name: docs\nkind: app\nworkflow:\n  graph:\n    nodes:\n    - data:\n"
           "        type: llm\n        title: Answer\n        prompt_template:\n        - role: system\n"
           "          text: \"Use the context:\\n{{#context#}}\\n" + LONG + "\"\n      id: '1'\n")
    text = json.dumps({"data": dsl})
    run = lint(repo, "dify_export.json", text)
    assert found(run) == [("PC110", *at(text, "{{#context#}}"))]


def test_a_go_prompt_assembled_from_functions_with_several_returns(repo):
    """charmbracelet/crush internal/llm/prompt/coder.go: the environment block (cwd, a date in
    layout `1/2/2006`, a directory tree) followed by `lspInformation()`, which returns "" or the
    LSP text: the static tokens after each value are counted through the LSP text."""
    lsp = "Tools report diagnostics after each edit; fix the ones your change caused. " * 4
    go = ("package prompt\n\nimport (\n\t\"fmt\"\n\t\"time\"\n)\n\n"
          "//go:embed base.md\nvar basePrompt []byte\n\n"
          "func CoderPrompt() string {\n\tenvInfo := getEnvironmentInfo()\n"
          "\treturn fmt.Sprintf(\"%s\\n\\n%s\\n%s\", string(basePrompt), envInfo, lspInformation())\n}\n\n"
          "func getEnvironmentInfo() string {\n\tdate := time.Now().Format(\"1/2/2006\")\n"
          "\toutput, _ := tools.ListDirectoryTree(\".\", nil)\n"
          "\treturn fmt.Sprintf(`<env>\nToday's date: %s\n</env>\n<project>\n%s\n</project>`, date, output)\n}\n\n"
          "func lspInformation() string {\n\tif !hasLSP() {\n\t\treturn \"\"\n\t}\n\treturn `# LSP\n" + lsp + "`\n}\n")
    run = lint(repo, "coder.go", go)
    got = {(f.code, f.span.line, f.span.col): f for f in run.active}
    date = got[("PC102", *at(go, "%s\n</env>"))]
    # the static runs after it (the outer format's "\n" and the LSP return are one run with the tag)
    assert date.tokens_at_risk == tokens("\n</env>\n<project>\n") + tokens("\n</project>\n# LSP\n" + lsp)
    assert ("PC107", *at(go, "%s\n</project>")) in got  # the directory tree (tools.ListDirectoryTree)


def test_python_prompts_built_by_percent_formatting_methods_and_messages(repo):
    """`"..." % value`, a class method returning `SystemMessage(content=...)` and one
    returning an f-string (browser-use's task prompts): each was 0 prompts."""
    py = ("from datetime import datetime\nfrom langchain_core.messages import SystemMessage\n\n"
          "P_PROMPT = 'Today is %s. " + LONG + "' % datetime.now().strftime('%d/%m/%Y')\n\n"
          "class TaskPrompt:\n    def get_system_message(self, session_id):\n"
          "        return SystemMessage(content=f\"Session {session_id}. " + LONG + "\")\n\n"
          "    def get_adaptation_prompt(self, task):\n        return f\"Adapt it. {task}\"\n")
    run = lint(repo, "task_prompts.py", py)
    got = {(f.code, f.span.line, f.span.col): f for f in run.active}
    pct = got[("PC102", *at(py, "%s"))]
    assert pct.match == "%s (datetime.now().strftime('%d/%m/%Y'))"  # named by its value, not `%s`
    assert ("PC109", *at(py, "session_id}")) in got
    fmt = lint(repo, "fmt.py", 'from datetime import datetime\nP_PROMPT = "Today is {}. ' + LONG
               + '".format(datetime.now().strftime("%d/%m/%Y"))\n')
    (f,) = fmt.active
    assert f.match == '{} (datetime.now().strftime("%d/%m/%Y"))'  # the message named `{}`


def test_claude_code_file_references_are_snapshots(repo):
    """`@package.json` in a Claude Code command puts the file's content in the prompt."""
    md = ("---\ndescription: Review configuration\n---\n\nReview these files:\n- Package: @package.json\n"
          "- Env: @.env\n\nWrite to me at dev@example.com.\n\n```python\n@app.route('/x')\n```\n" + LONG)
    run = lint(repo, ".claude/commands/review.md", md)
    assert found(run) == [("PC107", *at(md, "@package.json")), ("PC107", *at(md, "@.env"))]


@pytest.mark.parametrize("expr,code", [
    ("datetime.today().strftime('%A, %B %-d, %Y')", "PC102"),   # guacamole's system prompt: a date, not a time
    ("datetime.now():%Y-%m-%d", "PC102"),
    ("time.strftime('%H:%M')", "PC101"),
    ("datetime.now().year", "PC112"),
])
def test_python_date_formats_and_years(repo, expr, code):
    py = f'from datetime import datetime\nimport time\nSYSTEM_PROMPT = f"It is {{{expr}}}. {LONG}"\n'
    run = lint(repo, "d.py", py)
    (f,) = run.active
    assert (f.code, f.span.line, f.span.col) == (code, *at(py, expr.split(":")[0]))
    assert f.severity == {"PC101": "error", "PC102": "warning", "PC112": "info"}[code]


@pytest.mark.parametrize("expr,code", [
    ("dayjs().format('YYYY-MM-DD')", "PC102"),
    ("format(new Date(), 'yyyy-MM-dd')", "PC102"),
    ("dayjs().format('YYYY-MM-DD HH:mm')", "PC101"),
    ("new Date().getFullYear()", "PC112"),
    ("new Date().toISOString()", "PC101"),
])
def test_typescript_date_formats_and_years(repo, expr, code):
    ts = f"export const systemPrompt = `It is ${{{expr}}}. {LONG}`;\n"
    (f,) = lint(repo, "d.ts", ts).active
    assert (f.code, f.span.line, f.span.col) == (code, *at(ts, expr))


@pytest.mark.parametrize("expr,code", [
    ('time.Now().Format("1/2/2006")', "PC102"),
    ('time.Now().Format("Jan 2, 2006")', "PC102"),
    ('time.Now().Format("2006-01-02 15:04")', "PC101"),
    ("time.Now().Year()", "PC112"),
])
def test_go_date_layouts_and_years(repo, expr, code):
    go = f'package p\n\nimport "fmt"\n\nfunc systemPrompt() string {{\n\treturn fmt.Sprintf("It is %v. {LONG}", {expr})\n}}\n'
    (f,) = lint(repo, "d.go", go).active
    assert (f.code, f.span.line, f.span.col) == (code, *at(go, "%v"))  # where the value lands


# ----------------------------------------------------------------------------- false findings

def test_jinja_block_sets_render_where_they_are_used(repo):
    """All-Hands-AI/OpenHands codeact_agent/system_prompt.j2: `{% set X %}...{% endset %}`
    blocks, joined by `{% set P = A + B %}` and rendered at the end, were values of unknown
    kind where they stood; the docs of the agent's skills inside one are stable, and a value in
    a block is found where it is written."""
    j2 = ("{% set INTRO %}\nYou are a coding agent.\n" + LONG + "\n{% endset %}\n"
          "{% set TOOLS %}\nYou can call these functions:\n{{ agent_skills_docs }}\n" + LONG + "\n{% endset %}\n"
          "{% set CLOSING %}\nSession {{ session_id }}.\n" + LONG + "\n{% endset %}\n"
          "{% set PREFIX = INTRO + TOOLS %}\n{{ PREFIX -}}\n{{- CLOSING }}\n")
    run = lint(repo, "system_prompt.j2", j2)
    (f,) = run.active
    assert (f.code, f.span.line, f.span.col) == ("PC109", *at(j2, "{{ session_id }}"))
    # the blocks' text, joined as rendered: one run to the (stable) docs, one from them to the value
    assert f.token_index == tokens("\nYou are a coding agent.\n" + LONG + "\n\nYou can call these functions:\n") + \
        tokens("\n" + LONG + "\n\nSession ")


def test_constants_of_the_file_and_imported_json_are_stable(repo):
    """anthropics/anthropic-quickstarts customer-support-agent/app/api/chat/route.ts: a
    `const USE_CATEGORIES = true` condition and a list built from an imported JSON file were
    values of unknown kind; the retrieved context inside `isRagWorking ? ... : ...` is
    retrieved content (it was unknown)."""
    ts = ("import categories from './categories.json';\n\n"
          "export async function POST(req: Request) {\n"
          "  let retrievedContext = '';\n  let isRagWorking = false;\n"
          "  try {\n    retrievedContext = await retrieveContext(req);\n    isRagWorking = true;\n"
          "  } catch (e) {\n    retrievedContext = '';\n  }\n"
          "  const USE_CATEGORIES = true;\n"
          "  const categoryList = categories.items.map((c) => c.id).join(', ');\n"
          "  const categoriesContext = USE_CATEGORIES ? `Categories: ${categoryList}.` : '';\n"
          "  const systemPrompt = `You are a support assistant.\n"
          "  ${isRagWorking ? `${retrievedContext}` : 'No information found.'}\n"
          "  ${categoriesContext}\n  " + RULES * 20 + "\n"
          "  ${USE_CATEGORIES ? '\"matched_categories\": [],' : ''}\n  " + RULES * 20 + "`;\n"
          "  return anthropic.messages.create({ model: 'claude-sonnet-4-5', system: systemPrompt, messages: [] });\n}\n")
    run = lint(repo, "route.ts", ts)
    assert found(run) == [("PC110", *at(ts, "retrievedContext}` :"))]


def test_speaker_labels_and_deployment_configuration_are_not_per_user(repo):
    """semantic-kernel's ChatSkill/Chat skprompt.txt: `{{$user}}` and `{{$bot}}` open the lines
    of a transcript ("Human:"); steel-experiments/cassandra-discord's system.hbs:
    `{{organization.timezone}}` is the deployment's, not a user's. A user's own field is still
    per-user, and so is a name that opens a transcript line."""
    sk = "A chat with an assistant.\n\n{{$user}}I have a question.\n{{$bot}}Go on!\n" + LONG + "\n{{$history}}\n"
    assert found(lint(repo, "Chat/skprompt.txt", sk)) == []
    hbs = "You are {{agent.name}} for {{organization.name}}.\nOrganization timezone: {{organization.timezone}}\n" + LONG
    assert found(lint(repo, "system.hbs", hbs)) == []
    hbs = "Your timezone: {{user.timezone}}\n" + LONG
    assert found(lint(repo, "user.hbs", hbs)) == [("PC108", *at(hbs, "{{user.timezone}}"))]
    sk = "This is a conversation between {{$firstName}} and you.\n{{$firstName}}: I have a question.\n" + LONG
    assert ("PC108", *at(sk, "{{$firstName}}")) in found(lint(repo, "ChatGPT/skprompt.txt", sk))


def test_catalogue_loops_are_stable(repo):
    """ktn1234/maiar-ai pipeline_generate.liquid: loops over the plugin catalogue and each
    plugin's executors; the memories after them are still retrieved content."""
    liquid = ("<plugins>\n{% for p in availablePlugins %}\n  <{{p.id}}> {{ p.description }}\n"
              "  {% for ex in p.executors %}\n    - {{ ex.name }}: {{ ex.description }}\n  {% endfor %}\n"
              "{% endfor %}\n</plugins>\n<rules>\n" + RULES * 20 + "\n</rules>\n<memories>\n{{ relatedMemories }}\n"
              "</memories>\n" + LONG)  # the loops before 300 static tokens: long enough for an unknown value
    assert found(lint(repo, "generate.liquid", liquid)) == [("PC110", *at(liquid, "{{ relatedMemories }}"))]


def test_go_template_actions_in_a_text_file_are_read_as_go_templates(repo):
    """droot/kubectl-ai pkg/agent/systemprompt_template_default.txt: `{{if .X}}`, `{{end}}` and
    `{{.ToolsAsJSON}}` were values of unknown kind; a clock in one is still found."""
    txt = ("You are a Kubernetes assistant.\n\n{{if .EnableToolUseShim }}\n## Tools\n{{.ToolsAsJSON}}\n{{end}}\n"
           "Current time: {{.CurrentTime}}\n" + RULES * 40 + "\n{{if .EnableToolUseShim -}}\nUse JSON.\n{{- end}}\n")
    run = lint(repo, "prompts/systemprompt_template_default.txt", txt)
    assert found(run) == [("PC101", *at(txt, "{{.CurrentTime}}"))]


def test_a_json_file_that_is_not_json_is_one_rule(repo):
    """promptfoo's examples/anthropic/chat-prompt.json (a Nunjucks message list, its tags split
    by a formatter) was PC001, failing CI, while other invalid JSON was skipped in silence. Now:
    never a finding; a template that renders JSON is linted as one; anything else is a note."""
    mangled = ('[\n    {% for message in messages %\n    }\n  {\n        "role": "{{ message.role }}",\n'
               '        "content": "{{ message.content }}"\n    }{% if not loop.last %\n    },\n    {% endif %\n'
               '    }\n{% endfor %\n    }\n]')
    run = lint(repo, "chat-prompt.json", mangled)
    assert run.active == [] and [p for p, _ in run.notes] == ["chat-prompt.json"]
    assert "not JSON" in run.notes[0][1] and "line 2" in run.notes[0][1]
    nunjucks = '[{"role": "system", "content": "Today is {{ now }}. ' + LONG + '"}\n{% for m in history %},{"role": "user", "content": "{{ m }}"}{% endfor %}]'
    run = lint(repo, "nunjucks.json", nunjucks)
    assert found(run) == [("PC101", *at(nunjucks, "{{ now }}"))]
    run = lint(repo, "body.json", '\'{"messages": [{"role": "user", "content": "Hello"}]}\'')
    assert run.active == [] and "not JSON" in run.notes[0][1]


# ----------------------------------------------------------------------------- other defects

def test_a_long_concatenation_keeps_each_value_where_it_is(repo):
    """From ~10 operands a `+` chain was one value at its first line, its tokens miscounted."""
    parts = ['    "You are a helpful assistant for Acme. " +\n', '    f"Today is {date.today()}. " +\n']
    parts += [f'    "Rule {k}: answer politely and cite sources. " +\n' for k in range(14)]
    py = "from datetime import date\nSYSTEM_PROMPT = (\n" + "".join(parts) + '    ""\n)\n'
    (f,) = lint(repo, "concat.py", py).active
    assert (f.code, f.span.line, f.span.col) == ("PC102", *at(py, "date.today()"))
    assert f.token_index == tokens("You are a helpful assistant for Acme. Today is ")
    assert f.tokens_at_risk == tokens(". " + "".join(f"Rule {k}: answer politely and cite sources. " for k in range(14)))


@pytest.mark.parametrize("name,content,needle", [
    ("unclosed_var.j2", "Today {{ now }} " + LONG + " {{ oops", "{{ oops"),
    ("unclosed_if.j2", "Intro.\nSay {% if x %}Today {{ now }} " + LONG, "{% if x %}"),
    ("unknown_tag.j2", "Intro.\nLine two {% frobnicate %} and more.\n", "{% frobnicate %}"),
    ("unclosed.hbs", "Intro.\nSay {{#if a}}Today {{ now }} " + LONG, "{{#if a}}"),
    ("unclosed.liquid", "Intro.\n{% if a %}{{ now }} " + LONG, "{% if a %}"),
    ("unclosed.tmpl", "Intro.\n{{ if .A }}{{ .Now }} " + LONG, "{{ if .A }}"),
])
def test_syntax_errors_are_reported_where_they_are(repo, name, content, needle):
    """Jinja's errors were at 1:1 of their line (Jinja gives no column), unclosed Liquid and Go
    blocks at the end of the file: each is now at the tag that is unclosed or unknown."""
    run = lint(repo, name, content)
    (f,) = [f for f in run.active if f.code == "PC001"]
    assert (f.span.line, f.span.col) == at(content, needle)


def test_a_duplicated_json_key_the_last_wins(repo):
    one = '{"role": "system", "content": "Today {{ now }}. ' + LONG + '"}'
    two = '{"role": "system", "content": "Static. ' + LONG + '"}'
    text = '{"model": "gpt-4o", "messages": [' + two + '], "messages": [' + one + ']}'
    assert found(lint(repo, "dup.json", text)) == [("PC101", *at(text, "{{ now }}"))]
    text = '{"model": "gpt-4o", "messages": [' + one + '], "messages": [' + two + ']}'
    assert found(lint(repo, "dup2.json", text)) == []


def test_a_named_file_with_no_prompt_and_a_prompt_past_the_variant_limit_say_so(repo):
    run = lint(repo, "settings.json", '{"theme": "dark", "retries": 3}')
    assert run.notes == [("settings.json", "holds no prompt lint reads; see `docs/lint.md` (What it reads) for "
                                           "the shapes each kind of file is read in")]
    # 70 conditionals: the first variant and one per alternative would be 71; 64 are checked
    j2 = "".join(f"{{% if c{k} %}}Option {k}.{{% else %}}Other {k}.{{% endif %}}\n" for k in range(70)) + LONG
    run = lint(repo, "many.j2", j2)
    assert any("more than 64 variants" in m and "an alternative none of them takes" in m for _, m in run.notes)
    j2 = "".join(f"{{% if c{k} %}}Option {k}.{{% else %}}Other {k}.{{% endif %}}\n" for k in range(8)) + LONG
    assert lint(repo, "eight.j2", j2).notes == []  # 2**8 combinations, but every alternative is checked


# ----------------------------------------------------------------------------- the held-out set's classes

def test_printf_verbs_in_a_go_prompt_constant_filled_elsewhere_are_values(repo):
    """spance/autoglm-go constants/prompt.go: `const DefaultEnSystemPrompt = "The current date:
    %s ..."`, filled by fmt.Sprintf in another file: the verb is a value, and its label says
    it is a date. A constant this file formats itself is read through its Sprintf (once)."""
    go = ('package constants\n\nconst (\n\tDefaultSystemPrompt = `\n"The current date: %s\n# Setup\n'
          + LONG + '\n`\n)\n')
    (f,) = lint(repo, "prompt.go", go).active
    assert (f.code, f.span.line, f.span.col, f.match) == ("PC102", *at(go, "%s"), "%s")
    go = ('package p\n\nimport (\n\t"fmt"\n\t"time"\n)\n\nconst basePrompt = "Now: %s. ' + LONG + '"\n\n'
          'func SystemPrompt() string {\n\treturn fmt.Sprintf(basePrompt, time.Now().String())\n}\n')
    (f,) = lint(repo, "p.go", go).active
    assert (f.code, f.span.line, f.span.col) == ("PC101", *at(go, "%s"))


def test_memory_and_knowledge_names_and_loops_over_unknown_items(repo):
    """san-all/wanwu's agent prompt: `{{ memory_variables }}`, `{{ tools_pre_retriever }}` are
    retrieved content; contoso-creative-writer's writer.prompty: a loop over `products` (the
    request's items) before ~130 static tokens is a value, where an unknown variable needs 256."""
    j2 = "Variables:\n{{ memory_variables }}\n{{ knowledge_snippets }}\n{{ tools_pre_retriever }}\n" + LONG
    assert [c for c, *_ in found(lint(repo, "agent.j2", j2))] == ["PC110", "PC110", "PC110"]
    j2 = "# Products\n{% for product in products %}\n## {{product.title}}\n{{product.content}}\n{% endfor %}\n" + LONG
    assert found(lint(repo, "writer.j2", j2)) == [("PC111", *at(j2, "{% for product in products %}"))]
    j2 = "# Tools\n{% for tool in tools %}\n- {{tool.name}}: {{tool.description}}\n{% endfor %}\n" + LONG
    assert found(lint(repo, "tools.j2", j2)) == []  # a catalogue is stable
    hbs = "{{#with organization}}We are {{name}}.{{/with}}\n" + LONG
    assert found(lint(repo, "org.hbs", hbs)) == []  # {{#with}} is a conditional, not a list


def test_a_format_string_with_escaped_braces_is_not_a_jinja_template(repo):
    """opea-project/GenAIExamples FinanceAgent/prompts/research_prompt.py: a prompt constant with
    `{history}` fields and `{{"tool": ...}}` escaped braces (LangChain's f-string format) was read
    as Jinja, so its fields were text; a constant with `{% %}` or only `{{ }}` is still Jinja."""
    py = ('PROMPT = """You can call tools.\nTOOL CALL: {{"tool": "t1", "args": {{"a": "v"}}}}\n'
          '== Previous turns ==\n{thread_history}\n== End ==\n' + LONG + '\nUSER MESSAGE: {input}\n"""\n')
    assert found(lint(repo, "research_prompt.py", py)) == [("PC110", *at(py, "{thread_history}"))]
    py = 'SYSTEM_PROMPT = """Today {{ today }}. ' + LONG + '"""\n'
    assert found(lint(repo, "j.py", py)) == [("PC102", *at(py, "{{ today }}"))]


def test_the_assistants_own_name_and_fields_of_a_reported_loop(repo):
    """PhongHuaThai/LLM-with-langchain-ragas: "You are called {name}" names the assistant (set per
    deployment), not a user; a customer's name is still per-user. The fields of items in a loop
    over retrieved documents are the loop's, which is reported once (each field was reported
    again before)."""
    py = ('from langchain_core.prompts import ChatPromptTemplate\n'
          'p = ChatPromptTemplate.from_messages([("system", "You are called {name}. ' + LONG + '"), ("human", "{q}")])\n')
    assert found(lint(repo, "bot.py", py)) == []
    py = ('from langchain_core.prompts import ChatPromptTemplate\n'
          'p = ChatPromptTemplate.from_messages([("system", "The customer is {name}. ' + LONG + '"), ("human", "{q}")])\n')
    assert found(lint(repo, "customer.py", py)) == [("PC108", *at(py, "{name}"))]
    j2 = "# Sources\n{% for item in documents %}\nid: {{ item.id }}\ntext: {{ item.content }}\n{% endfor %}\n" + LONG
    assert found(lint(repo, "rag.j2", j2)) == [("PC110", *at(j2, "{% for item in documents %}"))]
