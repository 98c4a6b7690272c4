#!/usr/bin/env python3
"""Print the real-world corpus table: per case (tests/data/cases), the cause it should name, the
audit's top three findings, whether the cause is among them, and the tokens the cause's findings
claim against the hand count (tests/data/corpus.yaml, counted with tests/data/handcount.py).

    python scripts/corpus.py            # every case
    python scripts/corpus.py C01 C14    # some
    python scripts/corpus.py --propose  # per case: simulated cached tokens before, after the plan, ideal after

The same criteria as tests/test_corpus.py (cause in the top three, tokens within 10%), printed
rather than asserted, for a closing note or a regression hunt.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def _options(spec: dict):
    from promptcache.pipeline import AuditOptions

    opts = dict(spec.get("options") or {})
    if opts.get("tokenizer"):
        opts["tokenizer"] = str(ROOT / opts["tokenizer"])
    return AuditOptions(**opts)


def proposals(cases: list[Path], corpus: dict) -> int:
    """Per case: the changes applied, simulated cached tokens before, after the plan, and the
    ideal after it, with after / ideal (tests/test_propose_cases.py asserts >= 95% where no
    provider limit holds the ideal back)."""
    from promptcache.propose.engine import propose

    print(f"{'case':5} {'before':>8} {'after':>8} {'ideal':>8} {'after/ideal':>11}  changes")
    for path in cases:
        res = propose([path], _options(dict(corpus["cases"].get(path.name[:3]) or {})))
        applied = sorted({c.kind for p in res.proposals for c in p.plan.changes if c.applied})
        before = res.before.scenarios["simulated"].cached_tokens
        after = res.after.scenarios["simulated"].cached_tokens
        ideal = res.after.scenarios["ideal"].cached_tokens
        share = f"{after / ideal:.1%}" if ideal else "-"
        held = sorted({h.limit for p in res.proposals for h in p.remaining.held})
        print(f"{path.name[:3]:5} {before:8,} {after:8,} {ideal:8,} {share:>11}  {', '.join(applied) or '-'}"
              f"{'  (held by: ' + ', '.join(held) + ')' if held else ''}")
    return 0


def main(argv: list[str]) -> int:
    from promptcache.pipeline import audit

    corpus = yaml.safe_load((DATA / "corpus.yaml").read_text(encoding="utf-8"))
    cases = sorted((DATA / "cases").glob("C*.jsonl"))
    show_proposals = "--propose" in argv
    argv = [a for a in argv if a != "--propose"]
    if argv:
        cases = [c for c in cases if c.name[:3] in argv]
    if show_proposals:
        return proposals(cases, corpus)
    ok = 0
    print(f"{'case':5} {'cause':24} {'in top 3':8} {'tokens':>7} {'hand':>7}  top three")
    for path in cases:
        expected = json.loads(path.with_name(path.name[:-len(".jsonl")] + ".expected.json").read_text(encoding="utf-8"))
        spec = dict(corpus["cases"].get(path.name[:3]) or {})
        cause = spec.get("cause", expected["root_cause"])
        wanted = set(corpus["causes"][cause])
        res = audit([path], _options(spec))
        top = [f.rule.id for f in res.findings[:3]]
        claimed = sum(f.tokens_lost for f in res.findings if f.rule.id in wanted)
        hand = spec.get("tokens") or 0
        good = bool(wanted & set(top)) and (abs(claimed - hand) <= 0.1 * hand if hand else claimed == 0)
        ok += good
        print(f"{path.name[:3]:5} {cause:24} {'yes' if wanted & set(top) else 'NO':8} {claimed:7,} {hand:7,}  "
              f"{', '.join(top)}{'' if good else '   <-- off'}")
    print(f"{ok}/{len(cases)} cases name their cause in the top three with tokens within 10% of the hand count")
    return 0 if ok == len(cases) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
