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
    _repo,
    _root,
    app,
)

Refs = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "--onto", help="A branch, tag or commit to rebase onto; repeat for several.")]
Targets = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "--target", help="A target name from the manifest; repeat. Default: every target.")]
Flag = typer.Option


Refresh = Annotated[bool, Flag(
    help="Write the result back as the next version of series/NAME, tagged but not "
         "committed: commit it after (git add series/NAME && git commit; the command "
         "is printed).")]
NoAutoResolve = Annotated[bool, Flag(
    "--no-auto-resolve", help="Stop also where the three texts decide the answer (same "
                              "change, a re-format, entries added by both).")]
Furthest = Annotated[bool, Flag(
    "--furthest", help="Go as far as the series replays with no stop: onto the newest "
                       "commit of each target's first-parent line it applies to, naming "
                       "the commit and patch that block the next step.")]
Quit = Annotated[bool, Flag(
    "--quit", help="Forget the stopped rebase and keep what is done: no branch is put "
                   "back; the state and the worktree go.")]


@app.command()
def rebase(
    name: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        help="The series; optional when resuming (--continue, --resolve, --skip, --abort, "
             "--quit, --show-current-patch).")] = None,
    repo: RepoPath = None,
    onto: Refs = None,
    target: Targets = None,
    branch: Annotated[Optional[str], Flag(  # noqa: UP045
        callback=_branch, help="Branch to write (default: carry/NAME/TARGET).")] = None,
    refresh: Refresh = False,
    fetch: Annotated[bool, Flag(help="Fetch the manifest's remotes first.")] = False,
    dry_run: Annotated[bool, Flag("--dry-run", help="Report only; write no ref.")] = False,
    no_auto_resolve: NoAutoResolve = False,
    furthest: Furthest = False,
    force: Annotated[bool, Flag(
        help="Move a --branch that carry did not write last; with --continue, keep a "
             "resolution that undoes lines the target changed.")] = False,
    continue_: Annotated[bool, Flag(
        "--continue", help="Go on after a resolved conflict (with --refresh, then commit "
                           "series/NAME as printed).")] = False,
    resolve: Annotated[bool, Flag(
        "--resolve", help="Check the stopped conflict out in its worktree "
                          "(../REPO.carry/NAME/TARGET) to resolve it; then --continue.")] = False,
    skip: Annotated[bool, Flag("--skip", help="Leave the conflicting patch out.")] = False,
    abort: Annotated[bool, Flag("--abort", help="Undo the stopped rebase.")] = False,
    quit_: Quit = False,
    show: Annotated[bool, Flag(
        "--show-current-patch", help="Show the stopped patch (message and diff) as git "
                                     "show does.")] = False,
    series_dir: SeriesDir = None,
    json: Json = False,
    verbose: Annotated[bool, Flag(
        "--verbose", "-v", help="Show the whole forecast: every target's table, each "
                                "patch's outcome and why.")] = False,
) -> None:
    """Replay the series onto its targets, dropping merged patches.

    No worktree is used: a conflict stops the rebase with every later conflict foreseen, to
    be resumed with --skip (which needs no worktree), --resolve or --abort. --resolve checks
    the conflict out in its worktree (../REPO.carry/NAME/TARGET) to resolve in, and
    --continue then takes the resolution; once made, the worktree follows the rebase from
    stop to stop. Run inside that worktree, --continue, --skip, --abort, --quit and
    --show-current-patch take the rebase
    it belongs to; when the worktree goes, its folder is kept empty for your shell and carry
    prints where to cd. With --refresh the
    result is written to series/NAME as its next version, which you then commit in the
    series checkout: git add series/NAME && git commit -m "NAME vN" (printed with real paths).

    Example: carry rebase my-fix --repo ../vllm --target upstream-main --dry-run
    """
    from carry.cli import rebasing

    raise typer.Exit(rebasing.run(rebasing.RebaseArgs(
        name=name, repo=repo, onto=onto, target=target, branch=branch, refresh=refresh,
        fetch=fetch, dry_run=dry_run, no_auto_resolve=no_auto_resolve, furthest=furthest,
        force=force, continue_=continue_, resolve=resolve, skip=skip, abort=abort,
        quit_=quit_, show=show, series_dir=series_dir, json=json, verbose=verbose)))


@app.command()
def edit(
    name: Name,
    number: Annotated[int, typer.Argument(metavar="N", min=1,
                                          help="The patch to change, by its number.")],
    repo: RepoPath = None,
    onto: Annotated[Optional[str], Flag(  # noqa: UP045
        help="Replay onto this ref instead of the series base (as rebase --onto).")] = None,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Change one patch in a worktree, as git rebase -i's edit does.

    The series is replayed onto its base (or --onto) up to patch N, and a worktree
    (../REPO.carry/NAME/TARGET) is left at N's commit. Amend it there: edit its files, git
    commit --amend for its message or a trailer. Then carry rebase --continue writes it as
    the series' next version, with its author, author date and number kept, and the later
    patches replayed on it (a conflict stops as a rebase does); carry rebase --abort puts
    everything back.

    Example: carry edit my-fix 2 --repo ../vllm
    """
    from carry.cli import stops
    from carry.git import Repo
    from carry.rebase import edit as editmod
    from carry.rebase import resume
    from carry.series import locks
    from carry.series import store as series

    root = _root(series_dir)
    git_repo = Repo.open(_repo(repo, root, name))
    with locks.for_rebase(root, name, git_repo, False):
        stop = editmod.start(series.find(root, name), git_repo, number, onto)
    several = len(resume.stopped(git_repo)) > 1
    nxt = resume.command(git_repo, str(root), "--continue", name if several else "",
                         stop.target if several else "")
    stops.show_edit(stop, json, nxt)


@app.command("range-diff")
def range_diff(
    name: Name,
    old: Annotated[str, typer.Argument(help="The old version: vN, or 'current'.")],
    new: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        help="The new version (default: current).")] = None,
    repo: RepoPath = None,
    against: Annotated[Optional[str], Flag(  # noqa: UP045
        help="Compare OLD with a branch instead: BASE..HEAD, or a rebased ref.")] = None,
    creation_factor: Annotated[Optional[int], Flag(  # noqa: UP045
        "--creation-factor", min=0, metavar="PERCENT",
        help="git's --creation-factor (default 60): raise it to pair a patch with a much "
             "changed version of itself instead of showing one removed and one added.")] = None,
    patch: Annotated[bool, Flag(
        "--patch/--no-patch", " /-s",
        help="Show the inner diff of each changed patch (the default), in the text and in "
             "--json's pairs; --no-patch (-s) lists the pairs only.")] = True,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Compare two versions of the series with git range-diff.

    Each changed patch is shown with the diff between its two versions, as git shows it.

    Example: carry range-diff my-fix v1 v2 --repo ../vllm --creation-factor 90
    """
    from carry.cli import reports
    from carry.git import Repo
    from carry.rebase import rangediff
    from carry.series import store as series

    root = _root(series_dir)
    found = series.find(root, name)
    opts = rangediff.Options(not json and sys.stdout.isatty(), creation_factor, patch)
    result = rangediff.run(found, Repo.open(_repo(repo, root, name)), old, new, against, opts)
    reports.show_range_diff(result, json)
