"""The lint run: files → parsed prompts → checks → lockfile comparison → suppression →
selection → a sorted :class:`LintRun` (and ``--fix``).

One broken file never stops the others: a template that does not parse is a
``template-syntax`` finding, an unreadable file an entry in :attr:`LintRun.errors`.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from .. import __version__
from ..diagnose.rules import RANK, Rule, load_rules
from ..errors import ConfigError, InputError
from . import lockfile as lockmod
from .checks import check_parsed, finding, lint_capable, metrics, target_for
from .config import Settings, discover, glob_match, parse_table, read_table, relative_to
from .model import Issue, LintFinding, Parsed, Span
from .sources import language_of, parse_source
from .suppress import (apply_baseline, apply_directives, apply_per_file, expand, read_baseline, unknown_selectors,
                       unused)

#: Directories a directory walk never enters.
SKIP_DIRS = {"node_modules", "__pycache__", "venv", "site-packages", "build", "dist"}
#: Hidden directories a walk does enter: where coding agents and editors keep prompt files.
PROMPT_HIDDEN_DIRS = {".claude", ".cursor", ".github", ".continue", ".windsurf"}
#: Directories whose plain ``.txt``/``.md``/``.prompt`` files a directory walk takes for prompts.
_PROMPT_DIR = re.compile(r"(?i)^templates?$|prompt|^\.claude$|^\.cursor$|^agents$|^commands$")
#: Plain-text files that are prompts wherever they are (Semantic Kernel, Copilot, Cursor).
_PROMPT_FILE = re.compile(r"(?i)^skprompt\.txt$|\.prompt\.md$|\.mdc$")
_DOC_FILE = re.compile(r"(?i)^(readme|changelog|changes|license|contributing|authors)\b")
#: The largest file lint reads (bytes); a larger one is an input error, not a prompt.
MAX_FILE_BYTES = 64 * 1024 * 1024


@dataclass
class LintOptions:
    """What the command line sets.

    Attributes:
        config: ``--config FILE`` (replaces discovery), or ``None``.
        overrides: settings from flags, under their config keys (``select``, ``fail-on``, ...);
            paths already absolute.
        no_suppress: ignore inline directives, per-file ignores and the baseline (an audit).
        fix: apply safe fixes (``unsafe_fixes``: unsafe ones too).
        use_lockfile: compare against the lockfile when one exists.
    """

    config: Path | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    no_suppress: bool = False
    fix: bool = False
    unsafe_fixes: bool = False
    use_lockfile: bool = True


@dataclass
class LintRun:
    """The result of a lint run (every reporter renders this).

    Attributes:
        tool_version: promptcache's version.
        rules: the rules that ran.
        findings: sorted by file, line, column, code; suppressed ones included.
        errors: ``(path, message)`` for files that could not be read.
        config_sources: the config files used.
        fail_on: the severity threshold.
        files, prompts: how many files were linted and prompts found.
        fixed: edits ``--fix`` applied.
    """

    tool_version: str
    rules: tuple[Rule, ...]
    findings: list[LintFinding]
    errors: list[tuple[str, str]]
    config_sources: list[str]
    fail_on: str
    files: int = 0
    prompts: int = 0
    fixed: int = 0

    @property
    def active(self) -> list[LintFinding]:
        """Findings not suppressed."""
        return [f for f in self.findings if f.suppressed_by is None]

    def failed(self) -> bool:
        """Whether an unsuppressed finding is at or above ``fail_on``."""
        return any(RANK[f.severity] >= RANK[self.fail_on] for f in self.active)


def display_path(p: Path) -> str:
    """A path as reports show it: relative to the working directory when inside it."""
    rel = relative_to(p, Path.cwd())
    return rel if rel is not None else p.resolve().as_posix()


class _Configs:
    """Settings per directory, discovered once."""

    def __init__(self, options: LintOptions):
        self.options = options
        self.cache: dict[Path, Settings] = {}
        self.sources: dict[str, None] = {}
        self.rules = tuple(r for r in load_rules() if lint_capable(r))

    def for_dir(self, directory: Path) -> Settings:
        d = directory.resolve()
        got = self.cache.get(d)
        if got is not None:
            return got
        src = self.options.config.resolve() if self.options.config else discover(d)
        table = read_table(src) if src else {}
        root = src.parent if src else Path.cwd().resolve()
        s = parse_table(table, src, root)
        if self.options.overrides:
            merged = dict(table)
            merged.update(self.options.overrides)
            if "extend-select" in self.options.overrides and "extend-select" in table:
                merged["extend-select"] = [*table["extend-select"], *self.options.overrides["extend-select"]]
            s = parse_table(merged, src, root)
        for key, sels in (("select", s.select or ()), ("extend-select", s.extend_select), ("ignore", s.ignore)):
            bad = unknown_selectors(sels, self.rules)
            if bad:
                raise ConfigError(f"{src or 'command line'}: {key}: no rule {bad[0]!r}; see `promptcache rules`")
        if src:
            self.sources[str(src)] = None
        self.cache[d] = s
        return s

    def selected(self, s: Settings) -> set[str]:
        ids = {r.id for r in self.rules} if s.select is None else expand(s.select, self.rules)
        ids |= expand(s.extend_select, self.rules)
        return ids - expand(s.ignore, self.rules)


def collect_files(paths: Sequence[Path], configs: _Configs, warnings: list[str]) -> list[Path]:
    """The files to lint: named files as given; directories walked (hidden and vendored
    directories skipped, ``exclude`` globs applied), keeping files with a known suffix, and plain
    ``.txt``/``.md``/``.prompt`` files only inside a directory named ``templates`` or with
    "prompt" in its name, READMEs and changelogs left out.

    Raises:
        InputError: for a path that does not exist.
    """
    out: dict[Path, None] = {}
    for p in paths:
        if not p.exists():
            raise InputError("no such file or directory", path=str(p))
        if not p.is_file() and not p.is_dir():
            raise InputError("not a regular file or a directory", path=str(p))
        if p.is_file():
            if language_of(p) is None:
                warnings.append(f"{p}: skipped (no template parser for `{p.suffix or p.name}`)")
                continue
            out[p] = None
            continue
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames[:] = sorted(d for d in dirnames if (not d.startswith(".") or d in PROMPT_HIDDEN_DIRS)
                                 and d not in SKIP_DIRS)
            for name in sorted(filenames):
                f = Path(dirpath) / name
                lang = language_of(f)
                if lang is None or not f.is_file():
                    continue  # no parser, or not a regular file (a FIFO, a socket, a device)
                if lang == "text" and not _PROMPT_FILE.search(name) and (
                        not any(_PROMPT_DIR.search(part) for part in f.parent.parts) or _DOC_FILE.match(name)):
                    continue  # READMEs and docs are not prompts; name such files to lint them
                s = configs.for_dir(f.parent)
                rel = relative_to(f, s.root)
                if rel is not None and any(glob_match(g, rel) for g in s.exclude):
                    continue
                out[f] = None
    return list(out)


def fingerprint(f: LintFinding, k: int) -> str:
    """Identity of a finding that ignores line numbers: rule, file, prompt, part, the matched
    text (whitespace collapsed) and its occurrence index among identical ones."""
    key = "\0".join((f.rule_id, f.span.path, f.doc or "", f.part or "", " ".join(f.match.split()), str(k)))
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def read_source(path: Path) -> str:
    """A source file's text, opened so that a file that is not regular (a FIFO put where a
    template was) never blocks: non-blocking open, then ``fstat``.

    Raises:
        InputError: for a file that is not regular or is larger than :data:`MAX_FILE_BYTES`.
        OSError: when it cannot be read.
        UnicodeDecodeError: when it is not UTF-8.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError("not a regular file", path=str(path))
        if st.st_size > MAX_FILE_BYTES:
            raise InputError(f"{st.st_size:,} bytes; lint reads files of at most {MAX_FILE_BYTES:,}", path=str(path))
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8")


def parse_checked(shown: str, text: str, rules: Sequence[Rule], s: Settings) -> tuple[Parsed, list[LintFinding]]:
    """Parse one file and check it. Input nested deeper than Python's recursion limit (JSON or
    YAML 10,000 levels deep, a string of 100,000 concatenations) is a ``template-syntax``
    finding, not a crash."""
    try:
        parsed = parse_source(shown, text)
        return parsed, check_parsed(parsed, rules, s)
    except RecursionError:
        parsed = Parsed(shown, language_of(shown) or "text")
        parsed.issues.append(Issue("template-syntax", Span.point(shown, 1, 1), "nesting",
                                   {"reason": "nested too deeply to read (past Python's recursion limit); "
                                              "nothing in this file was checked"}))
        return parsed, check_parsed(parsed, rules, s)


def _lint_file(path: Path, shown: str, configs: _Configs, options: LintOptions, rules: Sequence[Rule],
               locks: dict[Path, dict[str, Any]], baselines: dict[Path, set[str]]) -> tuple[list[LintFinding], int]:
    s = configs.for_dir(path.parent)
    text = read_source(path)
    parsed, found = parse_checked(shown, text, rules, s)
    by_id = {r.id: r for r in rules}
    # lockfile
    lock_path = s.lockfile_path()
    if options.use_lockfile and lock_path.is_file():
        if lock_path not in locks:
            locks[lock_path] = lockmod.read(lock_path)
        entries = locks[lock_path]
        for doc in parsed.docs:
            doc_abs = type(doc)(str(path), doc.name, doc.parts, doc.span)
            locked = entries.get(lockmod.key_for(doc_abs, lock_path.parent))
            if locked is not None:
                t = target_for(doc, s)
                found += lockmod.compare(doc, t, metrics(doc, t), locked, rules, s)
    elif options.use_lockfile and s.lockfile is not None and "lockfile" in options.overrides:
        raise InputError("lockfile not found; write one with `promptcache lock`", path=str(lock_path))
    # directives naming no rule
    inv = by_id.get("invalid-suppression")
    for d in parsed.directives:
        bad = unknown_selectors(d.codes, configs.rules)
        if bad and inv is not None:
            found.append(finding(inv, d.span, f"promptcache: {d.action}[{', '.join(d.codes)}]",
                                 {"reason": f"no rule `{bad[0]}`; see `promptcache rules`"}))
        d.codes = tuple(c for c in d.codes if c not in bad)
    selected = configs.selected(s)
    if not options.no_suppress:
        apply_directives(found, parsed.directives, configs.rules)
        un = by_id.get("unused-suppression")
        if un is not None:
            for d, idle in unused(parsed.directives, configs.rules, selected):
                whole = len(idle) == len(d.codes)
                found.append(finding(un, d.span, f"promptcache: {d.action}[{', '.join(d.codes)}]",
                                     {"codes": ", ".join(idle)},
                                     edits=(d.removal,) if whole and d.removal is not None else ()))
    counts: dict[tuple[str, str, str, str, str], int] = {}
    for f in sorted(found, key=lambda f: f.sort_key()):
        key = (f.rule_id, f.span.path, f.doc or "", f.part or "", " ".join(f.match.split()))
        k = counts.get(key, 0)
        counts[key] = k + 1
        f.fingerprint = fingerprint(f, k)
    if not options.no_suppress:
        apply_per_file(found, s.per_file_ignores, relative_to(path, s.root), configs.rules)
        if s.baseline is not None:
            if s.baseline not in baselines:
                baselines[s.baseline] = read_baseline(s.baseline)
            apply_baseline(found, baselines[s.baseline])
    return [f for f in found if f.rule_id in selected], len(parsed.docs)


def lint_paths(paths: Iterable[str | Path], options: LintOptions | None = None) -> LintRun:
    """Lint template sources.

    Args:
        paths: files and directories.
        options: command-line settings.

    Returns:
        The :class:`LintRun` (after ``--fix`` when asked: the findings that remain).

    Raises:
        ConfigError: for a bad config file, selector or lockfile setting.
        InputError: for a path that does not exist, or an unreadable baseline or lockfile.
    """
    options = options or LintOptions()
    run = _run([Path(p) for p in paths], options)
    if options.fix:
        from .fixes import apply

        total = 0
        for _ in range(3):
            n = apply(run.findings, unsafe=options.unsafe_fixes)
            if not n:
                break
            total += n
            run = _run([Path(p) for p in paths], options)
        run.fixed = total
    return run


def _run(paths: list[Path], options: LintOptions) -> LintRun:
    configs = _Configs(options)
    rules = configs.rules
    warnings: list[str] = []
    files = collect_files(paths, configs, warnings)
    findings: list[LintFinding] = []
    errors: list[tuple[str, str]] = [(w.split(":", 1)[0], w.split(": ", 1)[1]) for w in warnings]
    locks: dict[Path, dict[str, Any]] = {}
    baselines: dict[Path, set[str]] = {}
    prompts = 0
    fail_on = None
    for f in files:
        shown = display_path(f)
        s = configs.for_dir(f.parent)
        fail_on = fail_on or s.fail_on
        try:
            got, n = _lint_file(f, shown, configs, options, rules, locks, baselines)
        except UnicodeDecodeError as e:
            errors.append((shown, f"not UTF-8 text ({e.reason} at byte {e.start})"))
            continue
        except InputError as e:
            errors.append((shown, str(e).removeprefix(f"{f}: ")))
            continue
        except OSError as e:
            errors.append((shown, f"cannot read: {e.strerror}"))
            continue
        findings += got
        prompts += n
    if fail_on is None:
        fail_on = configs.for_dir(Path.cwd()).fail_on
    findings.sort(key=lambda f: f.sort_key())
    return LintRun(__version__, rules, findings, [e for e in errors if not e[1].startswith("skipped")],
                   list(configs.sources), fail_on, files=len(files), prompts=prompts)


def lock_paths(paths: Iterable[str | Path], options: LintOptions | None = None,
               lockfile: Path | None = None) -> tuple[Path, dict[str, dict[str, Any]]]:
    """The lockfile entries of every prompt under ``paths``, and where they go.

    Entries already in the lockfile for files outside ``paths`` are kept; those under ``paths``
    are replaced (a deleted file's entries drop out).

    Raises:
        ConfigError, InputError: as :func:`lint_paths`.
    """
    options = options or LintOptions()
    configs = _Configs(options)
    paths = list(paths)
    files = collect_files([Path(p) for p in paths], configs, [])
    target_file = lockfile
    entries: dict[str, dict[str, Any]] = {}
    for f in files:
        s = configs.for_dir(f.parent)
        lp = (target_file or s.lockfile_path()).resolve()
        target_file = lp
        try:
            parsed = parse_source(display_path(f), read_source(f))
        except (UnicodeDecodeError, OSError, InputError, RecursionError):
            continue
        for doc in parsed.docs:
            t = target_for(doc, s)
            doc_abs = type(doc)(str(f), doc.name, doc.parts, doc.span)
            entries[lockmod.key_for(doc_abs, lp.parent)] = lockmod.entry(doc, t, metrics(doc, t))
    if target_file is None:
        target_file = (lockfile or configs.for_dir(Path.cwd()).lockfile_path()).resolve()
    if target_file.is_file():
        # entries of files under the paths locked now are replaced (deleted files drop out);
        # entries of other files are kept
        roots = [Path(p).resolve() for p in paths]
        for k, v in lockmod.read(target_file).items():
            f = (target_file.parent / k.rsplit("::", 1)[0]).resolve()
            if not any(f == r or r in f.parents for r in roots):
                entries.setdefault(k, v)
    return target_file, entries


def files_read(paths: Iterable[str | Path], options: LintOptions | None = None) -> dict[str, list[Path]]:
    """What a lint or lock run over ``paths`` reads, by role: ``templates`` (the files a run
    lints), ``configs`` (the config files that apply to them), ``baselines`` and ``lockfiles``
    (those the settings name, where they exist). The commands refuse any of them as an output.

    Raises:
        ConfigError, InputError: as :func:`lint_paths`.
    """
    options = options or LintOptions()
    configs = _Configs(options)
    files = collect_files([Path(p) for p in paths], configs, [])
    settings = [configs.for_dir(d) for d in dict.fromkeys([f.parent for f in files] + [Path.cwd()])]
    found: dict[str, dict[Path, None]] = {"configs": {}, "baselines": {}, "lockfiles": {}}
    for s in settings:
        for role, p in (("configs", s.source), ("baselines", s.baseline), ("lockfiles", s.lockfile_path())):
            if p is not None and p.exists():
                found[role][p] = None
    return {"templates": files, **{k: list(v) for k, v in found.items()}}
