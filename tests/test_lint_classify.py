"""What a template value is, from its name and its source (promptcache.lint.classify), and the
two examples of issue 20: each fails CI by default with the value named."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from promptcache.cli import app
from promptcache.diagnose.rules import load_rules
from promptcache.lint.checks import _classifier
from promptcache.lint.classify import Classifier, names_in, parse_entry, words
from promptcache.lint.model import Slot, Span

FILLER = " ".join(["Answer from the handbook and cite the section you rely on, in plain English."] * 170)


@pytest.mark.parametrize("name,want", [
    ("callerAgentId", ("caller", "agent", "id")),
    ("threadId", ("thread", "id")),
    ("accountId", ("account", "id")),
    ("HTTPRequestID", ("http", "request", "id")),
    ("$json.session_id", ("json", "session", "id")),
    ("git-branch", ("git", "branch")),
    ("workingDir", ("working", "dir")),
    ("sys.conversation_id", ("sys", "conversation", "id")),
    ("turn2", ("turn",)),
    ("getCurrentDate", ("get", "current", "date")),
])
def test_words(name, want):
    assert words(name) == want


def test_names_in_expressions():
    assert names_in("formatDate(user.created_at, 'YYYY') | upper") == ("formatDate", "user.created_at", "upper")
    assert names_in("$('Chat Trigger').item.json.sessionId") == ("item.json.sessionId",)
    assert names_in("ctx?.user?.profile") == ("ctx.user.profile",)
    assert names_in("#sys.query#") == ("sys.query",)
    assert names_in(".Foo.Bar") == ("Foo.Bar",)  # a Go template field
    assert names_in("if isAdmin") == ("isAdmin",)  # keywords are not names


def test_vocabulary_entries_match_the_end_the_whole_or_the_start():
    assert parse_entry("session id").matches(("caller", "session", "id"))
    assert not parse_entry("session id").matches(("session", "id", "map"))
    assert parse_entry("=name").matches(("name",)) and not parse_entry("=name").matches(("agent", "name"))
    assert parse_entry("user *").matches(("user", "location")) and not parse_entry("user *").matches(("user",))


def slot(*names: str, source: str = "{{ x }}") -> Slot:
    return Slot(Span.point("t", 1, 1), source, "variable", (source,), names)


CLASSES = {
    "callerAgentId": "session-id-in-prefix", "threadId": "session-id-in-prefix", "chatId": "session-id-in-prefix",
    "conversation_id": "session-id-in-prefix", "channelId": "session-id-in-prefix",
    "requestId": "request-id-in-prefix", "trace_id": "request-id-in-prefix", "messageId": "request-id-in-prefix",
    "run_id": "request-id-in-prefix",
    "accountId": "user-data-before-shared", "user.profile": "user-data-before-shared", "profile": "user-data-before-shared",
    "customer.firstName": "user-data-before-shared",
    "platform": "environment-in-prefix", "workingDir": "environment-in-prefix", "gitBranch": "environment-in-prefix",
    "cwd": "environment-in-prefix",
    "turn": "counter-in-prefix", "stepCount": "counter-in-prefix", "iteration": "counter-in-prefix",
    "memories": "retrieved-content-in-prefix", "documents": "retrieved-content-in-prefix",
    "context": "retrieved-content-in-prefix", "chat_history": "retrieved-content-in-prefix",
    "currentDate": "date-in-prefix", "today": "date-in-prefix", "todayStr": "date-in-prefix",
    "current_date_time": "timestamp-in-prefix", "now": "timestamp-in-prefix", "timestampIso": "timestamp-in-prefix",
    "uuid": "uuid-in-prefix", "nonce": "random-id-in-prefix",
}


@pytest.mark.parametrize("name,rule", sorted(CLASSES.items()))
def test_names_classify(name, rule):
    got = _classifier(load_rules()).classify(slot(name))
    assert got is not None and got.rule is not None and got.rule.id == rule, got


@pytest.mark.parametrize("name", ["tools", "format_instructions", "agentName", "bot_name", "output_schema",
                                  "branch_name_convention", "model"])
def test_stable_names_are_stable(name):
    got = _classifier(load_rules()).classify(slot(name))
    assert got is not None and got.rule is None and got.by == "name"


@pytest.mark.parametrize("name", ["focus_area", "question", "x", "dateFormat", "sessionTimeoutHint"])
def test_unknown_names(name):
    """A name whose last words are not in any vocabulary is unknown (``dateFormat`` is a format,
    not a date)."""
    assert _classifier(load_rules()).classify(slot(name)) is None


@pytest.mark.parametrize("source,rule", [
    ("new Date().toISOString()", "timestamp-in-prefix"),
    ("new Date().toLocaleDateString('en-US', {weekday: 'long'})", "date-in-prefix"),
    ("new Date().toISOString().split('T')[0]", "date-in-prefix"),
    ("datetime.now().strftime(\"%Y-%m-%d\")", "date-in-prefix"),
    ("datetime.now().isoformat()", "timestamp-in-prefix"),
    ("time.Now().Format(\"2006-01-02\")", "date-in-prefix"),
    ("time.Now().Format(time.RFC3339)", "timestamp-in-prefix"),
    ("crypto.randomUUID()", "uuid-in-prefix"),
    ("uuid.NewString()", "uuid-in-prefix"),
    ("Math.random()", "random-id-in-prefix"),
    ("process.cwd()", "environment-in-prefix"),
    ("os.Getwd()", "environment-in-prefix"),
    ("$now", "timestamp-in-prefix"),
    ("$now.toFormat('yyyy-MM-dd')", "date-in-prefix"),
    ("$today", "date-in-prefix"),
    ("$execution.id", "request-id-in-prefix"),
    ("$flow.sessionId", "session-id-in-prefix"),
    ("!`git status`", "environment-in-prefix"),
])
def test_sources_classify_and_the_outermost_call_decides(source, rule):
    s = Slot(Span.point("t", 1, 1), source, "variable", (f"{{{{ {source} }}}}", source), names_in(source))
    got = _classifier(load_rules()).classify(s)
    assert got is not None and got.rule is not None and got.rule.id == rule, got


def test_trailing_format_words_are_dropped_and_ties_go_to_the_lower_code():
    rules = [r for r in load_rules() if r.id in ("timestamp-in-prefix", "date-in-prefix")]
    c = Classifier(rules, (), ("str", "iso"))
    assert c.by_name(["currentDateStr"]).rule.id == "date-in-prefix"
    assert c.by_name(["nowIso"]).rule.id == "timestamp-in-prefix"
    clash = replace(rules[1], options={**rules[1].options, "template_names": ["=now"]})  # date claims `now` too
    assert Classifier([rules[0], clash]).by_name(["now"]).rule.id == "timestamp-in-prefix"


# ----------------------------------------------------------------------------- issue 20's examples

@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".promptcache.toml").write_text("", encoding="utf-8")
    (tmp_path / "prompts").mkdir()
    return tmp_path


class Result:
    def __init__(self, res):
        assert res.exception is None, res.exception
        self.exit_code = int(res.return_value)
        self.stdout = res.stdout
        self.output = res.output


def run(*args):
    """``promptcache lint ARGS --format json`` in-process, with the exit code the CLI returns."""
    return Result(CliRunner().invoke(app, ["lint", *args, "--format", "json"], standalone_mode=False))


def test_issue_example_1_session_id_is_an_error_and_the_date_a_warning(repo):
    p = repo / "prompts" / "support.txt"
    p.write_text("Current date: {current_date}. Session {session_id}.\n" + FILLER + "\n", encoding="utf-8")
    res = run(str(p))
    assert res.exit_code == 1, res.output  # fails CI by default (--fail-on error)
    doc = json.loads(res.stdout)
    got = [(f["code"], f["severity"], f["location"]["line"], f["location"]["col"], f["facts"]["value"])
           for f in doc["findings"]]
    assert got == [("PC102", "warning", 1, 15, "current_date"), ("PC109", "error", 1, 39, "session_id")]
    sid = doc["findings"][1]
    assert sid["tokens_at_risk"] > 2_600 and "`{session_id}` renders a per-session identifier" in sid["message"]


def test_issue_example_2_the_date_is_named_as_a_date(repo):
    p = repo / "prompts" / "dated.md"
    p.write_text("Today's date is {{currentDate}}.\n" + FILLER + "\n", encoding="utf-8")
    res = run(str(p))
    doc = json.loads(res.stdout)
    (f,) = doc["findings"]  # the date, not "the static prefix is short"
    assert (f["code"], f["severity"], f["facts"]["value"]) == ("PC102", "warning", "currentDate")
    assert "renders the date" in f["message"] and f["tokens_at_risk"] > 2_600
    assert res.exit_code == 0  # a daily date is a warning: `--fail-on warning` makes it fail
    assert run(str(p), "--fail-on", "warning").exit_code == 1


def test_unknown_value_before_a_long_block_says_what_it_puts_at_risk(repo):
    p = repo / "prompts" / "writer.j2"
    p.write_text("Focus area: {{ focus_area }}.\n" + FILLER + "\n", encoding="utf-8")
    res = run(str(p))
    (f,) = json.loads(res.stdout)["findings"]
    assert (f["code"], f["severity"]) == ("PC111", "warning") and res.exit_code == 0
    assert f"the {f['tokens_at_risk']:,} static tokens after it are not cached" in f["message"]
    p.write_text("Focus area: {{ focus_area }}.\n" + FILLER[:400] + "\n", encoding="utf-8")  # a short block: quiet
    assert json.loads(run(str(p)).stdout)["findings"] == []
