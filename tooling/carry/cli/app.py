"""The typer app and the options several commands share, declared once.

Command modules (`cli.intake`, `cli.rebase`, ...) import this module and register on `app`;
`cli.main` imports them all. This module imports no command module, so there is no cycle. Each
command is one small function: the work lives in its stage package, the printing in `views`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from carry.base.errors import CarryError

if TYPE_CHECKING:
    from collections.abc import Callable

    Command = Callable[..., None]

app = typer.Typer(
    name="carry",
    help="Keep carried patch series alive on top of a moving upstream.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
series_app = typer.Typer(help="List and inspect the series in series/.", no_args_is_help=True)
app.add_typer(series_app, name="series")

Json = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
SeriesDir = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional here
    typer.Option("--series-dir", envvar="CARRY_SERIES_DIR", show_envvar=True,
                 help="Where the series live (default: the nearest series/ from here up to "
                      "the top of this git checkout; else series/ beside the checkout, or "
                      "that of the one sibling checkout that has one)."),
]
def _name(value: str | None) -> str | None:
    """Names are checked where they are parsed: a bad one never reaches a path."""
    from carry.series.store import check_name

    try:
        return value if value is None else check_name(value)
    except CarryError as exc:
        raise typer.BadParameter(exc.line()) from None


def _remote(value: str | None) -> str | None:
    """A remote is never an option: `--remote --upload-pack=CMD` would run CMD."""
    from carry.git import check_remote

    try:
        return value if value is None else check_remote(value)
    except CarryError as exc:
        raise typer.BadParameter(exc.line()) from None


def _branch(value: str | None) -> str | None:
    """A branch is never an option: `--branch -x` would write refs/heads/-x."""
    if value is not None and (value.startswith("-") or not value.strip()):
        raise typer.BadParameter(f"{value!r} is not a branch name (it cannot start with '-')")
    return value


Name = Annotated[str, typer.Argument(callback=_name,
                                     help="The series name, a directory under series/.")]
REPO_RULE = ("default: the git checkout of the current directory, when it defines a remote "
             "the manifest names")
RepoPath = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--repo", envvar="CARRY_REPO", show_envvar=True, metavar="PATH",
    help=f"Your clone of upstream, to work in ({REPO_RULE}).")]
Engine = Annotated[str, typer.Option(help="Where to run: docker, podman or local.")]
ForgeRepo = Annotated[str, typer.Option("--forge-repo",
                                         help="The GitHub repository, owner/name.")]
ApiUrl = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--api-url", envvar="GITHUB_API_URL", help="GitHub API base URL.")]
TokenEnv = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--token-env", help="Environment variable that holds the token (never printed; "
    "default: $GH_TOKEN, then $GITHUB_TOKEN).")]
MaxWait = Annotated[float, typer.Option(
    "--max-wait", min=0, metavar="SECONDS",
    help="Longest total wait for GitHub's rate limits and outages before giving up.")]
Python = Annotated[Optional[str], typer.Option(  # noqa: UP045
    help="Interpreter for the steps (default: the plan's [test].python).")]


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"carry {version('carry')}")
        except PackageNotFoundError:
            print("carry (not installed)")
        raise typer.Exit(0)


@app.callback()
def _top(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print carry's version and exit.")] = False,
) -> None:
    """Keep carried patch series alive on top of a moving upstream.

    Start with: carry init NAME --upstream OWNER/REPO --fork OWNER/REPO --repo PATH
    """


def _root(series_dir: Path | None) -> Path:
    from carry.series.store import series_dir as locate

    return locate(series_dir)


def _repo(repo: str | None, root: Path, *names: str) -> str:
    """--repo by the one rule of `cli.where`, for a command that needs a repository."""
    from carry.cli.where import repo_path

    found = repo_path(repo, root, names)
    assert found is not None  # needed: repo_path raises rather than give none
    return found


def grouped(param: str, flags: Callable[..., object]) -> Callable[[Command], Command]:
    """Put the options `flags` declares on a command in place of its parameter `param`, which
    gets what `flags` makes of them: a group of options shared by several commands is declared
    once, and typer still parses every one of them. `param` is keyword-only (after `*`), so it
    can stand where its options belong in --help. The group's type is imported only when a
    command runs, so at start-up its name stands for `object`."""
    import functools
    import inspect

    def wrap(fn: Command) -> Command:
        declared = list(inspect.signature(flags, eval_str=True).parameters.values())
        sig = inspect.signature(fn, eval_str=True)
        at = list(sig.parameters).index(param)
        params = list(sig.parameters.values())
        params[at:at + 1] = [p.replace(kind=params[at].kind) for p in declared]

        @functools.wraps(fn)
        def command(*args: object, **kw: Any) -> None:
            kw[param] = flags(**{p.name: kw.pop(p.name) for p in declared})
            fn(*args, **kw)

        del command.__wrapped__  # typer must read the signature below, not fn's
        command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return wrap
