"""Personal data in reports: by default a quoted name, account id, e-mail address or phone number
is shown as its kind and a salted fingerprint, in every format; the values only with --show-text."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from promptcache.diagnose import redact as rd
from promptcache.diagnose.redact import Evidence, Excerpt, fingerprint, redact
from promptcache.errors import ConfigError

from conftest import SAMPLES

LOG = SAMPLES / "support_bot.jsonl"


def personal_values() -> set[str]:
    """Every customer's name, id and e-mail in the support-bot sample, read from the log itself."""
    found: set[str] = set()
    for line in LOG.read_text().splitlines():
        system = json.loads(line)["messages"][0]["content"]
        m = re.search(r"speaking with (.+?) \(customer id (C-\d+), e-mail (\S+?)\)", system)
        assert m, system[:120]
        found |= {m.group(1), m.group(2), m.group(3), *m.group(1).split()}
    return found


def run(*args: str, env: dict | None = None) -> str:
    import os

    p = subprocess.run([sys.executable, "-m", "promptcache", *args], capture_output=True, text=True,
                       env={**os.environ, **(env or {})})
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture(autouse=True)
def fresh_key(monkeypatch):
    monkeypatch.setenv(rd.KEY_ENV, "11" * 32)
    rd._key.cache_clear()
    yield
    rd._key.cache_clear()


@pytest.mark.slow
def test_no_format_quotes_a_customer_by_default(tmp_path):
    """The support bot's system prompt starts with the customer's name, id and e-mail: every
    format quoted them (the HTML saying quoted values were redacted); now none does, and
    each shows the kinds and fingerprints."""
    values = personal_values()
    assert len(values) > 40
    reports = {"text": run("audit", str(LOG)), "json": run("audit", str(LOG), "-f", "json"),
               "markdown": run("audit", str(LOG), "-f", "markdown"),
               "csv": run("audit", str(LOG), "-f", "csv", "--table", "findings")}
    run("audit", str(LOG), "-f", "html", "-o", str(tmp_path / "r.html"))
    reports["html"] = (tmp_path / "r.html").read_text()
    reports["propose"] = run("propose", str(LOG))
    for fmt, text in reports.items():
        leaked = sorted(v for v in values if v in text)
        assert not leaked, (fmt, leaked[:5])
    assert "<name #" in reports["text"] and "<account id #" in reports["text"]
    finding = json.loads(reports["json"])["findings"][0]
    assert finding["rule"] == "user-data-before-shared"
    assert re.fullmatch(r"<name #[0-9a-f]{8}>", finding["evidence"]["value"])
    assert finding["evidence"]["value"] in finding["message"]
    # the values themselves with --show-text
    shown = json.loads(run("audit", str(LOG), "-f", "json", "--show-text"))["findings"][0]
    assert shown["evidence"]["value"] in values and "customer id C-" in shown["evidence"]["before"]


def test_reports_in_this_process_quote_no_customer():
    """The same in-process: the record, Markdown, HTML, CSV and text reports of the audit."""
    import io

    from promptcache.pipeline import AuditOptions, audit
    from promptcache.report.audit_records import audit_record
    from promptcache.report.audit_text import render_audit, render_findings
    from promptcache.report.formats import render_report
    from promptcache.report.terminal import console

    values = personal_values()
    res = audit([LOG], AuditOptions())
    buf = io.StringIO()
    con = console(file=buf, width=200)
    render_audit(res, con)
    render_findings(res, con)
    texts = {"json": json.dumps(audit_record(res), ensure_ascii=False), "text": buf.getvalue(),
             **{f: render_report(f, res, table="findings") for f in ("markdown", "html", "csv")}}
    for fmt, text in texts.items():
        leaked = sorted(v for v in values if v in text)
        assert not leaked, (fmt, leaked[:5])
        assert "name #" in text, fmt
    assert any(v in json.dumps(audit_record(audit([LOG], AuditOptions(show_text=True))), ensure_ascii=False)
               for v in values)


def test_the_rules_own_per_user_values_are_all_masked():
    """Whatever the user-data-before-shared rule's patterns take for a per-user value, quoted as
    the value of a finding, redaction masks whole, on the rule's own example logs, the
    support-bot sample and hand cases."""
    from promptcache.diagnose.rules import resolve

    rule = resolve("user-data-before-shared")
    texts = [m["content"] for case in rule.examples["logs"]["bad"] for r in case for m in r["messages"]]
    texts += [json.loads(line)["messages"][0]["content"][:400] for line in LOG.read_text().splitlines()[:20]]
    texts += ["Hello, Maria. Your balance is low.", "Dear Dr. Okafor,", "user: jdoe42 asks", "Customer name: Lee Wu",
              "Account no. 88-1234-5 is overdue.", "patient id=P00123; member #A77", "Hi Ann\nYou owe",
              "contact ana.silva@example.co.uk now", "tenant_id: t-9f8e7d"]
    checked = 0
    for pattern in rule.options["patterns"]:
        pat = re.compile(pattern)
        for text in texts:
            for m in pat.finditer(text):
                start, end = m.span("value") if "value" in pat.groupindex else m.span()
                quoted = Excerpt.value(text, start, end)  # as a finding quotes the value it found
                assert quoted.personal() is not None, (pattern, text, text[start:end])
                shown = quoted.render()
                assert re.search(r"<(name|email|account id) #[0-9a-f]{8}>", shown) and text[start:end] not in shown, shown
                checked += 1
    assert checked > 40


def test_kinds_and_fingerprints():
    text = ("You are speaking with Ana Silva (customer id C-635008, e-mail ana.silva@example.com, "
            "phone +44 20 7946 0958). Stripe customer cus_NffrFeUfNV2Hib.")
    got = redact(text)
    for kind in ("name", "account id", "email", "phone number"):
        assert f"<{kind} #" in got, (kind, got)
    for v in ("Ana Silva", "C-635008", "ana.silva@example.com", "+44 20 7946 0958", "cus_NffrFeUfNV2Hib"):
        assert v not in got and f"#{fingerprint(v)}>" in got, v
    assert "customer id <account id #" in got  # the words around a value stay
    assert redact("Rules: be brief; cite section 4.2 of the handbook.") == \
        "Rules: be brief; cite section 4.2 of the handbook."
    assert redact("key sk-ant-abcdefghijklmnop1234 ok") == "key <secret> ok"


def test_fingerprints_are_stable_salted_and_short(monkeypatch):
    import hashlib

    a = fingerprint("Ana Silva")
    assert re.fullmatch(r"[0-9a-f]{8}", a) and fingerprint("Ana Silva") == a and fingerprint("Ana Silvo") != a
    assert a != hashlib.blake2b(b"Ana Silva", digest_size=4).hexdigest()  # salted: not the plain hash
    monkeypatch.setenv(rd.KEY_ENV, "22" * 32)
    rd._key.cache_clear()
    assert fingerprint("Ana Silva") != a  # another key, another fingerprint
    monkeypatch.setenv(rd.KEY_ENV, "abc")
    rd._key.cache_clear()
    with pytest.raises(ConfigError, match="PROMPTCACHE_FINGERPRINT_KEY"):
        fingerprint("x")


def test_the_key_is_kept_private_and_reused(tmp_path, monkeypatch):
    monkeypatch.delenv(rd.KEY_ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    rd._key.cache_clear()
    a = fingerprint("Ana Silva")
    key = tmp_path / "promptcache" / "fingerprint.key"
    assert (key.stat().st_mode & 0o777) == 0o600 and len(bytes.fromhex(key.read_text().strip())) == 32
    rd._key.cache_clear()
    assert fingerprint("Ana Silva") == a  # the next run reads the same key
    # where it cannot be written, a key for this run only (the audit goes on)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(key))  # a file, not a directory
    rd._key.cache_clear()
    assert re.fullmatch(r"[0-9a-f]{8}", fingerprint("Ana Silva"))


def test_a_value_cut_off_from_its_cue_is_masked_whole():
    """The quote around a break shows 24 characters; the words that mark a value as personal
    may lie outside them, and the value may be cut at the quote's edge."""
    text = "System. You are speaking with Bartholomew Okonkwo-Smith; refunds take five days."
    start = text.index("refunds")
    ex = Excerpt.around(text, start, start + 1, width=14)
    assert "speaking" not in ex.text and "Smith" in ex.text
    shown = ex.render()
    assert "Smith" not in shown, shown
    assert f"<name #{fingerprint('Bartholomew Okonkwo-Smith')}>; refunds" in shown, shown
    assert "Smith" in ex.render(show=True)
    v = Excerpt.value(text, text.index("Okonkwo"), text.index(";"))
    assert v.render() == f"<name #{fingerprint('Bartholomew Okonkwo-Smith')}>"


def test_words_after_a_cue_that_are_no_name_stay_in_quotes():
    """``user note``, ``the user prefers``, ``hi there``: the rule's own pattern would take the
    next words for a name (tests/data/cases C15 and C22 quote such text); quotes around a
    break keep them."""
    for text in ("Invented user note 6: what did I say about the garden",
                 "Invented memory D: the user prefers museums for weekend trips.", "Say hi there to all."):
        assert redact(text) == text
        assert Excerpt.around(text, 10, 12).render() == Excerpt.around(text, 10, 12).render(show=True)


def test_a_value_the_rule_takes_for_personal_is_masked_on_both_sides():
    """A lower-case name is no capitalised word after a cue, but the finding's value is what the
    rule took for per-user data: masked in the value, and at the break on both sides."""
    shared = " (customer id c-1). Refunds take five days."
    before, after = "You are speaking with ana silva" + shared, "You are speaking with ben okafor" + shared
    start = before.index("ana")
    ev = Evidence({"before": Excerpt.around(before, start, start + len("ana silva")),
                   "after": Excerpt.around(after, start, start + len("ben okafor")),
                   "value": Excerpt.value(after, start, start + len("ben okafor"))})
    got = ev.resolve()
    assert got["value"] == f"<name #{fingerprint('ben okafor')}>"
    assert f"speaking with <name #{fingerprint('ana silva')}>" in got["before"]
    assert f"speaking with <name #{fingerprint('ben okafor')}>" in got["after"]
    assert "customer id <account id #" in got["after"]
    shown = Evidence(ev.items, show=True).resolve()
    assert "ben okafor" in shown["value"] and "ana silva" in shown["before"]
