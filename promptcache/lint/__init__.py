"""``promptcache lint``: check prompt templates with the rules the audit applies to traffic.

:func:`lint_paths` is the library entry point; :mod:`.sources` parses each template language,
:mod:`.checks` judges prompts, :mod:`.suppress` handles directives and baselines,
:mod:`.lockfile` the prefix lockfile, :mod:`.fixes` ``--fix``.
"""

from .engine import LintOptions, LintRun, lint_paths, lock_paths

__all__ = ["LintOptions", "LintRun", "lint_paths", "lock_paths"]
