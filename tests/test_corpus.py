"""The real-world corpus (tests/data/cases): every case names its cause, at its place, with the
tokens it costs (counted by hand: tests/data/handcount.py), and the loss accounting adds up
exactly on every case and sample."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from promptcache.pipeline import AuditOptions, audit

from conftest import SAMPLES

DATA = Path(__file__).resolve().parent / "data"
CORPUS = yaml.safe_load((DATA / "corpus.yaml").read_text(encoding="utf-8"))
CASES = sorted(p for p in (DATA / "cases").glob("C*.jsonl"))


def _spec(path: Path) -> tuple[dict, dict]:
    expected = json.loads(path.with_name(path.name[:-len(".jsonl")] + ".expected.json").read_text(encoding="utf-8"))
    spec = dict(CORPUS["cases"].get(path.name[:3]) or {})
    return expected, spec


ROOT = DATA.parent.parent


def _audit(path: Path, spec: dict):
    opts = dict(spec.get("options") or {})
    if opts.get("tokenizer"):
        opts["tokenizer"] = str(ROOT / opts["tokenizer"])  # a path in the repository
    return audit([path], AuditOptions(**opts))


def test_every_case_is_in_the_corpus_map():
    """A case added to tests/data/cases without its hand count and cause word fails here."""
    for path in CASES:
        expected, spec = _spec(path)
        assert "tokens" in spec, f"{path.name}: no hand count in corpus.yaml"
        cause = spec.get("cause", expected["root_cause"])
        assert cause in CORPUS["causes"], f"{path.name}: cause {cause!r} has no rules in corpus.yaml"
        assert cause != "other", f"{path.name}: give 'other' a finer cause word in corpus.yaml"


@pytest.mark.parametrize("path", CASES, ids=[p.name[:3] for p in CASES])
def test_case_names_its_cause(path):
    expected, spec = _spec(path)
    cause = spec.get("cause", expected["root_cause"])
    wanted = set(CORPUS["causes"][cause])
    res = _audit(path, spec)
    top = [f.rule.id for f in res.findings[:3]]
    assert wanted & set(top), f"{path.name}: wants one of {sorted(wanted)} in the top three, got {top}"
    deviation = spec.get("deviation")
    if deviation:
        assert res.findings[0].rule.id == deviation["top"], f"{path.name}: top {res.findings[0].rule.id}"
    elif spec.get("segment"):
        first = res.findings[0]
        assert first.rule.id in wanted, f"{path.name}: top finding {first.rule.id}, wants one of {sorted(wanted)}"
        assert re.fullmatch(spec["segment"], first.segment or ""), \
            f"{path.name}: top finding at {first.segment!r}, wants {spec['segment']!r}"
    found = next(f for f in res.findings if f.rule.id in wanted)
    claimed = sum(f.tokens_lost for f in res.findings if f.rule.id in wanted)  # the cause, every place it sits
    if spec["tokens"]:
        assert abs(claimed - spec["tokens"]) <= 0.1 * spec["tokens"], \
            f"{path.name}: {found.rule.id} claims {claimed} tokens, hand count {spec['tokens']}"
    else:
        assert claimed == 0 and found.cost_usd_lost in (None, 0)


def _gaps_by_hand(res) -> dict[str, int]:
    """Each gap summed from the outcomes, independently of the accounting."""
    rules = sum(max(0, o.shared_prefix_tokens - o.cached_tokens) for o in res.outcomes)
    reported = sum(max(0, o.cached_tokens - o.usage.cache_read_tokens) for o in res.outcomes if o.usage is not None)
    return {"rules": rules, "reported": reported}


LOGS = CASES + sorted(SAMPLES.glob("*.jsonl"))


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_accounting_adds_up(path):
    spec = _spec(path)[1] if path.parent.name == "cases" else {}
    res = _audit(path, spec)
    acc = res.accounting
    by_hand = _gaps_by_hand(res)
    for gap in ("rules", "reported"):
        assert acc.gaps[gap] == by_hand[gap], gap
    for gap, total in acc.gaps.items():
        rows = [r for r in acc.rows if r.gap == gap]
        assert sum(r.tokens for r in rows) == total, f"{gap}: rows add up to {sum(r.tokens for r in rows)}, gap {total}"
        assert all(r.tokens > 0 for r in rows)
    # a rule's findings claim its rows' tokens: a token is lost to one cause only
    for rule in {f.rule.id for f in res.findings}:
        claimed = sum(f.tokens_lost for f in res.findings if f.rule.id == rule)
        assert claimed == sum(r.tokens for r in acc.rows if r.rule == rule), rule
    for f in res.findings:
        if f.tokens_lost == 0 and f.rule.id != "ttl-choice":  # ttl-choice prices a what-if saving
            assert not f.cost_usd_lost, f"{f.rule.id} lost nothing but costs {f.cost_usd_lost}"
