"""Prices: genai-prices' own numbers, custom files, unknown models."""

from __future__ import annotations

from decimal import Decimal

import pytest
from genai_prices import Usage, calc_price

from promptcache.errors import ConfigError
from promptcache.pricing import PriceBook


def test_anthropic_5m_and_1h_writes_match_genai_prices():
    r = PriceBook().rates("anthropic", "claude-sonnet-4-5", None)
    # Sonnet 4.5: $3 input, $0.30 read, $3.75 5-min write, $6 1-hour write per million tokens
    assert r.cost(1000, 600, 300, 0) == Decimal("0.001605")        # 100×3 + 600×0.3 + 300×3.75
    assert r.cost(1000, 600, 300, 300) == Decimal("0.00228")       # 100×3 + 600×0.3 + 300×6
    lib = calc_price(Usage(input_tokens=1000, cache_read_tokens=600, cache_write_tokens=300), "claude-sonnet-4-5",
                     provider_id="anthropic")
    assert lib.input_price == r.cost(1000, 600, 300, 0)


def test_openai_read_discount_and_free_writes():
    r = PriceBook().rates("openai", "gpt-4o", None)
    # gpt-4o: $2.50 input, $1.25 cached: 720×2.5 + 1280×1.25 = 3,400 per million
    assert r.cost(2000, 1280) == Decimal("0.0034")
    # writes are billed as plain input when the provider has no write price
    assert r.cost(2000, 0, 500, 0, bills_writes=False) == Decimal("0.005")


def test_tiered_prices_are_cliffs():
    r = PriceBook().rates("anthropic", "claude-sonnet-4-5", None)
    small, big = r.cost(200_000, 0), r.cost(200_001, 0)
    assert small == Decimal("0.6")                                  # 200k × $3
    assert big == Decimal("1.200006")                               # every token at the >200k rate, $6


def test_custom_prices_file(tmp_path):
    f = tmp_path / "prices.yaml"
    f.write_text("models:\n  my-llama-*:\n    input: 0.20\n    cache_read: 0.02\n    output: 0.60\n    source: contract 2026-10\n")
    r = PriceBook(f).rates(None, "my-llama-70b", None)
    assert r.cost(10_000, 8_000) == Decimal("0.00056")              # 2000×0.2 + 8000×0.02
    bad = tmp_path / "bad.yaml"
    bad.write_text("models:\n  m:\n    inptu: 1\n")
    with pytest.raises(ConfigError, match="needs at least 'input'"):
        PriceBook(bad)


def test_unknown_model_is_unpriced_not_fatal():
    book = PriceBook()
    assert book.rates("openai", "gpt-nonexistent-9000", None) is None
    assert "gpt-nonexistent-9000" in book.unknown
