"""The classes of problem a third trial of lint found on 25 real templates it had never seen
(75% recall of the flagged groups, 23 of 53 findings off the expected lines, 3 of 13 clean
templates flagged): each rebuilt from the real template's structure with invented wording (the
repository and file named), as a test that failed before. Expected places are computed from
the text itself (where the value is written); the expected codes were worked out by hand.
"""

from __future__ import annotations

from test_lint_classes import LONG, RULES, at, found, lint, repo  # noqa: F401 - repo is the fixture


def inner(text: str, needle: str) -> tuple[int, int]:
    """(line, column) of the first character inside the braces of ``needle`` (``{x}``)."""
    line, col = at(text, needle)
    return line, col + 1


# ----------------------------------------------------- A: a loop's items take the iterable's kind

def test_fields_of_a_loops_items_are_of_the_iterables_kind_not_their_own_names(repo):
    """LatifahFall/Troubleshooting-Agent system_prompt.j2: `{{ name }}` inside `{% for name,
    description in capabilities.items() %}` is one of the agent's functions, not a user's name
    (PC108, an error, before); over items of unknown kind only the loop is reported.
    ravshansbox/oh-my-pi custom-system-prompt.md: `{{name}}` in `{{#list toolDescriptions}}`,
    `{{escapeXml name}}` in `{{#list skills}}` / `{{#list rules}}` (the helper's value is its
    argument: `name`, in a catalogue). A Go `{{ range .Tools }}` item's `.Name` likewise; a
    name read from the scope above the loop (`{{../userName}}`) is still per-user."""
    j2 = ("## Functions\n\nThe agent may call exactly these:\n\n"
          "{% for name, description in entries.items() %}\n"
          "- `{{ name }}({{ description.signature }})` -> {{ description.returns }}\n"
          "{% endfor %}\n\n" + LONG)
    assert found(lint(repo, "agent.j2", j2)) == [("PC111", *at(j2, "{% for name, description"))]

    md = ("{{#if toolDescriptions.length}}\nTools you can use:\n"
          '{{#list toolDescriptions prefix="- " join="\\n"}}{{name}}: {{description}}{{/list}}\n{{/if}}\n'
          "{{#if skills.length}}\n<skills>\n{{#list skills join=\"\\n\"}}\n<skill>\n"
          "    <name>{{escapeXml name}}</name>\n    <description>{{escapeXml description}}</description>\n"
          "{{#list globs join=\"\\n\"}}      <glob>{{escapeXml this}}</glob>\n{{/list}}"
          "</skill>\n{{/list}}\n</skills>\n{{/if}}\n" + LONG)
    assert found(lint(repo, "prompts/system/custom-system-prompt.md", md)) == []

    hbs = "{{#each tools}}- {{name}} (ask {{../userName}} first)\n{{/each}}\n" + LONG
    run = lint(repo, "tools.hbs", hbs)
    assert found(run) == [("PC108", *at(hbs, "{{../userName}}"))]

    hbs = "Reply to {{escapeXml userName}} politely.\n" + LONG
    (f,) = lint(repo, "greet.hbs", hbs).active
    assert (f.code, f.span.line, f.span.col, f.values["value"]) == ("PC108", *at(hbs, "{{escapeXml"), "userName")

    tmpl = "{{ range .Tools }}- {{ .Name }}: {{ .Description }}\n{{ end }}\n" + LONG
    assert found(lint(repo, "system.tmpl", tmpl)) == []


# ------------------------------------ B: a deployment's fixed knowledge is its configuration

def test_loops_over_a_deployments_knowledge_are_stable_as_its_policies_are(repo):
    """inform199751-crypto/universal-ai-helpdesk prompts/system.j2: loops over the help desk's
    `faq`, `policies`, `glossary` and `escalation` rules, all loaded with the deployment's
    configuration; `faq`, `glossary` and `escalation` were PC111 while `policies` was not.
    LatifahFall/Troubleshooting-Agent: `capabilities.items()` iterates the capabilities (a
    catalogue). A loop over the request's own items (`open_orders`) is still reported."""
    j2 = ("You are the front desk assistant of {{ company.name }}.\n\n## Opening hours\n- {{ company.hours }}\n\n"
          "## Never say\n{% for p in company.forbidden_phrases %}- {{ p }}\n{% endfor %}\n"
          "## Common questions\n{% for item in faq %}Q: {{ item.q }}\nA: {{ item.a }}\n\n{% endfor %}"
          "## Rules\n{% for item in policies %}### {{ item.title }}\n{{ item.content }}\n\n{% endfor %}"
          "## Terms\n{% for item in glossary %}- {{ item.term }}: {{ item.meaning }}\n{% endfor %}\n"
          "## When to hand over\n{% for item in escalation %}- On \"{{ item.trigger }}\" ({{ item.level }}):\n"
          "  reply \"{{ item.script }}\" and stop.\n{% endfor %}\n"
          "## Functions\n{% for name, description in capabilities.items() %}\n"
          "- `{{ name }}({{ description.signature }})`\n{% endfor %}\n" + LONG)
    assert found(lint(repo, "prompts/system.j2", j2)) == []
    j2 = "## Your open orders\n{% for o in open_orders %}- {{ o.number }}: {{ o.status }}\n{% endfor %}\n" + LONG
    assert found(lint(repo, "orders.j2", j2)) == [("PC111", *at(j2, "{% for o in open_orders %}"))]


# ------------------------------------------------------- misses: prompts built in code

def test_go_prompt_built_with_a_strings_builder(repo):
    """soyeahso/hunter3 internal/agent/system_prompt.go: `var b strings.Builder`, then
    `b.WriteString(fmt.Sprintf("Current date: %s\\n", time.Now().Format("2006-01-02")))`, the
    channel and user under `if`s, guidelines and a tool section written with `fmt.Fprintf(&b,
    ...)` in a `range` over the tools, then `return b.String()`: the file read as empty. The
    date is PC102 at its verb, the channel id PC109, the user's name PC108; the tools' fields
    are of the tools' kind (a catalogue)."""
    go = ('package agent\n\nimport (\n\t"fmt"\n\t"strings"\n\t"time"\n)\n\n'
          'type PromptConfig struct {\n\tChannelID string\n\tUserName  string\n\tTools     []ToolDef\n}\n\n'
          '// BuildSystemPrompt writes the assistant\'s instructions.\n'
          'func BuildSystemPrompt(cfg PromptConfig) string {\n\tvar b strings.Builder\n\n'
          '\tb.WriteString(fmt.Sprintf("Today is %s\\n", time.Now().Format("2006-01-02")))\n\n'
          '\tif cfg.ChannelID != "" {\n\t\tb.WriteString(fmt.Sprintf("Room: %s\\n", cfg.ChannelID))\n\t}\n'
          '\tif cfg.UserName != "" {\n\t\tfmt.Fprintf(&b, "Speaking with: %s\\n", cfg.UserName)\n\t}\n'
          '\tb.WriteByte(\'\\n\')\n\tb.WriteString("Rules:\\n")\n'
          '\tb.WriteString("' + LONG + '\\n")\n'
          '\tif len(cfg.Tools) > 0 {\n\t\tb.WriteString("\\n## Tools\\n\\n")\n'
          '\t\tfor _, t := range cfg.Tools {\n\t\t\tfmt.Fprintf(&b, "### %s\\n%s\\n", t.Name, t.Description)\n\t\t}\n\t}\n'
          '\tout := b.String()\n\treturn out\n}\n')
    run = lint(repo, "internal/agent/system_prompt.go", go)
    assert found(run) == [("PC102", *at(go, "%s", 0)), ("PC108", *at(go, "%s", 2)), ("PC109", *at(go, "%s", 1))]
    assert [d for d in run.notes] == []


def test_python_prompt_held_in_a_message_dict(repo):
    """CryptoDevWill/ArcAngelGPT data/conversation.py: `initial_system_prompt = {"role": "system",
    "content": (f"The current time is {time}. " f"The current date is {date}. " ...)}`, a
    message dict (not a string) under a prompt-like name, read as empty before. Each value of
    the volatile header is named where it is written; a list of such messages likewise (the
    last user message is outside the cacheable region); a dict that is no message is not read."""
    py = ('import os\nfrom settings import username, project_root\nfrom clock import now_and_today\n\n'
          'time, date = now_and_today()\n\n'
          'initial_system_prompt = {"role": "system", "content": (\n'
          '    f"It is {time} right now. "\n'
          '    f"Today is {date}. "\n'
          '    f"The machine runs {os.name}. "\n'
          '    f"You work for {username}. "\n'
          '    f"Your project folder is {project_root}; stay inside it. " "' + LONG + '"\n'
          ')}\n\nhistory = [initial_system_prompt]\n')
    assert found(lint(repo, "data/conversation.py", py)) == [  # an f-string's value is located inside its braces
        ("PC101", *inner(py, "{time}")), ("PC102", *inner(py, "{date}")), ("PC107", *inner(py, "{os.name}")),
        ("PC107", *inner(py, "{project_root}")), ("PC108", *inner(py, "{username}"))]
    py = ('from datetime import date\n\nchat_prompt = [\n'
          '    {"role": "system", "content": f"Today is {date.today()}. ' + LONG + '"},\n'
          '    {"role": "user", "content": "{question}"},\n]\n'
          'prompt_options = {"temperature": 0, "content_filter": True}\n')
    assert found(lint(repo, "chat.py", py)) == [("PC102", *inner(py, "{date.today()}"))]


def test_exported_function_returning_a_prompt_literal_whatever_its_name(repo):
    """notunk0wn23/Cypher src/prompts.js: `export function base(models, tools) { return `You are
    Cypher ... The current date is ${new Date().toISOString().split('T')[0]}. ...` }`: `base` is
    no prompt-like name, so it was not read; the literal opens as a system prompt does. An
    exported function returning a short literal that is no prompt (a log line) is still not
    read, so its clock call is not reported."""
    js = ("export function base(models, tools) {\n    return `\nYou are Quill, a careful writing assistant.\n"
          "The current date is ${new Date().toISOString().split('T')[0]}.\n\nModels:\n"
          "${models.map(model => model.id).join('\\n\\n')}\n\n" + LONG + "\n\nTools:\n${tools.join('\\n\\n')}\n    `;\n}\n")
    assert found(lint(repo, "src/prompts.js", js)) == [("PC102", *at(js, "new Date()"))]
    js = ("export function savedLine(file) {\n  return `Saved ${file} at ${new Date().toISOString()}; "
          "the editor keeps the previous copy until you close it.`;\n}\n")
    run = lint(repo, "src/log.js", js)
    assert found(run) == [] and any("holds no prompt" in m for _, m in run.notes)


# ---------------------------------------------------------- a month rolls monthly

def test_a_month_only_format_is_written_again_every_month_not_every_day(repo):
    """nkasmanoff/pi-chat prompt.py: `current_month_name = time.strftime("%B")` and
    `current_year = time.strftime("%Y")` in "Current date: {current_month_name} {current_year}"
    before the instructions: the month is a date in the prefix (PC102, a warning as dates are)
    but rolls monthly, and the message said "every day". A Go "January 2006" layout and a
    moment 'MMMM YYYY' format likewise; a day's date still says "every day"."""
    py = ('import time\n\ncurrent_month_name = time.strftime("%B")\ncurrent_year = time.strftime("%Y")\n\n'
          'system_prompt = f"""You are Pocket, a small helper on a home server.\n\n'
          'Current date: {current_month_name} {current_year}.\n\n' + LONG + '\n"""\n')
    fs = {f.code: f for f in lint(repo, "prompt.py", py).active}
    assert sorted((c, f.span.line, f.span.col) for c, f in fs.items()) == [
        ("PC102", *inner(py, "{current_month_name}")), ("PC112", *inner(py, "{current_year}"))]
    assert fs["PC102"].severity == "warning" and fs["PC102"].message.endswith("written again every month")
    go = ('package p\n\nimport (\n\t"fmt"\n\t"time"\n)\n\n'
          'func SystemPrompt() string {\n\treturn fmt.Sprintf("Month: %s. ' + LONG + '", time.Now().Format("January 2006"))\n}\n')
    (f,) = lint(repo, "p.go", go).active
    assert (f.code, f.span.line, f.span.col) == ("PC102", *at(go, "%s")) and f.message.endswith("every month")
    ts = "export const systemPrompt = `Period: ${moment().format('MMMM YYYY')}. " + LONG + "`;\n"
    (f,) = lint(repo, "p.ts", ts).active
    assert (f.code, f.span.line) == ("PC102", 1) and f.message.endswith("every month")
    py = 'from datetime import date\n\nSYSTEM_PROMPT = f"Today is {date.today()}. ' + LONG + '"\n'
    (f,) = lint(repo, "d.py", py).active
    assert f.code == "PC102" and f.message.endswith("written again every day")


# ------------------------------------------------- C: the assistant's persona configuration

def test_the_persona_the_prompt_introduces_as_the_assistant_is_configuration(repo):
    """kaseymallette/ai-persona-casper prompts/system.j2: "You are {{ identity.name }}, a
    {{ identity.function }}." then `identity.*`, `voice.*` (also nested:
    `voice.speech_markers.frequent`) and loops over `voice.must` and `process.constraints.items()`,
    a persona loaded from a config file: 15 PC111 warnings on a clean template before. The
    object introduced as the assistant ("You are {{ identity.name }}") is the assistant's;
    `voice.*`, `process.*` are the persona's configuration by name. A value of unknown kind
    beside them is still reported, and "You are {{ user.name }}'s ..." is a user's name."""
    body = ("{{ identity.self_concept | capitalize }}.\n\n"
            "You hold these traits together: {{ identity.traits | join(\", \") }}.\n\n"
            "Main rule: {{ identity.core_directive }}\n\n# Voice\n\n"
            "Your pace is {{ voice.pace | join(\", \") }}. You sound {{ voice.register }}.\n\nAlways:\n"
            "{% for item in voice.must -%}\n- {{ item }}\n{% endfor %}\n\n"
            "Words you lean on: {{ voice.speech_markers.frequent | map(\"tojson\") | join(\", \") }}.\n\n"
            "# Method\n\nYou keep to these limits:\n"
            "{% for key, value in process.constraints.items() -%}\n- {{ key }}: {{ value }}\n{% endfor %}\n\n"
            + LONG * 3 + "\n{{ seed }}\n")
    j2 = "You are {{ identity.name }}, a {{ identity.function }}.\n\n" + body
    assert found(lint(repo, "prompts/system.j2", j2)) == []
    j2 = "You are {{ identity.name }}. Ticket priority: {{ ticket.priority }}.\n\n" + body
    assert found(lint(repo, "prompts/ticket.j2", j2)) == [("PC111", *at(j2, "{{ ticket.priority }}"))]
    j2 = "You are {{ user.name }}'s assistant; their plan is {{ user.plan }}.\n\n" + LONG
    assert found(lint(repo, "prompts/owner.j2", j2)) == [("PC108", *at(j2, "{{ user.name }}")),
                                                         ("PC108", *at(j2, "{{ user.plan }}"))]
