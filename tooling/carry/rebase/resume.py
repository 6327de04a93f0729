"""Resuming like git: `carry rebase --continue` needs no series name when one rebase is stopped,
and with several it asks which instead of acting on all of them.

It reads only the saved states, and prints the commands to run with the real paths.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from carry.base.errors import CarryError
from carry.git import Repo

if TYPE_CHECKING:
    from carry.rebase.command import Options


@dataclass(frozen=True)
class StoppedRebase:
    """One saved state: the series, its target, and the series folder it was started from."""

    series: str
    target: str
    series_root: str = ""
    phase: str = ""


def main_checkout(repo: Repo) -> Repo:
    """Run from a conflict worktree, resume in the repository it belongs to: `--continue`
    removes that worktree, so it cannot be the repository carry works in."""
    common = repo.common_dir
    if common == repo.path / ".git":  # the main checkout itself: no git process to ask
        return repo
    if common == repo.git_dir or common.name != ".git":
        return repo
    repo.close()
    return Repo.open(common.parent)


def stopped(repo: Repo) -> list[StoppedRebase]:
    """Every stopped rebase in this repository, of every series."""
    from carry.rebase import command as rebase

    top = repo.carry_dir() / "rebase"
    names = sorted(d.name for d in top.iterdir() if d.is_dir()) if top.is_dir() else []
    return [StoppedRebase(name, s["target"]["name"], str(Path(s.get("series_root", "")).parent),
                          s["phase"])
            for name in names for s in rebase.in_progress(repo, name)]


def command(repo: Repo, series_root: str, action: str, name: str = "", target: str = "") -> str:
    """The command line to run, with this repository's real path, and --series-dir only when
    the default would not find the series."""
    from carry.series.store import series_dir

    words = ["carry", "rebase", *([name] if name else []), "--repo", str(repo.path), action]
    if target:
        words += ["--target", target]
    if series_root and Path(series_root) != series_dir(None):
        words += ["--series-dir", series_root]
    return shlex.join(words)


def choose(repo: Repo, name: str | None, targets: list[str], action: str) -> StoppedRebase:
    """The rebase to resume: NAME's, or the only one stopped. Several stopped rebases and no
    --target: refuse, listing the command for each; but `--abort` of one interrupted finish
    over several targets undoes them all."""
    every = stopped(repo)
    if name and targets:
        root = next((s.series_root for s in every if s.series == name), "")
        return StoppedRebase(name, "", root)
    mine = [s for s in every if s.series == name] if name else every
    if targets:
        mine = [s for s in mine if s.target in targets] or mine
        if len({s.series for s in mine}) == 1:
            return StoppedRebase(mine[0].series, "", mine[0].series_root)
    if not mine:
        where = f"of {name} " if name else ""
        raise CarryError(f"no carry rebase {where}is in progress in {repo.path}")
    if len(mine) == 1:
        return mine[0]
    if action == "--abort" and len({s.series for s in mine}) == 1 and all(
            s.phase == "finishing" for s in mine):
        # one run killed while it moved its targets' branches in one transaction: undone as
        # a whole, or one branch would stay moved and the other not
        return StoppedRebase(mine[0].series, "", mine[0].series_root)
    options = "; ".join(command(repo, s.series_root, action, s.series, s.target) for s in mine)
    raise CarryError(f"{len(mine)} carry rebases are stopped in {repo.path}; say which: "
                     f"{options}")


def locate(repo: Repo, series_dir: Path | None, name: str | None, opts: Options,
           continue_: bool, skip: bool, abort: bool) -> tuple[Repo, Path, str]:
    """(repository, series folder, series name) for `carry rebase`: resuming finds them in the
    saved state when not given; a new rebase needs NAME."""
    from carry.series.store import series_dir as locate_root

    action = next((a for a, on in (("--continue", continue_), ("--skip", skip),
                                   ("--abort", abort)) if on), "")
    root = locate_root(series_dir)
    if action:
        repo = main_checkout(repo)
        picked = choose(repo, name, [*opts.onto, *opts.targets], action)
        kept = Path(picked.series_root) if picked.series_root else None
        name, root = picked.series, locate_root(series_dir or kept)
    if not name:
        raise CarryError("give the series NAME (only --continue, --skip and --abort can "
                         "find it themselves)")
    return repo, root, name
