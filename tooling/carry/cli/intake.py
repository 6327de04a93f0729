"""`carry import`, `carry check` and `carry apply`: parse, call, print; the work is in
`carry.intake`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from carry.cli.app import (
    Json,
    Name,
    RepoPath,
    SeriesDir,
    _branch,
    _root,
    app,
)


@app.command("import")
def import_(
    name: Name,
    repo: Annotated[str, typer.Option("--repo", help="Path or URL of the repository to read.")],
    range_: Annotated[Optional[str], typer.Option("--range", help="BASE..HEAD")] = None,  # noqa: UP045
    branch: Annotated[Optional[str], typer.Option(callback=_branch, help="Import merge-base(--base, BRANCH)..BRANCH.")] = None,  # noqa: UP045,E501
    pr: Annotated[Optional[int], typer.Option(help="Import refs/pull/N/head against --base.")] = None,  # noqa: UP045,E501
    base: Annotated[Optional[str], typer.Option(help="The base ref (default: the manifest's).")] = None,  # noqa: UP045,E501
    title: Annotated[Optional[str], typer.Option(help="Title for a new series.")] = None,  # noqa: UP045
    force: Annotated[bool, typer.Option(help="Import even patches that go back to an older version.")] = False,  # noqa: E501
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Write a range, branch or PR head as patch files.

    The commits go into series/NAME as git format-patch files; the same commits again change
    no byte. A series that does not exist yet gets a bare manifest (`carry init` makes a full
    one). A branch that merged upstream becomes a linear series on the last upstream it
    merged, keeping what the merges resolved. Patches that are an older version's (a range
    imported before a `rebase --refresh`), or that change a patch a recorded resolution names,
    are refused unless --force.

    Example: carry import my-fix --repo ../vllm --range upstream/main..my-branch
    """
    from carry.cli import views
    from carry.intake import importer

    result = importer.run(_root(series_dir), name, repo, range_, branch, pr, base, title,
                          force=force)
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
    from carry.cli import views
    from carry.git import Repo
    from carry.intake import check as checkmod
    from carry.series import store as series

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
    from carry.cli import render, views
    from carry.git import Repo
    from carry.intake import apply as applymod
    from carry.series import store as series

    result = applymod.run(series.find(_root(series_dir), name), Repo.open(repo), onto, branch,
                          force, progress=None if json else render.progress("applying"))
    views.show_apply(result, json)
