"""The ``promptcache`` command line: one small module per command, composed here.

Every command parses its options, calls the library, renders, and returns an exit code
(:class:`~promptcache.errors.ExitCode`). Errors the user can fix print one line on stderr and
exit 2; anything else is a bug and exits 3.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import typer

from .. import __version__
from ..errors import ExitCode, OutputClosed, PromptcacheError
from . import audit as _audit
from . import export as _export
from . import lint as _lint
from . import lock as _lock
from . import rules as _rules
from . import kv as _kv
from . import propose as _propose
from . import replay as _replay

app = typer.Typer(
    name="promptcache",
    help="Find, price and fix what breaks LLM prompt caching.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals hold prompts and keys
    add_completion=False,
)
app.command("audit")(_audit.audit_cmd)
app.command("export")(_export.export_cmd)
app.command("lint")(_lint.lint_cmd)
app.command("lock")(_lock.lock_cmd)
app.add_typer(_rules.app, name="rules")
app.command("kv")(_kv.kv_cmd)
app.command("propose")(_propose.propose_cmd)
app.command("replay")(_replay.replay_cmd)
app.command("formats")(__import__("promptcache.cli.formats", fromlist=["formats_cmd"]).formats_cmd)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"promptcache {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Find, price and fix what breaks LLM prompt caching."""


def _dask_default(argv: list[str]) -> list[str]:
    """``--dask`` takes an optional scheduler address: given alone (last, or before another
    option or a path), it means a local cluster."""
    out = list(argv)
    for i, a in enumerate(out):
        if a == "--dask":
            nxt = out[i + 1] if i + 1 < len(out) else None
            if nxt is None or nxt.startswith("-") or ("://" not in nxt and not nxt.rsplit(":", 1)[-1].isdigit()):
                out.insert(i + 1, "local")
            break
    return out


def _click_errors() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """(usage errors, aborts) of click and of the click Typer vendors (``typer._click``, Typer
    0.20 and later), whichever are installed."""
    usage: list[type] = []
    aborts: list[type] = []
    for mod in ("typer._click.exceptions", "typer.exceptions", "click.exceptions"):
        try:
            m = __import__(mod, fromlist=["ClickException", "Abort"])
        except ImportError:
            continue
        if hasattr(m, "ClickException"):
            usage.append(m.ClickException)
        if hasattr(m, "Abort"):
            aborts.append(m.Abort)
    return tuple(usage), tuple(aborts)


def _one_big_run(argv: list[str]) -> bool:
    """Whether the command is an audit or proposal in this process alone (not on Dask, no
    replay to verify): one run that builds many long-lived objects and ends with the process."""
    return bool(argv) and argv[0] in ("audit", "propose") \
        and not any(a.split("=", 1)[0] in ("--dask", "--verify") for a in argv)


def _leave(code: int, argv: list[str]) -> NoReturn:
    """Exit with ``code`` once the output is flushed, without tearing the interpreter down.

    An audit of a fleet-size log ends holding millions of objects (prefix tree nodes, outcomes,
    memos); freeing them one by one at exit takes seconds and serves nothing, as the operating
    system reclaims the memory at once. The report and every output file are written and closed
    by then. Only ``audit`` and ``propose`` exit so, and not with ``--dask`` (its cluster shuts
    down at exit) or ``--verify`` (a replay engine may hold worker processes), nor inside a test
    process; every other command exits normally.
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # the reader of stdout went away after the last write
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = int(ExitCode.PIPE_CLOSED)
    if _exits_at_once(argv):
        os._exit(code)
    sys.exit(code)


def _one_pipeline(argv: list[str]) -> bool:
    """Whether the command runs one pipeline: an audit without proposals (a proposal
    re-simulates the log, and keeping the first run's state would add to its peak memory)."""
    return bool(argv) and argv[0] == "audit" and not any(
        a.split("=", 1)[0] in ("--propose", "--write-proposed") or a in ("proposals", "--table=proposals") for a in argv)


def _exits_at_once(argv: list[str]) -> bool:
    """Whether :func:`_leave` ends the process without tearing the interpreter down."""
    return _one_big_run(argv) and "pytest" not in sys.modules


def main() -> None:
    """Console entry point: run the app and map errors to exit codes (0 done, 1 findings at or
    above ``--fail-on``, 2 bad input or usage, 3 a bug, 130 interrupted, 141 output pipe closed)."""
    from ..report.terminal import console
    from rich.markup import escape

    err = console(stderr=True)
    usage, aborts = _click_errors()
    if _one_big_run(sys.argv[1:]):
        import gc

        from ..pipeline import GC_THRESHOLDS

        gc.set_threshold(*GC_THRESHOLDS)  # kept to the end (see pipeline.fewer_collections)
    if _exits_at_once(sys.argv[1:]) and _one_pipeline(sys.argv[1:]):
        from .. import pipeline

        pipeline.KEPT_TO_EXIT = []  # the run's state is left to the exit (see pipeline.collect)
    try:
        argv = _dask_default(sys.argv[1:])
        rc = app(args=argv, standalone_mode=False)
        if rc == ExitCode.INTERRUPTED:  # typer returns an interrupt inside a command as its exit code
            err.print("interrupted")
        sys.stdout.flush()
    except PromptcacheError as e:
        err.print(f"[red]error:[/] {escape(str(e))}", highlight=False, soft_wrap=True)
        sys.exit(int(e.exit_code))
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(int(ExitCode.INTERRUPTED))
    except (OutputClosed, BrokenPipeError):  # `promptcache audit LOG | head`: the reader left
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(int(ExitCode.PIPE_CLOSED))
    except (typer.Exit, SystemExit) as e:
        code = getattr(e, "exit_code", getattr(e, "code", 0))
        _leave(int(code or 0), sys.argv[1:])
    except usage as e:  # bad options or arguments: click's one-line message and usage hint
        e.show()
        sys.exit(int(ExitCode.USAGE))
    except aborts:
        sys.exit(int(ExitCode.INTERRUPTED))
    except Exception as e:
        import traceback

        err.print(f"[red]internal error (a bug in promptcache):[/] {escape(f'{type(e).__name__}: {e}')}")
        err.print("[dim]" + escape("".join(traceback.format_exception(e)[-3:])) + "[/]", highlight=False)
        sys.exit(int(ExitCode.INTERNAL))
    _leave(int(rc or 0), argv)
