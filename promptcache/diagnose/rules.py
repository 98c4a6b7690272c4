"""Cache-breaking causes as data: ``rules/lint/<rule-id>.yaml``, one rule per file.

Each rule configures one of a small closed set of check kinds (:data:`KINDS`); new behaviour
means a new kind with its own options and tests, never code in a rule file. The same files
drive ``promptcache audit`` (on traffic) and ``promptcache lint`` (on templates), and their
``examples`` run as tests.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..datafiles import RULES_DIR, read_mapping
from ..errors import ConfigError

#: The closed set of check kinds a rule may use (``capacity``: a cache that evicted what it held;
#: ``reported-usage``: causes only the log's reported usage shows, checked where it reports fewer
#: cached tokens than the simulation; ``routing``: a model's prefix held in the cache of another
#: upstream or rules file than the one that served the request, checked where the simulated rules
#: miss what the model's ideal cache serves). ``template`` rules (template syntax, suppression
#: bookkeeping, static prefix length, the prefix lockfile) are checked by ``promptcache lint`` only
#: (:mod:`promptcache.lint.checks`, chosen by ``options.check``); the traffic diagnosis ignores
#: them, as it ignores any kind it does not handle.
KINDS = ("value-pattern", "structural-diff", "parameter-diff", "length-threshold", "timing", "key-usage",
         "breakpoint", "capacity", "reported-usage", "routing", "template")
SEVERITIES = ("info", "warning", "error")
RANK = {s: i for i, s in enumerate(SEVERITIES)}

_KEYS = {"id", "code", "kind", "severity", "summary", "message", "why", "fix", "options", "examples",
         "references", "since", "aliases", "scope"}
_CODE = re.compile(r"^PC\d{3}$")
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Rule:
    """One rule file.

    Attributes:
        id: kebab-case name (equals the file name).
        code: short code ``PCnnn`` for suppressions and grep.
        kind: the check kind (:data:`KINDS`).
        severity: ``info``, ``warning`` or ``error``.
        summary: one line.
        message: template with ``{placeholders}`` filled per finding.
        why: why it breaks caching.
        fix: ``{"description", "safety"}``.
        options: kind-specific settings.
        examples: ``{"logs": {"bad": [...], "good": [...]}, "templates": {...}}``.
        references: URLs.
        aliases: older codes or ids that still resolve to this rule.
        path: the file.
    """

    id: str
    code: str
    kind: str
    severity: str
    summary: str
    message: str
    why: str
    fix: Mapping[str, Any]
    options: Mapping[str, Any] = field(default_factory=dict)
    examples: Mapping[str, Any] = field(default_factory=dict)
    references: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    since: str = "0.1.0"
    path: str = ""

    def patterns(self, key: str = "patterns") -> list[re.Pattern[str]]:
        """The compiled regexes of option ``key`` (cached per rule)."""
        return _compiled(self.id, key, tuple(self.options.get(key) or ()))

    def period_patterns(self) -> list[tuple[str, list[re.Pattern[str]]]]:
        """``options.template_period_patterns`` compiled: per period (``month``), the regexes
        whose match on a finding's evidence says the value changes at that rate."""
        got = self.options.get("template_period_patterns") or {}
        if not isinstance(got, dict):
            raise ConfigError(f"rule {self.id}: options.template_period_patterns must map a period to regexes")
        return [(str(k), _compiled(self.id, f"template_period_patterns.{k}", tuple(v or ()))) for k, v in got.items()]

    def format(self, **values: Any) -> str:
        """The message with placeholders filled (unknown placeholders stay visible; a count of
        1 takes the singular: :func:`promptcache.plurals.fill`)."""
        from ..plurals import fill

        return fill(self.message, values)


@lru_cache(maxsize=None)
def _compiled(rule_id: str, key: str, pats: tuple[str, ...]) -> list[re.Pattern[str]]:
    out = []
    for p in pats:
        try:
            out.append(re.compile(p))
        except re.error as e:
            raise ConfigError(f"rule {rule_id}: bad regex in options.{key}: {e}") from None
    return out


def parse_rule(path: Path) -> Rule:
    """Load and validate one rule file.

    Raises:
        ConfigError: naming the file and the bad key or value.
    """
    d = read_mapping(path, _KEYS)
    for k in ("id", "code", "kind", "severity", "summary", "message", "why", "fix"):
        if k not in d:
            raise ConfigError(f"{path}: missing required key {k!r}")
    if d["id"] != path.stem or not _ID.match(d["id"]):
        raise ConfigError(f"{path}: 'id' must be kebab-case and equal the file name ({path.stem!r})")
    if not _CODE.match(str(d["code"])):
        raise ConfigError(f"{path}: 'code' must look like PC123")
    if d["kind"] not in KINDS:
        raise ConfigError(f"{path}: 'kind' {d['kind']!r} unknown; available: {', '.join(KINDS)}")
    if d["severity"] not in SEVERITIES:
        raise ConfigError(f"{path}: 'severity' must be one of {', '.join(SEVERITIES)}")
    fix = d["fix"]
    if not isinstance(fix, dict) or "description" not in fix or fix.get("safety") not in ("safe", "unsafe"):
        raise ConfigError(f"{path}: 'fix' needs 'description' and 'safety' (safe|unsafe)")
    rule = Rule(id=d["id"], code=str(d["code"]), kind=d["kind"], severity=d["severity"], summary=str(d["summary"]),
                message=str(d["message"]), why=str(d["why"]).strip(), fix=fix, options=d.get("options") or {},
                examples=d.get("examples") or {}, references=tuple(d.get("references") or ()),
                aliases=tuple(d.get("aliases") or ()), since=str(d.get("since", "0.1.0")), path=str(path))
    for key in ("patterns", "template_patterns", "context_patterns"):
        rule.patterns(key)  # validate regexes up front
    rule.period_patterns()
    return rule


@lru_cache(maxsize=None)
def load_rules(directory: str | None = None) -> tuple[Rule, ...]:
    """Every rule in ``directory`` (default: the shipped ``rules/lint``), sorted by code.

    Raises:
        ConfigError: for the first invalid file, or duplicate ids, codes or aliases.
    """
    d = Path(directory) if directory else RULES_DIR / "lint"
    rules = [parse_rule(p) for p in sorted(d.glob("*.yaml"))]
    seen: dict[str, str] = {}
    for r in rules:
        for name in (r.id, r.code, *r.aliases):
            if name in seen:
                raise ConfigError(f"{r.path}: {name!r} is already used by {seen[name]}")
            seen[name] = r.path
    return tuple(sorted(rules, key=lambda r: r.code))


def resolve(name: str, rules: tuple[Rule, ...] | None = None) -> Rule:
    """A rule by id, code or alias.

    Raises:
        ConfigError: listing what exists.
    """
    rules = rules or load_rules()
    for r in rules:
        if name in (r.id, r.code, *r.aliases):
            return r
    raise ConfigError(f"no rule {name!r}; see `promptcache rules`")
