#!/usr/bin/env python3
"""Print the real-world corpus table: per case (tests/data/cases), the cause it should name, the
audit's top three findings, whether the cause is among them, and the tokens the cause's findings
claim against the hand count (tests/data/corpus.yaml, counted with tests/data/handcount.py).

    python scripts/corpus.py            # every case
    python scripts/corpus.py C01 C14    # some

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


def main(argv: list[str]) -> int:
    from promptcache.pipeline import AuditOptions, audit

    corpus = yaml.safe_load((DATA / "corpus.yaml").read_text(encoding="utf-8"))
    cases = sorted((DATA / "cases").glob("C*.jsonl"))
    if argv:
        cases = [c for c in cases if c.name[:3] in argv]
    ok = 0
    print(f"{'case':5} {'cause':24} {'in top 3':8} {'tokens':>7} {'hand':>7}  top three")
    for path in cases:
        expected = json.loads(path.with_name(path.name[:-len(".jsonl")] + ".expected.json").read_text(encoding="utf-8"))
        spec = dict(corpus["cases"].get(path.name[:3]) or {})
        cause = spec.get("cause", expected["root_cause"])
        wanted = set(corpus["causes"][cause])
        opts = dict(spec.get("options") or {})
        if opts.get("tokenizer"):
            opts["tokenizer"] = str(ROOT / opts["tokenizer"])
        res = audit([path], AuditOptions(**opts))
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
