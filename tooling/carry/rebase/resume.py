"""Resuming like git: `carry rebase --continue` needs no series name when one rebase is stopped,
or when it runs in a stopped rebase's conflict worktree; with several and no worktree to say
which, it asks instead of acting on all of them.

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
    from carry.rebase.flags import Action, Options


@dataclass(frozen=True)
class StoppedRebase:
    """One saved state: the series, its target, and the series folder it was started from."""

    series: str
    target: str
    series_root: str = ""
    phase: str = ""
    worktree: str = ""


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
    """Every stopped rebase in this repository, of every series (each state checked, and
    only looked at: `state.read`'s shared copy)."""
    from carry.rebase import state as st

    top = repo.carry_dir() / "rebase"
    names = sorted(d.name for d in top.iterdir() if d.is_dir()) if top.is_dir() else []
    return [StoppedRebase(name, s.target.name, str(Path(s.series_root).parent), s.phase,
                          s.worktree)
            for name in names for s in st.in_progress(repo, name, shared=True)]


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


@dataclass(frozen=True)
class Located:
    """Where `carry rebase` works: the repository, the series folder and name, and which of
    the series' stopped rebases it resumes (target names or refs; none: its only one)."""

    repo: Repo
    root: Path
    name: str
    which: list[str]


def _inside(here: Path, main: Repo) -> StoppedRebase | None:
    """The stopped rebase whose conflict worktree `here` is, when carry runs in one."""
    if here == main.path.resolve():
        return None
    return next((s for s in stopped(main)
                 if s.worktree and Path(s.worktree).resolve() == here), None)


def locate(repo: Repo, series_dir: Path | None, name: str | None, opts: Options,
           action: Action) -> Located:
    """The series and stopped rebase `carry rebase` acts on. Resuming finds them in the
    saved states when not given: run inside a conflict worktree, the worktree says which
    (as git's own worktree does), else the only one stopped; a new rebase needs NAME."""
    from carry.series.store import series_dir as locate_root

    root = locate_root(series_dir)
    which = [*opts.onto, *opts.targets]
    if action.resumes:
        here = repo.path.resolve()
        repo = main_checkout(repo)
        inside = _inside(here, repo)
        if inside is not None and not which and name in (None, inside.series):
            picked, which = inside, [inside.target]
        else:
            picked = choose(repo, name, which, action.value)
        kept = Path(picked.series_root) if picked.series_root else None
        name, root = picked.series, locate_root(series_dir or kept)
    if not name:
        raise CarryError("give the series NAME (only --continue, --resolve, --skip, --abort, "
                         "--quit and --show-current-patch can find it themselves)")
    return Located(repo, root, name, which)
