"""The `carry` command line: parse, call, print. Each command is one small function; the work
lives in the module named after it, and the printing in `views`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from carry.errors import CarryError

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
Name = Annotated[str, typer.Argument(help="The series name, a directory under series/.")]
RepoPath = Annotated[str, typer.Option("--repo", help="Path of the git repository to work in.")]


def _root(series_dir: Path | None) -> Path:
    from carry.series import series_dir as locate

    return locate(series_dir)


@app.command("import")
def import_(
    name: Name,
    repo: Annotated[str, typer.Option("--repo", help="Path or URL of the repository to read.")],
    range_: Annotated[Optional[str], typer.Option("--range", help="BASE..HEAD")] = None,  # noqa: UP045
    branch: Annotated[Optional[str], typer.Option(help="Import merge-base(--base, BRANCH)..BRANCH.")] = None,  # noqa: UP045,E501
    pr: Annotated[Optional[int], typer.Option(help="Import refs/pull/N/head against --base.")] = None,  # noqa: UP045,E501
    base: Annotated[Optional[str], typer.Option(help="The base ref (default: the manifest's).")] = None,  # noqa: UP045,E501
    title: Annotated[Optional[str], typer.Option(help="Title for a new series.")] = None,  # noqa: UP045
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Write a range, a branch or a PR head into series/NAME as format-patch files."""
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
    """Audit authors, dates and trailers against the series' policy."""
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
    branch: Annotated[str, typer.Option(help="Branch to create with the result.")],
    force: Annotated[bool, typer.Option(help="Move BRANCH if it already exists.")] = False,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Materialise the series as commits on a branch, without touching any worktree."""
    from carry import apply as applymod
    from carry import render, series, views
    from carry.git import Repo

    result = applymod.run(series.find(_root(series_dir), name), Repo.open(repo), onto, branch,
                          force, progress=None if json else render.progress("applying"))
    views.show_apply(result, json)


@series_app.command("list")
def series_list(series_dir: SeriesDir = None, json: Json = False) -> None:
    """A table of every series: name, version, patches, base and targets."""
    from carry import series, views

    views.show_series_list(series.list_series(_root(series_dir)), json)


@series_app.command("show")
def series_show(name: Name, series_dir: SeriesDir = None, json: Json = False) -> None:
    """Everything the manifest says about one series, with its patches."""
    from carry import series, views

    views.show_series(series.find(_root(series_dir), name), json)


def main() -> None:
    import click

    try:
        code = app(standalone_mode=False)
    except CarryError as exc:
        print(f"carry: error: {exc.line()}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except click.exceptions.Abort:
        sys.exit(130)
    except KeyboardInterrupt:
        print("carry: interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
