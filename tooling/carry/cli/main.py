"""The `carry` entry point: every command module registers on `cli.app.app` when imported
here, and every error becomes one line and an exit code. The resume forms of `carry rebase`
that a conflict loop types are read without typer (`rebasing.quick`): importing it costs more
than a `--skip`'s own work."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from carry.base.errors import CarryError, MissingRef

# Each command module registers its commands on `app` when imported, in this order, which is
# the order `carry --help` lists them in.
COMMAND_MODULES = ("intake", "trailers", "rebase", "validate", "publish", "ci", "start",
                   "series")
# The module that registers each command (or group): a run that names one imports that module
# alone, not all eight and what they import (a third of a `carry rebase --skip`'s start-up).
# tests/test_init_status.py checks it against what the modules register.
OWNER = {"import": "intake", "check": "intake", "apply": "intake", "trailers": "trailers",
         "rebase": "rebase", "edit": "rebase", "range-diff": "rebase", "validate": "validate",
         "pr": "publish", "supersede": "publish", "releases": "ci", "ci": "ci",
         "init": "start", "status": "start", "series": "series"}


def register(args: list[str]) -> None:
    """Register on `app` the command module that owns the command `args` name first, or every
    module when they name none (an option such as --help, no command, an unknown word)."""
    owner = OWNER.get(args[0]) if args else None
    for module in (owner,) if owner else COMMAND_MODULES:
        importlib.import_module(f"carry.cli.{module}")


def __getattr__(name: str) -> object:
    """`carry.cli.main.app` with every command registered, for a caller that imports it (a
    test walking the commands); `main` registers only the one it runs."""
    if name == "app":
        from carry.cli import app as _apps

        register([])
        return _apps.app
    raise AttributeError(name)


def _only_the_command_run(args: list[str]) -> None:
    """Keep on `app` only the command this run names first: typer builds the click parameters
    of every registered command on each start (a signature and its annotations each, about a
    dozen ms for all of them), and a run uses one. A run that starts with an option (--help,
    --version), names a group or no known command keeps them all. The app has a callback, so
    it stays a group: the command's name is still parsed as one. `main` runs once a process,
    so the app it trims is never asked for another command."""
    from typer.main import get_command_name

    from carry.cli import app as _apps

    app = _apps.app
    if not args or args[0].startswith("-"):
        return
    mine = [c for c in app.registered_commands if args[0] == (
        c.name or get_command_name(c.callback.__name__ if c.callback else ""))]
    if len(mine) == 1:
        app.registered_commands[:] = mine
        app.registered_groups[:] = []


def _fail(exc: CarryError) -> None:
    if isinstance(exc, MissingRef):  # read from the wrong repository? say --repo
        import contextlib

        from carry.cli import where

        with contextlib.suppress(CarryError):
            where.explain(exc)
    print(f"carry: error: {exc.line()}", file=sys.stderr)
    if "--json" in sys.argv[1:]:  # a script reading stdout gets the error there too
        import json

        print(json.dumps({"error": " ".join(str(exc).split()), "hint": exc.hint,
                          "exit": exc.exit_code}))
    sys.exit(exc.exit_code)


def main() -> None:
    from carry.base import redact

    redact.register_env()
    redact.register_argv(sys.argv[1:])  # --repo https://x:TOKEN@host, --token-env NAME
    sys.stdout = redact.Scrubbed(sys.stdout)
    sys.stderr = redact.Scrubbed(sys.stderr)
    if "--skip" in sys.argv[1:]:  # one worked out ahead imports nothing more
        from carry.rebase import skipmemo

        kept = skipmemo.run(sys.argv[1:], os.environ)
        if kept is not None:
            sys.exit(kept)
    from carry.cli import rebasing

    quick = rebasing.quick(sys.argv[1:], os.environ)
    run = _with_typer(sys.argv[1:]) if quick is None else lambda: rebasing.run(quick)
    try:
        code = run()
    except CarryError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        print("carry: interrupted", file=sys.stderr)
        sys.exit(130)
    except OSError as exc:
        # A path the user gave that the system refuses (--out /dev/null/x, a full disk).
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(CarryError(f"{where}{exc.strerror or exc}"))
    except Exception as exc:  # noqa: BLE001 - the last line of defence: never a traceback
        if os.environ.get("CARRY_DEBUG"):
            raise
        _fail(CarryError(f"internal error: {type(exc).__name__}: {exc}",
                         hint="CARRY_DEBUG=1 shows where; please report it"))
    sys.exit(code if isinstance(code, int) else 0)


def _with_typer(args: list[str]) -> Any:
    """The typer app with the command `args` name registered (alone when it can be), to be
    called: typer's own errors become one line and an exit code; the rest is `main`'s."""
    import typer

    # typer 0.28 (pinned in pyproject) vendors click, so `click` itself need not be installed.
    from typer._click.exceptions import ClickException

    from carry.cli import app as _apps

    register(args)
    _only_the_command_run(args)

    def run() -> Any:
        try:
            return _apps.app(standalone_mode=False)
        except ClickException as exc:
            # One line, as every other error: click's usage block is what --help is for.
            print(f"carry: error: {' '.join(exc.format_message().split())} "
                  "(hint: carry --help, or carry COMMAND --help)", file=sys.stderr)
            sys.exit(exc.exit_code)
        except typer.Abort:
            sys.exit(130)

    return run
