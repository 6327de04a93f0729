"""Which repository a command works in: one rule for `--repo` on every command.

`--repo PATH`, else `$CARRY_REPO`, else the git checkout of the current directory, as git
itself would take it, when that checkout is recognisably a clone the series uses: it defines
a remote the manifest names (for `init`, which has no manifest yet: a remote whose URL names
`--upstream` or `--fork`), or a carry rebase is stopped in it and the command resumes it.
Otherwise carry asks for `--repo` rather than read the wrong repository, such as the series
checkout, whose refs are never vLLM's; a command that can do without one (`status`, `init`)
goes on without.

The same test explains a missing ref: when the repository read is the series checkout, or
defines none of the manifest's remotes, the error says that `--repo PATH` names the clone,
rather than suggest a fetch or a remote that would only put vLLM's refs in the wrong place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from carry.base.errors import CarryError, MissingRef
from carry.base.suggest import join
from carry.git import Repo

HINT = "--repo PATH names your vLLM clone, or set CARRY_REPO"


@dataclass
class _Read:
    """What this run read its series from, so that a missing ref can be explained at the
    end (one command per process)."""

    root: Path | None = None
    names: tuple[str, ...] = ()


_SEEN = _Read()


def repo_path(given: str | None, root: Path, names: Sequence[str] = (),
              needed: bool = True, slugs: Sequence[str] = (),
              resuming: bool = False) -> str | None:
    """The repository to work in, by the rule above; None when it is not `needed` and the
    rule gives none. `given` is --repo, which typer fills from $CARRY_REPO too; `slugs`
    are init's OWNER/REPO, for a series that has no manifest yet."""
    _SEEN.root, _SEEN.names = root, tuple(names)
    if given:
        return given
    try:
        top = Repo.open(Path.cwd())
    except CarryError:
        if not needed:
            return None
        raise CarryError("no --repo given, and the current directory is not in a git "
                         "checkout", hint=HINT) from None
    try:
        why = _points_at(top, slugs) if slugs else unfit(top, root, names)[0]
        if why and resuming and _stopped_in(top):
            why = None
    finally:
        top.close()
    if why is None:
        return str(top.path)
    if not needed:
        return None
    _series_first(root, names)
    raise CarryError(f"no --repo given, and {why}", hint=HINT)


def _series_first(root: Path, names: Sequence[str]) -> None:
    """Raise the series' own error when the series the command names (or any, for one that
    names none) is not in `root`: which series folder to use is then the problem, not which
    clone, and no manifest was read to know the clone by."""
    from carry.series import store

    for name in names:
        store.find(root, name)
    if not names and not store.scan(root).series:
        raise CarryError(f"no series in {root}", hint=store.where_hint(root))


def _stopped_in(top: Repo) -> bool:
    """A carry rebase is stopped in this checkout, or in the one whose conflict worktree it
    is: `--continue` run there resumes it, as git's does."""
    from carry.rebase import resume

    main = resume.main_checkout(top.fork())
    try:
        return bool(resume.stopped(main))
    finally:
        main.close()


def _points_at(repo: Repo, slugs: Sequence[str]) -> str | None:
    from carry.intake.init import remote_for

    if any(remote_for(repo, slug)[0] for slug in slugs):
        return None
    return f"no remote of {repo.path} points at {' or '.join(slugs)}"


def _remotes(root: Path, names: Sequence[str]) -> set[str]:
    """The remote names the manifests of `names` (default: every series) give."""
    from carry.series import store

    found = []
    for name in names:
        try:
            found.append(store.find(root, name))
        except CarryError:
            continue
    if not names:
        found = store.scan(root).series
    return {r.remote for s in found for r in (s.manifest.upstream, s.manifest.fork) if r.remote}


def unfit(repo: Repo, root: Path, names: Sequence[str]) -> tuple[str | None, str]:
    """Why `repo` is not recognisably a clone the series uses (None when it is), and how
    sure that is: "certain" for the series checkout without the manifest's remotes, "likely"
    for a repository without them (it may hold the refs under other names), "unknown" when
    the manifest names no remote to tell by."""
    wanted = _remotes(root, names)
    if wanted & set(repo.remotes()):
        return None, ""
    if root.is_dir() and root.resolve().is_relative_to(repo.path):
        return f"{repo.path} is the series checkout, not a clone of upstream", "certain"
    if wanted:
        return (f"{repo.path} defines none of the remotes {', '.join(sorted(wanted))} that the "
                "manifest names"), "likely"
    return ("no manifest names a remote ([upstream].remote, [fork].remote) to know the clone "
            "by"), "unknown"


def explain(exc: MissingRef) -> None:
    """Say `--repo` in the hint of a ref missing from a repository that was plainly not the
    clone: the series checkout, or one with none of the manifest's remotes."""
    if _SEEN.root is None:
        return
    try:
        repo = Repo.open(exc.repo)
    except CarryError:
        return
    try:
        why, sure = unfit(repo, _SEEN.root, _SEEN.names)
    finally:
        repo.close()
    if sure == "certain":
        exc.hint = f"{why}: {HINT}"
    elif sure == "likely" and "--repo" not in (exc.hint or ""):
        exc.hint = join(exc.hint, f"{why}; if it is not your vLLM clone, {HINT}")
