"""`carry import`, `carry check` and `carry apply`: parse, call, print; the work is in
`carry.intake`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from carry.cli.app import (
    REPO_RULE,
    Json,
    Name,
    RepoPath,
    SeriesDir,
    _branch,
    _repo,
    _root,
    app,
)


@app.command("import")
def import_(
    name: Name,
    repo: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--repo", envvar="CARRY_REPO", show_envvar=True, metavar="PATH_OR_URL",
        help=f"Path or URL of the repository to read ({REPO_RULE}).")] = None,
    range_: Annotated[Optional[str], typer.Option("--range", help="BASE..HEAD")] = None,  # noqa: UP045
    branch: Annotated[Optional[str], typer.Option(callback=_branch, help="Import merge-base(--base, BRANCH)..BRANCH.")] = None,  # noqa: UP045,E501
    pr: Annotated[Optional[int], typer.Option(help="Import refs/pull/N/head against --base.")] = None,  # noqa: UP045,E501
    base: Annotated[Optional[str], typer.Option(help="The base ref (default: the manifest's).")] = None,  # noqa: UP045,E501
    title: Annotated[Optional[str], typer.Option(help="Title for a new series.")] = None,  # noqa: UP045
    force: Annotated[bool, typer.Option(help="Import even patches that go back to an older version.")] = False,  # noqa: E501
    series_dir: SeriesDir = None,
    json: Json = False,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="List every patch file written.")] = False,
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

    root = _root(series_dir)
    source = importer.Source(_repo(repo, root, name), range_, branch, pr, base)
    result = importer.run(root, name, source, title, force=force)
    views.show_import(result, json, verbose)


@app.command()
def check(
    name: Name,
    against_repo: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--against-repo", help="Also compare every patch with its original commit here.")] = None,
    dco: Annotated[bool, typer.Option(
        "--dco", help="Also check DCO as vLLM does: every patch has a Signed-off-by with its "
                      "author's email (a policy exception does not excuse it).")] = False,
    series_dir: SeriesDir = None,
    json: Json = False,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="List every patch with its author, date and trailers.")] = False,
) -> None:
    """Audit authors, dates and trailers against the policy.

    Exit 1 on a violation (with --dco, also a patch without its author's sign-off).

    Example: carry check my-fix --against-repo ../vllm --dco
    """
    from carry.cli import views
    from carry.git import Repo
    from carry.intake import check as checkmod
    from carry.series import store as series

    report = checkmod.run(series.find(_root(series_dir), name),
                          Repo.open(against_repo) if against_repo else None, dco=dco)
    views.show_check(report, json, verbose)
    raise typer.Exit(report.exit_code)


@app.command()
def apply(
    name: Name,
    onto: Annotated[str, typer.Option(help="Commit, branch or tag to build on.")],
    branch: Annotated[str, typer.Option(callback=_branch,
                                        help="Branch to create with the result.")],
    repo: RepoPath = None,
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

    root = _root(series_dir)
    found = series.find(root, name)
    result = applymod.run(found, Repo.open(_repo(repo, root, name)), onto, branch,
                          force, progress=None if json else render.progress("applying"))
    views.show_apply(result, json)
