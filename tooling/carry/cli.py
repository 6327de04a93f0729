"""The `carry` command line: parse, call, print. Each command is one small function; the work
lives in the module named after it, and the printing in `views`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from carry.errors import CarryError

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
                 help="Where the series live (default: series/ of this checkout)."),
]
def _name(value: str | None) -> str | None:
    """Names are checked where they are parsed: a bad one never reaches a path."""
    from carry.series import check_name

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
RepoPath = Annotated[str, typer.Option("--repo", help="Path of the git repository to work in.")]
Engine = Annotated[str, typer.Option(help="Where to run: docker, podman or local.")]
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
    from carry.series import series_dir as locate

    return locate(series_dir)


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


@app.command("import")
def import_(
    name: Name,
    repo: Annotated[str, typer.Option("--repo", help="Path or URL of the repository to read.")],
    range_: Annotated[Optional[str], typer.Option("--range", help="BASE..HEAD")] = None,  # noqa: UP045
    branch: Annotated[Optional[str], typer.Option(callback=_branch, help="Import merge-base(--base, BRANCH)..BRANCH.")] = None,  # noqa: UP045,E501
    pr: Annotated[Optional[int], typer.Option(help="Import refs/pull/N/head against --base.")] = None,  # noqa: UP045,E501
    base: Annotated[Optional[str], typer.Option(help="The base ref (default: the manifest's).")] = None,  # noqa: UP045,E501
    title: Annotated[Optional[str], typer.Option(help="Title for a new series.")] = None,  # noqa: UP045
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Write a range, branch or PR head as patch files.

    The commits go into series/NAME as git format-patch files; the same commits again change
    no byte. A series that does not exist yet gets a bare manifest (`carry init` makes a full
    one).

    Example: carry import my-fix --repo ../vllm --range upstream/main..my-branch
    """
    from carry import importer, views

    result = importer.run(_root(series_dir), name, repo, range_, branch, pr, base, title)
    views.show_import(result, json)


@app.command()
def check(
    name: Name,
    against_repo: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--against-repo", help="Also compare every patch with its original commit here.")] = None,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Audit authors, dates and trailers against the policy.

    Example: carry check my-fix --against-repo ../vllm
    """
    from carry import check as checkmod
    from carry import series, views
    from carry.git import Repo

    report = checkmod.run(series.find(_root(series_dir), name),
                          Repo.open(against_repo) if against_repo else None)
    views.show_check(report, json)
    raise typer.Exit(report.exit_code)


@app.command()
def apply(
    name: Name,
    repo: RepoPath,
    onto: Annotated[str, typer.Option(help="Commit, branch or tag to build on.")],
    branch: Annotated[str, typer.Option(callback=_branch,
                                        help="Branch to create with the result.")],
    force: Annotated[bool, typer.Option(help="Move BRANCH if it already exists.")] = False,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Build the series as commits on a new branch.

    No worktree is touched; an existing branch moves only with --force.

    Example: carry apply my-fix --repo ../vllm --onto v0.34.0 --branch try/my-fix
    """
    from carry import apply as applymod
    from carry import render, series, views
    from carry.git import Repo

    result = applymod.run(series.find(_root(series_dir), name), Repo.open(repo), onto, branch,
                          force, progress=None if json else render.progress("applying"))
    views.show_apply(result, json)


@app.command()
def validate(
    name: Name,
    repo: RepoPath,
    onto: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="Build the series on this commit, branch or tag, then validate the result.")] = None,
    commit: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="Validate this commit, whose last N commits are the series; BASE..C when C "
             "holds more than the series.")] = None,
    engine: Engine = "podman",
    python: Python = None,
    baseline: Annotated[bool, typer.Option(
        "--baseline",
        help="Also run the series' tests on the unfixed base: they must fail there.")] = False,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", help="Run even if this exact input was validated before.")] = False,
    allow_no_tests: Annotated[bool, typer.Option(
        "--allow-no-tests", help="Pass a plan that names no pytest suites.")] = False,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Run the test plan: pytest suites, hooks, diff check.

    Exit 0 when everything passed, 1 when something failed, 2 on bad input.

    Example: carry validate my-fix --repo ../vllm --onto upstream/main --engine local --baseline
    """
    from carry import render, series, views
    from carry.git import Repo
    from carry.validate import run as validate_run

    report = validate_run.run(series.find(_root(series_dir), name), Repo.open(repo), onto, commit,
                              engine, python, baseline, not no_cache,
                              progress=None if json else render.progress("validating"),
                              allow_no_tests=allow_no_tests)
    views.show_validate(report, json)
    raise typer.Exit(report.exit_code)


@series_app.command("list")
def series_list(series_dir: SeriesDir = None, json: Json = False) -> None:
    """A table of every series and where it was looked for.

    A manifest that does not load is a row with its error, and the exit code is 1.

    Example: carry series list --series-dir series
    """
    from carry import series, views

    listing = series.scan(_root(series_dir))
    views.show_series_list(listing, json)
    raise typer.Exit(listing.exit_code)


@series_app.command("show")
def series_show(name: Name, series_dir: SeriesDir = None, json: Json = False) -> None:
    """Everything the manifest says about one series.

    Example: carry series show mamba-sparse-retention
    """
    from carry import series, views

    views.show_series(series.find(_root(series_dir), name), json)


# -- rebase and range-diff (F2) ----------------------------------------------------------------
Refs = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "--onto", help="A branch, tag or commit to rebase onto; repeat for several.")]
Targets = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "--target", help="A target name from the manifest; repeat. Default: every target.")]
Flag = typer.Option


@app.command()
def rebase(
    name: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        help="The series; optional with --continue, --skip or --abort.")] = None,
    repo: RepoPath = ".",
    onto: Refs = None,
    target: Targets = None,
    branch: Annotated[Optional[str], Flag(  # noqa: UP045
        callback=_branch, help="Branch to write (default: carry/NAME/TARGET).")] = None,
    refresh: Annotated[bool, Flag(help="Write the result back as the next version.")] = False,
    fetch: Annotated[bool, Flag(help="Fetch the manifest's remotes first.")] = False,
    dry_run: Annotated[bool, Flag("--dry-run", help="Report only; write no ref.")] = False,
    force: Annotated[bool, Flag(help="Move a --branch that carry did not write last.")] = False,
    continue_: Annotated[bool, Flag("--continue", help="Go on after a resolved conflict.")] = False,
    skip: Annotated[bool, Flag("--skip", help="Leave the conflicting patch out.")] = False,
    abort: Annotated[bool, Flag("--abort", help="Undo the stopped rebase.")] = False,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Replay the series onto its targets, dropping merged patches.

    No worktree is used unless a patch conflicts; then the rebase stops in a worktree it
    names, to be resumed with --continue, --skip or --abort.

    Example: carry rebase my-fix --repo ../vllm --target upstream-main --dry-run
    """
    from carry import locks, resume, series, views
    from carry import rebase as rebasemod
    from carry.git import Repo

    opts = rebasemod.Options(onto or [], target or [], branch, refresh, fetch, dry_run, force)
    git_repo, root, name = resume.locate(Repo.open(repo), series_dir, name, opts,
                                         continue_, skip, abort)
    with locks.for_rebase(root, name, git_repo, dry_run):
        outcome = rebasemod.command(series.find(root, name), git_repo, opts,
                                    continue_=continue_, skip=skip, abort_=abort)
    views.show_rebase(outcome, json, git_repo, str(root))
    raise typer.Exit(rebasemod.exit_code(outcome))


@app.command("range-diff")
def range_diff(
    name: Name,
    old: Annotated[str, typer.Argument(help="The old version: vN, or 'current'.")],
    repo: RepoPath,
    new: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        help="The new version (default: current).")] = None,
    against: Annotated[Optional[str], Flag(  # noqa: UP045
        help="Compare OLD with a branch instead: BASE..HEAD, or a rebased ref.")] = None,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Compare two versions of the series with git range-diff.

    Example: carry range-diff my-fix v1 v2 --repo ../vllm
    """
    from carry import rangediff, series, views
    from carry.git import Repo

    result = rangediff.run(series.find(_root(series_dir), name), Repo.open(repo), old, new,
                           against, color=not json and sys.stdout.isatty())
    views.show_range_diff(result, json)
# -- end rebase and range-diff (F2)


from carry import cli_ci, cli_forge, cli_start  # noqa: E402,F401 - register the other commands


def _fail(exc: CarryError) -> None:
    print(f"carry: error: {exc.line()}", file=sys.stderr)
    if "--json" in sys.argv[1:]:  # a script reading stdout gets the error there too
        import json

        print(json.dumps({"error": " ".join(str(exc).split()), "hint": exc.hint,
                          "exit": exc.exit_code}))
    sys.exit(exc.exit_code)


def main() -> None:
    # typer 0.28 (pinned in pyproject) vendors click, so `click` itself need not be installed.
    from typer._click.exceptions import ClickException

    from carry import redact

    redact.register_env()
    sys.stdout = redact.Scrubbed(sys.stdout)
    sys.stderr = redact.Scrubbed(sys.stderr)
    try:
        code = app(standalone_mode=False)
    except CarryError as exc:
        _fail(exc)
    except ClickException as exc:
        # One line, as every other error: click's usage block is what --help is for.
        print(f"carry: error: {' '.join(exc.format_message().split())} "
              "(hint: carry --help, or carry COMMAND --help)", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(130)
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
