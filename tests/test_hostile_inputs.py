"""The hostile-input harness for the readers (issue 18): Hypothesis turns a real record of every
reader into hostile ones (wrong types, extreme numbers, deep nesting, invalid and unusual Unicode,
control characters, huge values) and checks that

- reading never raises but an input error, and every record is accounted for (its outcome
  counted once: request, usage-only, joined, duplicate, skipped with a reason or malformed);
- the whole audit exits 0, 1 or 2, never 3, and leaves its input file as it was;
- nothing it prints to a terminal holds a control sequence (xfail until the report renderers
  escape what they quote from prompts: another change; ingest's own messages are escaped);

plus truncated and corrupt ``.gz`` files, and the JSON decoder that reuses earlier lines' bytes
(``ingest/resent.py``) against decoding each line whole.

``PROMPTCACHE_HOSTILE_EXAMPLES`` sets the examples per reader (default 6; CI runs the default,
``PROMPTCACHE_HOSTILE_EXAMPLES=200`` is the long profile).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptcache.errors import InputError
from promptcache.ingest import InputStats, ReadOptions, read_inputs
from promptcache.ingest.jsonio import CsvRow, TextLine, iter_records
from promptcache.ingest.registry import READERS, claimants
from promptcache.ingest.resent import ResentLines

ROOT = Path(__file__).parent.parent
EXAMPLES = int(os.environ.get("PROMPTCACHE_HOSTILE_EXAMPLES", "6"))
CORPORA = [ROOT / "tests" / "data" / "formats", ROOT / "tests" / "data" / "producers", ROOT / "tests" / "fixtures" / "logs"]
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _seeds() -> dict[str, tuple[str, object]]:
    """One real record per reader: ``name → (kind, record)`` (kind ``json``, ``text``, ``csv``)."""
    out: dict[str, tuple[str, object]] = {}
    for d in CORPORA:
        for p in sorted(d.iterdir()):
            if not p.is_file() or p.suffix in (".py", ".md") or p.name.endswith("expected.json"):
                continue
            header = None
            for _, rec in iter_records(p):
                if isinstance(rec, Exception):
                    continue
                got = claimants(rec)
                if len(got) != 1 or got[0][0].name in out:
                    continue
                kind = "text" if isinstance(rec, TextLine) else "csv" if isinstance(rec, CsvRow) else "json"
                if kind == "csv":
                    header = ",".join(rec)
                    rec = (header, ",".join(str(v) for v in rec.values()))
                out[got[0][0].name] = (kind, rec)
    return out


SEEDS = _seeds()
DEEP = "@@DEEP@@"
BAD_UTF8 = "@@BADUTF8@@"
HOSTILE_TEXT = st.lists(st.sampled_from(
    ["a", " ", "\x1b[2J", "\x1b]0;pwned\x07", "\x00", "\x9b", "\u202e", "\u200b", "\ufeff", "\ud800", "\udfff",
     "\U0001f600", "\n", "\\", '"', "\u0085", BAD_UTF8]), max_size=12).map("".join)
HOSTILE = st.one_of(
    st.none(), st.booleans(), HOSTILE_TEXT,
    st.integers(min_value=-(2 ** 70), max_value=2 ** 70),
    st.sampled_from([1e300, -1e300, 5e-324, -1, 0, 2 ** 63, 1.5, "NaN", "1e300", "-0", "", "null", "[]", "{}"]),
    st.sampled_from([f"{DEEP}{n}" for n in (200, 300, 1023, 1030, 5000)]),
    st.just("x" * 200_000),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
)


def _paths(obj, prefix=(), depth=0):
    yield prefix
    if depth >= 6:
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,), depth + 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:4]):
            yield from _paths(v, prefix + (i,), depth + 1)


def _set(obj, path, value):
    if not path:
        return value
    node = obj
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return obj


def _encode(obj) -> bytes:
    """JSON with the markers made real: nesting deeper than a serializer can write, and bytes
    that are not UTF-8."""
    text = json.dumps(obj, ensure_ascii=True)
    text = re.sub(r'"@@DEEP@@(\d+)"', lambda m: "[" * int(m.group(1)) + "]" * int(m.group(1)), text)
    return text.encode().replace(BAD_UTF8.encode(), b"\xff\xfe")


@st.composite
def hostile_file(draw, name: str) -> bytes:
    """A file of the reader's real record, then 1-3 mutated copies, then the real record again."""
    kind, seed = SEEDS[name]
    lines: list[bytes] = []
    if kind == "csv":
        header, row = seed  # type: ignore[misc]
        cells = row.split(",")
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, len(cells) - 1))
            bad = list(cells)
            bad[i] = str(draw(HOSTILE)).replace(",", ";").replace("\n", " ")
            lines.append(",".join(bad).encode("utf-8", "surrogatepass").replace(BAD_UTF8.encode(), b"\xff"))
        return (header + "\n" + row + "\n").encode() + b"\n".join(lines) + b"\n" + row.encode() + b"\n"
    if kind == "text":
        for _ in range(draw(st.integers(1, 3))):
            text = str(seed)
            cut = draw(st.integers(0, len(text)))
            junk = str(draw(HOSTILE)).replace("\n", " ")
            lines.append((text[:cut] + junk + text[cut:]).encode("utf-8", "surrogatepass").replace(BAD_UTF8.encode(), b"\xff"))
        return str(seed).encode() + b"\n" + b"\n".join(lines) + b"\n" + str(seed).encode() + b"\n"
    paths = list(_paths(seed))
    for _ in range(draw(st.integers(1, 3))):
        rec = json.loads(json.dumps(seed))
        for _ in range(draw(st.integers(1, 3))):
            path = draw(st.sampled_from(paths))
            try:
                rec = _set(rec, path, draw(HOSTILE))
            except (KeyError, IndexError, TypeError):
                pass
        lines.append(_encode(rec))
    good = _encode(seed)
    return good + b"\n" + b"\n".join(lines) + b"\n" + good + b"\n"


def _read(path: Path) -> InputStats:
    st_ = InputStats(str(path))
    try:
        for _ in read_inputs([path], [st_], ReadOptions()):
            pass
    except InputError:
        pass
    return st_


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_every_hostile_record_is_accounted_for(name, tmp_path_factory):
    assert name in {r.name for r in READERS}

    @settings(max_examples=EXAMPLES * 4, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(hostile_file(name))
    def check(data):
        p = tmp_path_factory.mktemp("h") / "log.jsonl"
        p.write_bytes(data)
        st_ = _read(p)
        assert st_.records == st_.accounted  # every record ended as exactly one outcome
        assert st_.records >= 3 or st_.skipped_lines  # the seed twice and the mutants: none vanished
        for _, reason in st_.errors:
            assert not _CONTROL.search(reason)  # ingest's own messages hold no control character
    check()


def test_all_readers_have_a_seed():
    assert set(SEEDS) == {r.name for r in READERS}


def _main(argv: list[str]) -> tuple[int, str, str]:
    """Run the command line in this process: (exit code, stdout, stderr)."""
    from promptcache import cli

    out, err = io.StringIO(), io.StringIO()
    old = sys.argv
    sys.argv = ["promptcache", *argv]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.main()
                code = 0
            except SystemExit as e:
                code = int(e.code or 0)
    finally:
        sys.argv = old
    return code, out.getvalue(), err.getvalue()


AUDITED = sorted(n for n in SEEDS if n not in ("vllm-log", "sglang-log", "ollama-log"))  # engines need --tokenizer: below


@pytest.mark.slow
@pytest.mark.parametrize("name", AUDITED)
def test_audits_of_hostile_logs_exit_0_1_or_2_and_leave_the_file(name, tmp_path_factory):
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(hostile_file(name))
    def check(data):
        d = tmp_path_factory.mktemp("a")
        p = d / "log.jsonl"
        p.write_bytes(data)
        before = hashlib.sha256(p.read_bytes()).hexdigest()
        code, out, err = _main(["audit", str(p), "-o", str(d / "report.json"), "--workers", "1"])
        assert code in (0, 1, 2), err
        assert hashlib.sha256(p.read_bytes()).hexdigest() == before
        if code == 0:
            rec = json.loads((d / "report.json").read_text())
            for i in rec["inputs"]:
                assert i["records"] == (i["requests"] + i["usage_only"] + i["joined"] + i["duplicates"]
                                        + sum(i["skipped"].values()) + i["skipped_lines"])
            for s in rec["summary"]["scenarios"].values():
                assert 0 <= s["hit_ratio"] <= 1 and (s["cost_usd"] is None or s["cost_usd"] >= 0)
    check()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["openai-chat", "anthropic", "langfuse", "otel"])
def test_nothing_printed_holds_a_control_sequence(name, tmp_path_factory):
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(hostile_file(name))
    def check(data):
        p = tmp_path_factory.mktemp("t") / "log.jsonl"
        p.write_bytes(data)
        code, out, err = _main(["audit", str(p), "--workers", "1"])
        assert not _CONTROL.search(out.replace("\n", "")) and not _CONTROL.search(err.replace("\n", ""))
    check()


@pytest.mark.parametrize("cut", [10, 100, 1000, -30, -8, -1])
def test_truncated_gzip_reads_its_complete_records(tmp_path, cut):
    """A cut-off .gz gives the complete lines before the cut (what ``zcat`` recovers, counted
    here with zlib on its own), with a warning; with none, or under --strict, it is an input error."""
    import zlib

    src = ROOT / "tests" / "data" / "formats" / "bedrock_invocation_logs.json.gz"
    data = src.read_bytes()
    p = tmp_path / "cut.json.gz"
    p.write_bytes(data[:cut])
    try:
        recovered = zlib.decompressobj(wbits=31).decompress(data[:cut])
    except zlib.error:
        recovered = b""
    complete = recovered.count(b"\n")  # one record a line in this file
    code, out, err = _main(["audit", str(p), "--workers", "1"])
    if complete == 0:
        assert code == 2 and ("cannot read" in err or "no record" in err), err
    else:
        text = " ".join((out + err).split())  # the report wraps long warnings
        assert code == 0 and "the compressed file is truncated" in text and f"up to line {complete}," in text, text
        assert f"{complete} requests" in out, out
    code, _, err = _main(["audit", str(p), "--workers", "1", "--strict"])
    assert code == 2, err


def test_corrupt_gzip_is_an_input_error(tmp_path):
    data = bytearray((ROOT / "tests" / "data" / "formats" / "bedrock_invocation_logs.json.gz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    p = tmp_path / "bad.json.gz"
    p.write_bytes(bytes(data))
    code, _, err = _main(["audit", str(p), "--workers", "1"])
    assert code == 2, err


def test_a_huge_line_is_read(tmp_path):
    rec = {"model": "gpt-4o", "messages": [{"role": "user", "content": "w " * 3_000_000}]}
    p = tmp_path / "huge.jsonl"
    p.write_text(json.dumps(rec) + "\n")
    st_ = _read(p)
    assert (st_.records, st_.requests) == (1, 1)


# -- the decoder that reuses earlier lines' bytes --------------------------------------------

MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "tool"]),
                                 "content": st.text(min_size=0, max_size=300)})
TOOLS = st.lists(st.fixed_dictionaries({"name": st.text(max_size=8), "description": st.text(max_size=600)}),
                 min_size=0, max_size=3)


@st.composite
def session_lines(draw) -> list[bytes]:
    """JSONL lines of agent sessions: each turn re-sends the history (sometimes with its first
    message changed), the tools and system prompt repeated, written compactly or spaced, and
    now and then a line that is not valid JSON or holds a NUL escape."""
    tools = draw(TOOLS)
    system = draw(st.text(max_size=1500))
    lines: list[bytes] = []
    for _ in range(draw(st.integers(1, 3))):
        msgs = [{"role": "system", "content": system}]
        for _ in range(draw(st.integers(1, 8))):
            msgs = msgs + draw(st.lists(MESSAGE, min_size=1, max_size=3))
            if draw(st.booleans()) and msgs:
                msgs = [{"role": "system", "content": draw(st.text(max_size=50)) + system}] + msgs[1:]
            rec = {"request": {"model": "gpt-4o", "messages": msgs, "tools": tools}, "system": system}
            style = draw(st.sampled_from(["compact", "spaced", "broken", "nul"]))
            if style == "compact":
                lines.append(orjson.dumps(rec))
            elif style == "spaced":
                lines.append(json.dumps(rec).encode())
            elif style == "broken":
                lines.append(orjson.dumps(rec)[:-draw(st.integers(1, 20))])
            else:
                lines.append(orjson.dumps(rec).replace(b'"role"', b'"\\u0000role"', 1))
    return lines


@settings(max_examples=max(EXAMPLES * 10, 40), deadline=None, suppress_health_check=list(HealthCheck))
@given(session_lines())
def test_resent_lines_decode_as_each_line_whole(lines):
    smallest = ResentLines.SMALLEST
    ResentLines.SMALLEST = 64  # small sessions: make every reuse path (history, its tail, values) run
    try:
        dec = ResentLines(limit=8, budget_bytes=1 << 20)
        for line in lines:
            try:
                want = orjson.loads(line)
            except orjson.JSONDecodeError:
                with pytest.raises(orjson.JSONDecodeError):
                    dec.loads(line)
                continue
            assert dec.loads(line) == want
    finally:
        ResentLines.SMALLEST = smallest
