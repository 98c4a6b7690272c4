"""The lint run: files → parsed prompts → checks → lockfile comparison → suppression →
selection → a sorted :class:`LintRun` (and ``--fix``).

One broken file never stops the others: a template that does not parse is a
``template-syntax`` finding, an unreadable file an entry in :attr:`LintRun.errors`.
"""

from __future__ import annotations

import hashlib
import os
import re
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
from .reading import MAX_FILE_BYTES, NotText, read_bytes, read_source
from .reading import decode as decode_source
from .sources import language_of, parse_source
from .stack import DEPTH, deep
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
__all__ = ["MAX_FILE_BYTES", "LintOptions", "LintRun", "lint_paths", "lock_paths", "files_read", "read_source"]


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
        notes: ``(path, message)`` for what a run read but could not lint, or linted only in
            part, and says so: a ``.json`` file that is not JSON, a file named on the command
            line that holds no prompt lint reads, a prompt with more alternatives than are
            checked. Notes never change the exit code.
        internal: ``(path, message)`` for files whose linting raised an internal error (a bug
            in promptcache); the other files are still linted, and the run exits 3.
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
    notes: list[tuple[str, str]] = field(default_factory=list)
    internal: list[tuple[str, str]] = field(default_factory=list)

    @property
    def active(self) -> list[LintFinding]:
        """Findings not suppressed."""
        return [f for f in self.findings if f.suppressed_by is None]

    def failed(self) -> bool:
        """Whether an unsuppressed finding is at or above ``fail_on``."""
        return any(RANK[f.severity] >= RANK[self.fail_on] for f in self.active)


def display_path(p: Path) -> str:
    """A path as reports show it: the path the user gave, made relative to the working
    directory when inside it. Symbolic links are not resolved: a finding in a file reached
    through a linked directory is reported where the user sees it."""
    a = os.path.abspath(p)
    cwd = os.path.abspath(os.getcwd())
    if a == cwd or a.startswith(cwd.rstrip(os.sep) + os.sep):
        return Path(os.path.relpath(a, cwd)).as_posix()
    rel = relative_to(p, Path.cwd())
    return rel if rel is not None else Path(a).as_posix()


class _Configs:
    """Settings per directory, discovered once."""

    def __init__(self, options: LintOptions):
        self.options = options
        self.cache: dict[Path, Settings] = {}
        self.sources: dict[str, None] = {}
        self.rules = tuple(r for r in load_rules() if lint_capable(r))

    def for_dir(self, directory: Path) -> Settings:
        d = Path(os.path.abspath(directory))  # links kept: the config of where the user sees the file
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


def collect_files(paths: Sequence[Path], configs: _Configs, warnings: list[str],
                  notes: list[tuple[str, str]] | None = None, named: set[Path] | None = None) -> list[Path]:
    """The files to lint: named files as given; directories walked (hidden and vendored
    directories skipped, ``exclude`` globs applied), keeping files with a known suffix, and plain
    ``.txt``/``.md``/``.prompt`` files only inside a directory named ``templates`` or with
    "prompt" in its name, READMEs and changelogs left out.

    Symbolic links to directories are followed, and the files under them are reported at the
    path the walk reached them by; a link back to a directory the walk is already in (a loop)
    or has already walked is not followed again (a loop is a note). ``named`` collects the
    files named on the command line.

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
            if named is not None:
                named.add(p)
            continue
        walked = {os.path.realpath(p)}
        for dirpath, dirnames, filenames in os.walk(p, followlinks=True):
            here = os.path.realpath(dirpath)
            keep = []
            for d in sorted(dirnames):
                if (d.startswith(".") and d not in PROMPT_HIDDEN_DIRS) or d in SKIP_DIRS:
                    continue
                full = os.path.join(dirpath, d)
                real = os.path.realpath(full)
                if real in walked or here == real or here.startswith(real.rstrip(os.sep) + os.sep):
                    if os.path.islink(full) and notes is not None:
                        notes.append((display_path(Path(full)), "a link to a directory the walk is in or has "
                                                                "walked already; not followed again"))
                    continue
                walked.add(real)
                keep.append(d)
            dirnames[:] = keep
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


def parse_checked(shown: str, text: str, rules: Sequence[Rule], s: Settings) -> tuple[Parsed, list[LintFinding]]:
    """Parse one file and check it, on a thread with a deep stack (:func:`.stack.deep`): JSON of
    any depth (:mod:`.sources.jsonnodes` is iterative), YAML past libyaml's 1,000 levels, a string
    of 100,000 concatenations is read like any other file. Input nested past
    :data:`.stack.DEPTH` levels is a ``template-syntax`` finding that says so, not a crash."""
    try:
        return deep(_parse_and_check, shown, text, rules, s)
    except RecursionError:
        parsed = Parsed(shown, language_of(shown) or "text")
        parsed.issues.append(Issue("template-syntax", Span.point(shown, 1, 1), "nesting",
                                   {"reason": f"nested more than {DEPTH:,} levels deep (past the recursion limit "
                                              f"lint reads at); nothing in this file was checked"}))
        return parsed, check_parsed(parsed, rules, s)


def _parse_and_check(shown: str, text: str, rules: Sequence[Rule], s: Settings) -> tuple[Parsed, list[LintFinding]]:
    parsed = parse_source(shown, text)
    return parsed, check_parsed(parsed, rules, s)


def _lint_file(path: Path, shown: str, configs: _Configs, options: LintOptions, rules: Sequence[Rule],
               locks: dict[Path, dict[str, Any]], baselines: dict[Path, set[str]]) -> tuple[list[LintFinding], Parsed]:
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
    return [f for f in found if f.rule_id in selected], parsed


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
    notes: list[tuple[str, str]] = []
    named: set[Path] = set()
    files = collect_files(paths, configs, warnings, notes, named)
    findings: list[LintFinding] = []
    errors: list[tuple[str, str]] = [(w.split(":", 1)[0], w.split(": ", 1)[1]) for w in warnings]
    internal: list[tuple[str, str]] = []
    locks: dict[Path, dict[str, Any]] = {}
    baselines: dict[Path, set[str]] = {}
    prompts = 0
    fail_on = None
    for f in files:
        shown = display_path(f)
        s = configs.for_dir(f.parent)
        fail_on = fail_on or s.fail_on
        try:
            got, parsed = _lint_file(f, shown, configs, options, rules, locks, baselines)
        except NotText as e:
            errors.append((shown, str(e)))
            continue
        except InputError as e:
            errors.append((shown, str(e).removeprefix(f"{f}: ")))
            continue
        except OSError as e:
            errors.append((shown, f"cannot read: {e.strerror}"))
            continue
        except (ConfigError, KeyboardInterrupt, MemoryError):
            raise
        except Exception as e:  # noqa: BLE001 - one file's bug never loses the others' findings
            internal.append((shown, f"internal error (a bug in promptcache) while linting this file: "
                                    f"{type(e).__name__}: {e}; the other files were linted"))
            continue
        findings += got
        prompts += len(parsed.docs)
        notes += [(shown, n) for n in parsed.notes]
        if f in named and not parsed.docs and not parsed.issues and not parsed.notes:
            notes.append((shown, "holds no prompt lint reads; see `docs/lint.md` (What it reads) for the "
                                 "shapes each kind of file is read in"))
    if fail_on is None:
        fail_on = configs.for_dir(Path.cwd()).fail_on
    findings.sort(key=lambda f: f.sort_key())
    return LintRun(__version__, rules, findings, [e for e in errors if not e[1].startswith("skipped")],
                   list(configs.sources), fail_on, files=len(files), prompts=prompts, notes=notes,
                   internal=internal)


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
            parsed = deep(parse_source, display_path(f), read_source(f))
        except (NotText, OSError, InputError, RecursionError):
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
