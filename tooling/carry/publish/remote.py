"""Which git remote `carry pr` pushes to and `carry supersede` reads pull requests from.

`--remote` when given; else the remote the manifest names (`carry init` found it by its URL),
so that a clone whose fork is not `origin` works without a flag; `origin` only when no
manifest names one. The choice keeps where it came from: a remote the clone lacks is named
with the reason carry used it, so that a user who never typed `origin` sees why it was
looked for, and `git remote add` with the manifest's URL is the hint.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from carry.base.errors import CarryError, MissingRef
from carry.base.suggest import did_you_mean, join
from carry.git import Repo
from carry.series.store import Series

DEFAULT = "origin"
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://|^[^/:]+@[^/:]+:|^[^/:]{2,}:")  # scheme or scp-like


@dataclass(frozen=True)
class Remote:
    name: str
    why: str  # where the name came from, as the error says it
    url: str = ""  # the manifest's URL for it, for `git remote add`


def for_push(given: str | None, series_list: Sequence[Series]) -> Remote:
    """The fork's remote: the branch a PR proposes lives on the fork."""
    if given:
        return Remote(given, "--remote")
    named = {s.manifest.fork.remote: s for s in series_list if s.manifest.fork.remote}
    if len(named) > 1:
        raise CarryError("the series name different fork remotes ("
                         + ", ".join(f"{s.name}: {r}" for r, s in sorted(named.items()))
                         + "): carry pushes one branch to one remote",
                         hint="pass --remote")
    if named:
        ((name, s),) = named.items()
        return Remote(name, f"the [fork].remote of series {s.name}", s.manifest.fork.url)
    return Remote(DEFAULT, "the default: no manifest names a [fork].remote")


def for_pulls(given: str | None, series: Series, forge_repo: str) -> Remote:
    """The remote that has `refs/pull/*` of `forge_repo`: the manifest's remote for that
    repository (the fork, or upstream), else the fork's."""
    if given:
        return Remote(given, "--remote")
    for table, r in (("fork", series.manifest.fork), ("upstream", series.manifest.upstream)):
        if r.remote and r.repo.casefold() == forge_repo.casefold():
            return Remote(r.remote, f"the [{table}].remote of series {series.name}, whose "
                          f"repo is {forge_repo}", r.url)
    return for_push(None, [series])


def check(repo: Repo, remote: Remote) -> None:
    """A configured remote, or a URL or path git can reach; else one line that says which
    remote, why that one, and how to add it."""
    if remote.name in repo.remotes() or _URL.match(remote.name) or (
            "/" in remote.name and Path(remote.name).expanduser().exists()):
        return
    known = repo.remotes()
    add = (f"git -C {repo.path} remote add {remote.name} {remote.url}" if remote.url
           else f"git -C {repo.path} remote add {remote.name} URL")
    hint = join(did_you_mean(remote.name, known), f"{add}, or pass --remote")
    raise MissingRef(f"remote '{remote.name}' ({remote.why}) is not a remote of {repo.path} "
                     f"(its remotes: {', '.join(known) or 'none'})", str(repo.path), hint)


def base_commit(repo: Repo, remote: Remote, base: str) -> str:
    """The commit `base` names: the remote's branch, else a local ref of that name."""
    found = repo.try_rev_parse(f"{remote.name}/{base}") or repo.try_rev_parse(base)
    if found is None:
        check(repo, remote)  # a missing remote is the cause to name, not the fetch it needs
        raise MissingRef(f"base '{base}' is neither {remote.name}/{base} (remote "
                         f"'{remote.name}': {remote.why}) nor a ref of {repo.path}",
                         str(repo.path), hint=f"git -C {repo.path} fetch {remote.name} {base}")
    return found
