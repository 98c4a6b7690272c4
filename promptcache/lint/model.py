"""The data lint works on: template sources parsed into prompts (:class:`Doc`), and findings.

Plain dataclasses, no I/O. Lines and columns start at 1; ``end_col`` is exclusive (the column
after the last character, as SARIF's ``endColumn``). Token counts are named ``*_tokens``.

A source file becomes zero or more :class:`Doc` s (one per prompt: a template file, a request
body, an SDK call, a prompt constant). A doc is an ordered list of :class:`Part` s in the
provider's prefix order (tools, system, messages); a part is a list of :class:`Piece` s, each
either static text (what the template always renders) or a :class:`Slot` (a variable, a call
or a control block whose output varies), or opaque (stable at run time but of unknown text,
such as a tool list built in code).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

PieceKind = Literal["static", "slot", "opaque", "branch"]


@dataclass(frozen=True, slots=True)
class Span:
    """A place in a file (1-based line and column; ``end_col`` exclusive)."""

    path: str
    line: int
    col: int
    end_line: int
    end_col: int

    @classmethod
    def point(cls, path: str, line: int, col: int, width: int = 1) -> "Span":
        """A span of ``width`` characters on one line."""
        return cls(path, line, col, line, col + max(1, width))


@dataclass(frozen=True, slots=True)
class Slot:
    """A place where the rendered text varies.

    Attributes:
        span: where it is in the source.
        source: its source text (``{{ now() }}``, ``datetime.now()``, ``{% if x %}``).
        kind: ``variable`` (an expression rendered into the text), ``block`` (a loop,
            include or section whose output varies) or ``condition`` (the test of a conditional,
            in a variant of the prompt).
        probes: the texts the rules' ``template_patterns`` are matched against: the source in a
            ``{{ expr }}`` form, the bare expression, and what its names were assigned from.
        names: the names the value is read from, as written (``user.profile``, ``$json.sessionId``,
            ``getCurrentDate``, ``sys.conversation_id``): variables, attribute paths and called
            functions, and the names they were assigned from. :mod:`promptcache.lint.classify`
            splits them into words and matches the rules' ``template_names``.
        items: when the value reads nothing but a loop's items (the loop variable or its
            fields: ``{{ name }}`` in ``{% for name, d in capabilities.items() %}``,
            ``{{escapeXml name}}`` in ``{{#list skills}}``), the names of the loop's iterable
            (``("capabilities",)``); else ``()``. Such a value is of its iterable's kind, not
            of its own name's: the loop is what is reported.
    """

    span: Span
    source: str
    kind: str = "variable"
    probes: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    items: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Piece:
    """Static text, a :class:`Slot`, an opaque stable value (``text`` empty), or a branch.

    A ``branch`` piece is a conditional (``{{#if isAdmin}}``, ``{% if %}``, ``{{ if .X }}``):
    ``slot`` is its condition and ``branches`` the pieces each alternative renders (an ``if``
    with no ``else`` has an empty alternative). :func:`promptcache.lint.checks.variants` expands
    a prompt into one flat variant per alternative. A loop (``{% for %}``, ``{{#each}}``,
    ``{{ range }}``) is a branch with ``loop`` set: its iterable is ``slot``, its body the first
    alternative (rendered once in a variant), an empty list or ``else`` body the second.
    """

    kind: PieceKind
    text: str = ""
    slot: Slot | None = None
    span: Span | None = None
    branches: tuple[tuple["Piece", ...], ...] = ()
    loop: bool = False


@dataclass(slots=True)
class Part:
    """One message, content block or tool of a prompt.

    Attributes:
        role: ``template`` (a whole template file), ``tools``, ``system``, ``developer``,
            ``user``, ``assistant`` or ``tool``.
        name: where it sits (``messages[1].content``, ``system[0]``, ``tools``, ``body``).
        pieces: its content in order.
        span: where it starts.
        breakpoint: where its ``cache_control`` marker is, if it carries one.
    """

    role: str
    name: str
    pieces: list[Piece]
    span: Span
    breakpoint: Span | None = None


@dataclass(slots=True)
class Doc:
    """One prompt found in a source file.

    Attributes:
        path: the file.
        name: the prompt's name inside the file (``template``, ``SYSTEM_PROMPT``,
            ``messages.create@41``); ``path::name`` keys it in the lockfile.
        parts: content in the provider's prefix order.
        span: where the prompt starts.
        model: the model the source names (request body ``model``, Prompty configuration), or
            ``None``.
        provider: the provider the source implies (an Anthropic or OpenAI SDK call), or ``None``.
        automatic_breakpoint: Anthropic top-level ``cache_control`` (automatic caching).
    """

    path: str
    name: str
    parts: list[Part]
    span: Span
    model: str | None = None
    provider: str | None = None
    automatic_breakpoint: Span | None = None

    @property
    def key(self) -> str:
        """``path::name``: the doc's identity in the lockfile."""
        return f"{self.path}::{self.name}"


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text of ``span`` by ``text`` (an insertion when the span is empty)."""

    span: Span
    text: str


@dataclass(slots=True)
class Issue:
    """A finding a source parser reports itself (syntax errors, code patterns, directives).

    Attributes:
        rule: rule id or code.
        span: where.
        match: the offending source text (part of the fingerprint).
        values: placeholders for the rule's message.
        edits: a mechanical fix, if there is one.
    """

    rule: str
    span: Span
    match: str
    values: dict[str, Any] = field(default_factory=dict)
    edits: tuple[Edit, ...] = ()


@dataclass(slots=True)
class Directive:
    """An inline suppression comment.

    Attributes:
        action: ``ignore`` (this line, or the next when the comment stands alone),
            ``disable`` / ``enable`` (a range), or ``file-ignore``.
        codes: the codes, ids, aliases or globs listed.
        span: where the comment is.
        applies_to: the line ``ignore`` covers.
        removal: the edit that deletes the directive (for the unused-suppression fix).
        used: set when it suppresses a finding.
    """

    action: str
    codes: tuple[str, ...]
    span: Span
    applies_to: int
    removal: Edit | None = None
    used: set[str] = field(default_factory=set)


@dataclass(slots=True)
class Parsed:
    """What a source parser returns for one file.

    Attributes:
        path: the file (as reported).
        language: ``jinja``, ``mustache``, ``text``, ``prompty``, ``yaml``, ``json`` or ``python``.
        docs: the prompts found.
        issues: findings the parser reports directly.
        directives: inline suppressions.
        comments: whether the language has comments that are not sent to the model (else
            inline suppression is refused with ``invalid-suppression``).
        notes: what the parser could not read, or read only in part, in one line each (a
            ``.json`` file that is not JSON; a prompt with more alternatives than are checked).
    """

    path: str
    language: str
    docs: list[Doc] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)
    directives: list[Directive] = field(default_factory=list)
    comments: bool = True
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class LintFinding:
    """One finding of ``promptcache lint``.

    Attributes:
        rule_id: kebab-case rule id (``timestamp-in-prefix``).
        code: short code (``PC101``).
        severity: ``info``, ``warning`` or ``error``.
        message: one line, no trailing period.
        span: where.
        doc: the prompt it belongs to (``template``, ``messages.create@41``), or ``None``.
        part: the message or block (``system[0]``), or ``None``.
        match: the offending source text.
        fix_description: what to do (imperative).
        fix_safety: ``safe`` or ``unsafe``.
        edits: the mechanical fix, empty when the fix is advice only.
        token_index: tokens of static prefix before the finding, or ``None``.
        tokens_at_risk: static tokens after it that can no longer be cached, or ``None``.
        fingerprint: identity that survives line moves (rule, file, prompt, match, occurrence).
        suppressed_by: ``inline``, ``config`` or ``baseline`` when suppressed (kept, never dropped).
        values: the facts the message was filled from.
    """

    rule_id: str
    code: str
    severity: str
    message: str
    span: Span
    doc: str | None
    part: str | None
    match: str
    fix_description: str
    fix_safety: str
    edits: tuple[Edit, ...] = ()
    token_index: int | None = None
    tokens_at_risk: int | None = None
    fingerprint: str = ""
    suppressed_by: str | None = None
    values: dict[str, Any] = field(default_factory=dict)

    def sort_key(self) -> tuple[str, int, int, str]:
        """Findings sort by file, line, column, code."""
        return (self.span.path, self.span.line, self.span.col, self.code)
