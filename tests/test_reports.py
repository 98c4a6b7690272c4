"""Reports beyond text and JSON: the Python API's DataFrames, CSV / Parquet tables, the time
series, Markdown and HTML (escaping, and a headless-browser check)."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from promptcache.api import audit as api_audit, propose as api_propose
from promptcache.tokenize.tiktoken_backend import load_encoding

from conftest import SAMPLES, write_jsonl

pd = pytest.importorskip("pandas")

INPUT, READ = Decimal("2.00"), Decimal("0.50")  # USD per million tokens, from the prices file below
SYSTEM = "You are a careful assistant for the Northwind help desk. " + "Follow the handbook closely. " * 300
QUESTIONS = ["How do I reset my password?", "How do I close my account?", "Where is my invoice?"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "promptcache", *args], capture_output=True, text=True)


@pytest.fixture
def priced(tmp_path):
    """A three-request gpt-4o log (a long shared system prompt, different questions, 10 s
    apart) and a prices file with round rates."""
    log = write_jsonl(tmp_path / "app.jsonl", [
        {"timestamp": 1_790_000_000 + 10 * i, "id": f"r{i}", "model": "gpt-4o",
         "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}]}
        for i, q in enumerate(QUESTIONS)])
    prices = tmp_path / "prices.yaml"
    prices.write_text(f"models:\n  gpt-4o:\n    input: {INPUT}\n    cache_read: {READ}\n    output: 8\n    source: test\n")
    return log, prices


def _harmony_tokens(question: str) -> list[int]:
    """The prompt as the OpenAI harmony framing renders it; the framing tokens are stand-ins
    (-1 start, -2 message, -3 end), equal in every prompt, which is all a common prefix needs."""
    enc = load_encoding("o200k_base")
    out: list[int] = []
    for role, text in (("system", SYSTEM), ("user", question)):
        out += [-1, *enc.encode_ordinary(role), -2, *enc.encode_ordinary(text), -3]
    return out + [-1, *enc.encode_ordinary("assistant")]


def _lcp(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_requests_frame_matches_hand_computed_tokens_and_costs(priced):
    log, prices = priced
    df = api_audit([log], prices=prices).to_pandas()
    toks = [_harmony_tokens(q) for q in QUESTIONS]
    assert list(df["id"]) == ["r0", "r1", "r2"] and list(df["line"]) == [1, 2, 3]
    assert list(df["prompt_tokens"]) == [len(t) for t in toks]
    for i, t in enumerate(toks):
        shared = max((_lcp(t, e) for e in toks[:i]), default=0)
        # OpenAI: reads in 128-token steps once 1,024 tokens match; the ideal cache reads all of it
        cached = shared // 128 * 128 if shared >= 1024 else 0
        row = df.iloc[i]
        assert row["shared_prefix_tokens"] == shared and row["cached_tokens"] == cached
        n = len(t)
        assert row["cost_no_cache_usd"] == pytest.approx(float(n * INPUT / 1_000_000), abs=1e-9)
        assert row["cost_simulated_usd"] == pytest.approx(float(((n - cached) * INPUT + cached * READ) / 1_000_000), abs=1e-9)
        assert row["cost_ideal_usd"] == pytest.approx(float(((n - shared) * INPUT + shared * READ) / 1_000_000), abs=1e-9)
    assert df["cached_tokens"].iloc[1] > 1024  # the shared system prompt is served
    assert df["cost_reported_usd"].isna().all()  # the log has no usage
    assert str(df["arrival_utc"].dtype).startswith("datetime64") and df["arrival_utc"].iloc[1].timestamp() == 1_790_000_010
    assert df["divergence_segment"].iloc[1] == "messages[1].content"
    assert df["diverged_from"].iloc[1] == 0 and pd.isna(df["diverged_from"].iloc[0])


def test_findings_and_proposals_frames(tmp_path):
    stamps = ["2026-11-02T09:05:15Z", "2026-11-02T09:05:44Z", "2026-11-02T09:06:13Z", "2026-11-02T09:07:02Z"]
    head = "You are CodePilot. Current time: "
    body = ".\n" + "Follow the repository conventions and keep diffs small. " * 200
    log = write_jsonl(tmp_path / "agent.jsonl", [
        {"timestamp": 1_790_000_000 + 30 * i, "model": "gpt-4.1",
         "messages": [{"role": "system", "content": head + ts + body}, {"role": "user", "content": f"Task {i}: fix it"}]}
        for i, ts in enumerate(stamps)])
    res = api_audit(log)
    f = res.findings_frame()
    top = f.iloc[0]
    assert top["rank"] == 1 and top["rule"] == "timestamp-in-prefix"
    assert top["segment"] == "messages[0].content" and top["char_offset"] == len(head)
    assert top["line"] == 2 and top["requests"] == len(stamps) - 1
    assert stamps[0][-3:-1] in top["evidence_before"] and stamps[1][-3:-1] in top["evidence_after"]
    assert top["tokens_lost"] == res.findings[0].tokens_lost > 0
    props = api_propose(log)
    p = props.to_pandas()
    assert len(p) == 1 and "move-slots" in p["changes"].iloc[0] and p["requests"].iloc[0] == len(stamps)
    after_cached = sum(o.cached_tokens for o in props.after.outcomes)
    assert p["after_simulated_cached_tokens"].iloc[0] == after_cached > 0
    assert p["before_simulated_cached_tokens"].iloc[0] == 0  # the time sits before everything shared
    assert p["savings_usd"].iloc[0] == pytest.approx(p["before_simulated_cost_usd"].iloc[0] - p["after_simulated_cost_usd"].iloc[0], abs=2e-6)


def test_to_pandas_without_pandas_says_how_to_install(priced, monkeypatch):
    res = api_audit(priced[0])
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"pip install 'promptcache\[data\]'"):
        res.to_pandas()


def test_api_passes_result_attributes_through(priced):
    res = api_audit(priced[0], prices=priced[1])
    assert len(res.outcomes) == 3 and res.scenarios["no_cache"].prompt_tokens == sum(len(_harmony_tokens(q)) for q in QUESTIONS)
    sf = res.scenarios_frame().set_index("scenario")
    assert sf.loc["simulated", "cached_tokens"] == res.to_pandas()["cached_tokens"].sum()


def test_csv_table_one_row_per_request_matching_json(priced):
    log, prices = priced
    p = run_cli("audit", str(log), "--prices", str(prices), "--format", "csv")
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    j = json.loads(run_cli("audit", str(log), "--prices", str(prices), "--format", "json").stdout)
    assert len(rows) == len(j["requests"]) == 3
    for r, q in zip(rows, j["requests"]):
        assert (r["id"], int(r["line"]), int(r["prompt_tokens"]), int(r["cached_tokens"])) == \
            (q["id"], q["line"], q["prompt_tokens"], q["cached_tokens"])
        assert r["arrival_utc"].endswith("Z") and r["cost_reported_usd"] == ""
    for scen in ("no_cache", "simulated", "ideal"):
        total = sum(float(r[f"cost_{scen}_usd"]) for r in rows)
        assert total == pytest.approx(j["summary"]["scenarios"][scen]["cost_usd"], abs=2e-6)
    f = run_cli("audit", str(SAMPLES / "agent_timestamp.jsonl"), "--format", "csv", "--table", "findings")
    frows = list(csv.DictReader(io.StringIO(f.stdout)))
    assert f.returncode == 0 and frows[0]["rule"] == "timestamp-in-prefix" and frows[0]["rank"] == "1"


def test_parquet_needs_output_and_round_trips(priced, tmp_path):
    log, prices = priced
    p = run_cli("audit", str(log), "--format", "parquet")
    assert p.returncode == 2 and "--output" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "req.parquet"
    p = run_cli("audit", str(log), "--prices", str(prices), "--format", "parquet", "--output", str(out))
    assert p.returncode == 0, p.stderr
    t = pq.read_table(out)
    assert t.num_rows == 3 and str(t.schema.field("cached_tokens").type) == "int64"
    assert str(t.schema.field("cost_reported_usd").type) == "double"  # typed even when every value is empty
    frame = api_audit([log], prices=prices).to_pandas()
    assert t.column("cached_tokens").to_pylist() == list(frame["cached_tokens"])
    out2 = tmp_path / "props.parquet"
    p = run_cli("propose", str(SAMPLES / "agent_timestamp.jsonl"), "--format", "parquet", "-o", str(out2))
    assert p.returncode == 0, p.stderr
    assert pq.read_table(out2).column("changes").to_pylist() == ["move-slots"]


def test_time_series_bins_account_for_every_request():
    res = api_audit(SAMPLES / "support_bot.jsonl")
    rec = res.record()
    ser = rec["series"]
    arrivals = [o.arrival for o in res.outcomes]
    assert ser["axis"] == "time" and len(ser["bins"]) == 50
    assert ser["start"] == min(arrivals) and ser["end"] == max(arrivals)
    assert sum(b["requests"] for b in ser["bins"]) == len(res.outcomes)
    sim = [b["scenarios"]["simulated"] for b in ser["bins"]]
    assert sum(s["cached_tokens"] for s in sim) == res.scenarios["simulated"].cached_tokens
    assert sim[-1]["cumulative_cost_usd"] == pytest.approx(float(res.scenarios["simulated"].cost), abs=1e-6)
    # bins are equal slices of the span: count the requests of the first bin by hand
    width = (max(arrivals) - min(arrivals)) / 50
    assert ser["bins"][0]["requests"] == sum(1 for t in arrivals if t < min(arrivals) + width)


HOSTILE_ID = '"><img src=x onerror="document.title=1">'
HOSTILE_MODEL = "gpt-4o</td><script>document.title='pwned'</script>"


@pytest.fixture
def hostile(tmp_path):
    """A log whose ids, model names and text try to inject markup."""
    system = "Rules <b>bold</b> | `tick` @octocat. " * 300
    return write_jsonl(tmp_path / "evil<x>.jsonl", [
        {"timestamp": 1_790_000_000 + i, "id": HOSTILE_ID + str(i), "model": HOSTILE_MODEL,
         "messages": [{"role": "system", "content": f"<script>alert({i})</script> at 2026-11-02T09:0{i}:00Z. " + system},
                      {"role": "user", "content": f"question {i} <img src=y>"}]} for i in range(4)])


def test_html_escapes_every_log_string_and_loads_nothing(hostile):
    html = api_audit(hostile, cache_model="openai", top=5).to_html()
    low = html.lower()
    assert "<script" not in low and "<img" not in low and "onerror=\"" not in low
    assert "evil&lt;x&gt;.jsonl" in html and "&lt;/td&gt;&lt;script&gt;" in html  # file name and model, escaped
    assert not re.search(r"\b(src|href)\s*=", low) and "url(" not in low and "@import" not in low
    assert "script-src 'none'" in html


def test_markdown_escapes_log_text(hostile):
    text = api_audit(hostile, cache_model="openai").to_markdown()
    assert "<script" not in text and "<img" not in text and "&lt;" in text
    for line in text.splitlines():
        if line.startswith("| "):
            cells = re.split(r"(?<!\\)\|", line)[1:-1]
            assert len(cells) in (5, 6), line  # no stray pipe from the log splits a row
    assert "@octocat" not in text  # no mentions in PR comments
    assert re.search(r"(?<!\\)`", text.split("#### What breaks the cache")[1]) is None


# ------------------------------------------------------------------ headless browser

def _browser():
    """A headless Chromium driven by the system chromedriver, or a skip reason."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.skip("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (pip install '.[test]')")
    return chromium, driver, webdriver, Service


@pytest.fixture
def browser(tmp_path):
    chromium, driver, webdriver, Service = _browser()
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
              "--window-size=1280,2000", f"--user-data-dir={tmp_path / 'chrome-profile'}"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(driver), options=opts)
    try:
        yield d
    finally:
        d.quit()


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _dollars(text: str) -> float:
    return float(text.replace("$", "").replace(",", ""))


def _errors(driver) -> list:
    return [e for e in driver.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]


@pytest.mark.slow
def test_html_report_in_headless_chromium(browser, tmp_path, hostile):
    from selenium.webdriver.common.by import By

    log = SAMPLES / "support_bot.jsonl"
    page = tmp_path / "report.html"
    p = run_cli("audit", str(log), "--propose", "--format", "html", "--output", str(page))
    assert p.returncode == 0, p.stderr
    j = json.loads(run_cli("audit", str(log), "--format", "json").stdout)
    browser.get(page.as_uri())
    assert _errors(browser) == []
    assert browser.title.startswith("promptcache audit")
    txt = {k: browser.find_element(By.ID, k).text for k in
           ("kpi-requests", "kpi-hit-simulated", "kpi-cost-simulated", "kpi-saved", "kpi-left")}
    reqs = j["requests"]
    assert txt["kpi-requests"] == f"{len(reqs):,}"
    assert txt["kpi-hit-simulated"] == _pct(sum(r["cached_tokens"] for r in reqs) / sum(r["prompt_tokens"] for r in reqs))
    sc = j["summary"]["scenarios"]
    # displayed to 4 decimals under a dollar: compare within half a display step
    assert _dollars(txt["kpi-cost-simulated"]) == pytest.approx(sc["simulated"]["cost_usd"], abs=5.1e-5)
    assert _dollars(txt["kpi-saved"]) == pytest.approx(sc["no_cache"]["cost_usd"] - sc["simulated"]["cost_usd"], abs=5.2e-5)
    # left on the table: what the cache rules keep from the ideal cache, plus what the prompt changes cost
    sv = j["summary"]["savings_usd"]
    assert sv["cache_rules"] == pytest.approx(j["accounting"]["gaps"]["rules"]["cost_usd"], abs=2e-6)
    assert sv["simulated_vs_ideal"] == pytest.approx(sc["simulated"]["cost_usd"] - sc["ideal"]["cost_usd"], abs=2e-6)
    assert sv["prompt_changes"] > 0
    assert _dollars(txt["kpi-left"]) == pytest.approx(sv["cache_rules"] + sv["prompt_changes"], abs=5.2e-5)
    rows = browser.find_elements(By.CSS_SELECTOR, "#findings tr.finding")
    assert len(rows) == len(j["findings"]) > 0
    assert f"{j['findings'][0]['tokens_lost']:,}" in rows[0].text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#proposals .prop")) >= 1
    # one marker per non-empty 50th of the log's span, counted here from the arrival times
    t = [r["arrival"] for r in reqs]
    lo, width = min(t), (max(t) - min(t)) / 50
    busy = {min(int((x - lo) / width), 49) for x in t}
    markers = browser.find_elements(By.CSS_SELECTOR, '#chart-hit-time g[data-series="simulated"] circle')
    assert len(markers) == len(busy)
    bars = browser.find_elements(By.CSS_SELECTOR, "#chart-cost-scenarios rect[fill]")
    assert len(bars) == len(sc)  # one bar per scenario (no reported usage in this log)
    # the same page for a log that tries to inject markup: nothing runs, nothing is fetched
    evil = tmp_path / "evil.html"
    assert run_cli("audit", str(hostile), "--cache-model", "openai", "-f", "html", "-o", str(evil)).returncode == 0
    browser.get(evil.as_uri())
    assert _errors(browser) == []
    assert browser.execute_script("return document.scripts.length + document.images.length") == 0
    assert browser.title.startswith("promptcache audit") and "pwned" not in browser.title
    assert HOSTILE_MODEL in browser.find_element(By.TAG_NAME, "body").text  # shown as text


def test_money_rounds_the_same_in_every_format():
    """Half a hundredth of a cent rounds up whether it comes as Decimal (text report) or as the
    JSON float (HTML, Markdown): $0.00025 is $0.0003 everywhere."""
    from decimal import Decimal

    from promptcache.report import audit_text, html, markdown
    from promptcache.report.numbers import usd

    assert usd(Decimal("0.00025")) == usd(0.00025) == "$0.0003"
    assert usd(Decimal("1234.565")) == usd(1234.565) == "$1,234.57"
    assert audit_text.usd is html.usd is markdown.usd is usd


def test_json_records_keep_integers_beyond_64_bits():
    """orjson writes the records but for integers beyond 64 bits: those go to the standard
    library, the same JSON."""
    from promptcache.report.jsontext import dumps

    rec = {"max_tokens": 2**70 + 3, "é": [0.5, None], 7: "seven"}
    assert json.loads(dumps(rec)) == {"max_tokens": 2**70 + 3, "é": [0.5, None], "7": "seven"}
    assert json.loads(dumps({"n": 2**40})) == {"n": 2**40} and "\n  " in dumps({"n": 1})
