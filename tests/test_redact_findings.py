"""Per-user values in every finding kind that quotes them, in every report format: a kind and a
salted fingerprint by default (promptcache.diagnose.redact), the values with --show-text.

Kinds that quote values of a person: user-data-before-shared (identity lines: a conversation id,
a workspace, a member's name, a contact e-mail: C21's system prompt), environment-in-prefix (a
working directory under a user's home, a commit's author in a git snapshot), affinity-changed
(a ``user`` id made per request) and the cache-key findings (a key derived from a user). The
support-bot sample's names, account ids and e-mails are tests/test_redact.py's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from promptcache.diagnose import redact as rd

import producer_shapes as shapes

DATA = Path(__file__).resolve().parent / "data"
KEY = "22" * 32
HANDBOOK = "\n".join(f"Clause {k}. Staff answer questions about refund timing by restating the request, checking "
                     f"handbook section {k}, and replying in short numbered steps." for k in range(1, 61))


def reports(path: Path, tmp_path: Path, *extra: str) -> dict[str, str]:
    """The audit of ``path`` in every format (html written to a file), with a fixed key."""
    env = {**os.environ, rd.KEY_ENV: KEY, "COLUMNS": "250"}

    def run(*args: str) -> str:
        p = subprocess.run([sys.executable, "-m", "promptcache", "audit", str(path), *extra, *args],
                           capture_output=True, text=True, env=env, check=False)
        assert p.returncode in (0, 1), p.stderr
        return p.stdout
    html = tmp_path / f"{path.stem}.html"
    out = {"text": run(), "json": run("-f", "json"), "markdown": run("-f", "markdown"),
           "csv": run("-f", "csv", "--table", "findings")}
    run("-f", "html", "-o", str(html))
    out["html"] = html.read_text(encoding="utf-8")
    return out


def fp(value: str, monkeypatch) -> str:
    monkeypatch.setenv(rd.KEY_ENV, KEY)
    rd._key.cache_clear()
    try:
        return rd.fingerprint(value)
    finally:
        rd._key.cache_clear()


def finding(rec: dict, rule: str) -> dict:
    return next(f for f in rec["findings"] if f["rule"] == rule)


def env_log(tmp_path: Path) -> tuple[Path, list[str]]:
    """An agent whose system prompt ends with an environment block: the working directory under
    the user's home and the last commit's author change between sessions."""
    recs, secrets = [], []
    for k, (user, author) in enumerate([("alice", "Alice Example"), ("bob", "Robert Sample"), ("alice", "Carol Demo")]):
        env = (f"Environment\nPrimary working directory: /home/{user}/invented-app\nLast commit: 3f2a91{k} Fix the router\n"
               f"author: {author}\n")
        secrets += [f"/home/{user}", author]
        recs.append({"timestamp": f"2026-05-01T10:0{k}:00Z", "model": "claude-sonnet-4-5", "max_tokens": 512,
                     "system": [{"type": "text", "text": env + "You are the refunds desk.\n" + HANDBOOK}],
                     "messages": [{"role": "user", "content": "Where is order 7?"}]})
    return shapes.write(tmp_path / "env.jsonl", recs), sorted(set(secrets))


@pytest.mark.slow
def test_identity_lines_are_fingerprinted_in_every_format(tmp_path, monkeypatch):
    """C21: the system prompt opens with the thread, the workspace, the member's name and
    e-mail. The finding's value (the thread id) and its quotes show kinds and fingerprints."""
    (path,) = (DATA / "cases").glob("C21*.jsonl")
    secrets = ["cv_a91", "cv_b72", "Test User Alpha", "alpha@example.invalid"]
    got = reports(path, tmp_path)
    for fmt, text in got.items():
        assert not [s for s in secrets if s in text], fmt
    f = finding(json.loads(got["json"]), "user-data-before-shared")
    assert f["evidence"]["value"] == f"<conversation id #{fp('cv_b72', monkeypatch)}>"
    assert f["evidence"]["before"].startswith(f"thread: <conversation id #{fp('cv_a91', monkeypatch)}>")
    for fmt in ("text", "markdown", "html", "csv"):
        assert f"conversation id #{fp('cv_b72', monkeypatch)}" in got[fmt], fmt
    shown = finding(json.loads(reports(path, tmp_path, "--show-text")["json"]), "user-data-before-shared")
    assert shown["evidence"]["value"] == "cv_b72" and shown["evidence"]["before"].startswith("thread: cv_a91")


@pytest.mark.slow
def test_a_home_directory_and_a_commit_author_in_a_snapshot_are_fingerprinted(tmp_path, monkeypatch):
    path, secrets = env_log(tmp_path)
    got = reports(path, tmp_path)
    for fmt, text in got.items():
        assert not [s for s in secrets if s in text], fmt
    f = finding(json.loads(got["json"]), "environment-in-prefix")
    assert f"<home directory #{fp('/home/bob', monkeypatch)}>/invented-app" in f["evidence"]["value"]
    shown = finding(json.loads(reports(path, tmp_path, "--show-text")["json"]), "environment-in-prefix")
    assert "/home/bob/invented-app" in shown["evidence"]["value"]


@pytest.mark.slow
def test_routing_identifiers_and_cache_keys_are_fingerprinted_in_every_format(tmp_path, monkeypatch):
    """A ``user`` made per request within one conversation (affinity-changed: it compares
    requests of one conversation only) and a ``prompt_cache_key`` per user (cache-key-unique,
    C18's keys): no format quotes them, --show-text does."""
    recs = []
    users = [f"u-{uuid.UUID(int=300 + k).hex[-8:]}" for k in range(3)]
    for k, user in enumerate(users):
        msgs = [{"role": "system", "content": "You are the refunds desk.\n" + HANDBOOK}]
        for j in range(k + 1):  # one conversation, a turn longer each time
            msgs.append({"role": "user", "content": f"Order {j}?"})
            if j < k:
                msgs.append({"role": "assistant", "content": f"Order {j} is on its way."})
        recs.append({"timestamp": f"2026-05-01T10:0{k}:00Z",
                     "request": {"model": "gpt-4.1", "messages": msgs, "user": user},
                     "response": {"id": f"c{k}", "usage": {"prompt_tokens": 1750, "completion_tokens": 5,
                                                           "prompt_tokens_details": {"cached_tokens": 0}}}})
    path = shapes.write(tmp_path / "users.jsonl", recs)
    got = reports(path, tmp_path)
    for fmt, text in got.items():
        assert not [u for u in users if u in text], fmt
    f = finding(json.loads(got["json"]), "affinity-changed")
    assert (f["evidence"]["before"], f["evidence"]["after"]) == (f"<user id #{fp(users[0], monkeypatch)}>",
                                                               f"<user id #{fp(users[1], monkeypatch)}>")
    shown = finding(json.loads(reports(path, tmp_path, "--show-text")["json"]), "affinity-changed")
    assert (shown["evidence"]["before"], shown["evidence"]["after"]) == (users[0], users[1])
    (c18,) = (DATA / "cases").glob("C18*.jsonl")
    keys = [json.loads(line)["prompt_cache_key"] for line in c18.read_text().splitlines()]
    got = reports(c18, tmp_path)
    f = finding(json.loads(got["json"]), "cache-key-unique")
    assert re.fullmatch(r"<cache key #[0-9a-f]{8}>", f["evidence"]["cache_key"])
    assert f["evidence"]["cache_key"] == f"<cache key #{fp(keys[1], monkeypatch)}>"


def keyed_log(tmp_path: Path) -> Path:
    """Four calls sharing a 1,750-token system prompt, ``prompt_cache_key`` an e-mail address
    (alice's on three, bob's on one), as clients that key the cache by user do."""
    recs = []
    for k, key in enumerate(["alice@example.com", "alice@example.com", "bob@example.org", "alice@example.com"]):
        msgs = [{"role": "system", "content": "You are the refunds desk.\n" + HANDBOOK}, {"role": "user", "content": f"Order {k}?"}]
        recs.append({"timestamp": f"2026-05-01T10:0{k}:00Z",
                     "request": {"model": "gpt-4.1", "messages": msgs, "prompt_cache_key": key},
                     "response": {"id": f"c{k}", "usage": {"prompt_tokens": 1750, "completion_tokens": 5,
                                                           "prompt_tokens_details": {"cached_tokens": 0}}}})
    return shapes.write(tmp_path / "keys.jsonl", recs)


def hand_fp(value: str) -> str:
    """The fingerprint worked out apart from the code: 8 hex digits of BLAKE2b keyed with KEY."""
    import hashlib

    return hashlib.blake2b(value.encode(), key=bytes.fromhex(KEY), digest_size=4).hexdigest()


def test_cache_keys_in_namespace_labels_are_fingerprinted(tmp_path, monkeypatch):
    """The namespace label (``openai/gpt-4.1/key=...``: every report's namespace table, the
    rules lines, the outcomes) shows a cache key as its kind and fingerprint; --show-text shows
    the key; two keys whose fingerprints collide still get two labels."""
    from promptcache.pipeline import AuditOptions, audit

    monkeypatch.setenv(rd.KEY_ENV, KEY)
    rd._key.cache_clear()
    path = keyed_log(tmp_path)
    try:
        res = audit([path], AuditOptions())
        alice, bob = f"openai/gpt-4.1/key=<cache key #{hand_fp('alice@example.com')}>", \
            f"openai/gpt-4.1/key=<cache key #{hand_fp('bob@example.org')}>"
        assert [o.namespace for o in res.outcomes] == [alice, alice, bob, alice]
        assert set(res.rules) == {alice, bob} and set(res.namespaces) == {alice, bob}
        shown = audit([path], AuditOptions(show_text=True))
        assert [o.namespace for o in shown.outcomes] == [f"openai/gpt-4.1/key={k}" for k in
                                                         ("alice@example.com", "alice@example.com", "bob@example.org",
                                                          "alice@example.com")]
        monkeypatch.setattr(rd, "fingerprint", lambda value: "0badf00d")
        clash = audit([path], AuditOptions())
        assert [o.namespace for o in clash.outcomes] == ["openai/gpt-4.1/key=<cache key #0badf00d>"] * 2 + \
            ["openai/gpt-4.1/key=<cache key #0badf00d-2>", "openai/gpt-4.1/key=<cache key #0badf00d>"]
        # the simulation keeps the two caches apart as before: request 3 (bob's) is served nothing
        assert [o.cached_tokens for o in clash.outcomes] == [o.cached_tokens for o in res.outcomes]
        assert res.outcomes[2].cached_tokens == 0
    finally:
        rd._key.cache_clear()


@pytest.mark.slow
def test_a_cache_key_that_is_an_email_is_printed_in_no_format(tmp_path):
    """Text, JSON, Markdown, HTML, the findings and requests CSV tables: neither address, and
    alice's fingerprint (worked out apart from the code) where the namespace is shown."""
    path = keyed_log(tmp_path)
    got = reports(path, tmp_path)
    got["csv requests"] = subprocess.run([sys.executable, "-m", "promptcache", "audit", str(path), "-f", "csv", "--table",
                                          "requests"], capture_output=True, text=True,
                                         env={**os.environ, rd.KEY_ENV: KEY}, check=False).stdout
    for fmt, text in got.items():
        assert text and "alice@example.com" not in text and "bob@example.org" not in text, fmt
    for fmt in ("text", "json", "html", "csv requests"):
        assert f"cache key #{hand_fp('alice@example.com')}" in got[fmt], fmt
    assert "alice@example.com" in reports(path, tmp_path, "--show-text")["text"]
