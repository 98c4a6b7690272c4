"""``promptcache lock PATHS...``: record each prompt's stable prefix in the lockfile."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from ..report.terminal import console

from ..errors import ExitCode
from ..fileio import refuse_inputs, write_atomic
from ..plurals import counted


def lock_cmd(
    paths: Optional[list[Path]] = typer.Argument(None, help="Template files and directories (default: the current directory).", show_default=False),
    lockfile: Optional[Path] = typer.Option(None, "--lockfile", help="Where to write (default: promptcache-lock.json beside the config file, or here)."),
    config: Optional[Path] = typer.Option(None, "--config", help="Use this config file instead of discovering one."),
    provider: Optional[str] = typer.Option(None, "--provider", help="Cache rules for prompts that name no model."),
    model: Optional[str] = typer.Option(None, "--model", help="Model for prompts that name none."),
    tokenizer: Optional[str] = typer.Option(None, "--tokenizer", help="o200k_base, cl100k_base, approx, or a tokenizer path."),
) -> int:
    """Write each prompt's stable-prefix token count and hash, per breakpoint, to the lockfile; `lint` then fails when a change shrinks a stable prefix or moves a breakpoint."""
    from ..lint import LintOptions, lock_paths
    from ..lint.engine import files_read
    from ..lint.lockfile import render

    overrides = {k: v for k, v in (("provider", provider), ("model", model), ("tokenizer", tokenizer)) if v is not None}
    opts = LintOptions(config=config, overrides=overrides)
    read = files_read(paths or [Path(".")], opts)  # the lockfile is read, and rewritten: that is the command
    inputs = [config, tokenizer, *read["templates"], *read["configs"]]
    refuse_inputs({"--lockfile": lockfile}, inputs)
    path, entries = lock_paths(paths or [Path(".")], opts, lockfile.resolve() if lockfile else None)
    refuse_inputs({"--lockfile" if lockfile else "the lockfile setting": path}, inputs)
    write_atomic(path, render(entries))
    console(stderr=True).print(f"wrote {path} ({counted(len(entries), 'prompt')})", highlight=False)
    return int(ExitCode.OK)
