"""`carry rebase` and `carry range-diff`: parse, call, print; the work is in
`carry.rebase`."""

from __future__ import annotations

import sys
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

    No worktree is used: a conflict stops the rebase with every later conflict foreseen, to
    be resumed with --skip (which needs no worktree), --continue or --abort. --continue at a
    stop with no worktree yet makes it (../REPO.carry/NAME/TARGET) and stays stopped for the
    resolution; once made, it follows the rebase from stop to stop.

    Example: carry rebase my-fix --repo ../vllm --target upstream-main --dry-run
    """
    from carry.cli import views
    from carry.git import Repo
    from carry.rebase import command as rebasemod
    from carry.rebase import resume
    from carry.series import locks
    from carry.series import store as series

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
    from carry.cli import views
    from carry.git import Repo
    from carry.rebase import rangediff
    from carry.series import store as series

    result = rangediff.run(series.find(_root(series_dir), name), Repo.open(repo), old, new,
                           against, color=not json and sys.stdout.isatty())
    views.show_range_diff(result, json)
