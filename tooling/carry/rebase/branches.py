"""The branches a series' rebases leave: `carry/NAME/tip` (the branch the CI loop pushes
for `carry pr`) and `carry/NAME/TARGET`, each with its tree, and which per-tag ones a newer
tag made obsolete. All live under `carry/NAME/`: git cannot keep `carry/NAME` beside
`carry/NAME/TARGET`, so no target is named `tip` (the manifest refuses it).

A tag-pattern target follows the newest `latest` tags, so each new release leaves the
branch of an older one behind (`carry/NAME/upstream-release-v1.0.0` once v1.1.0 is out).
`status --prune` removes those, and only those carry itself wrote last: the newest reflog
entry is carry's (`carry rebase NAME ...`, `carry apply NAME`) and holds the commit the branch
is at. A branch someone committed to, reset or wrote without a log is kept, and said so.
The delete is one transaction that checks each old value, so a branch moved meanwhile stays.
"""

from __future__ import annotations

from dataclasses import dataclass

from carry.git import RefUpdate, Repo
from carry.replay import targets as targetmod
from carry.series.store import Series

_FMT = "%(refname)%00%(objectname)%00%(tree)%00%(committerdate:iso-strict)%00%(subject)"


@dataclass
class Branch:
    branch: str  # short: carry/NAME/TARGET
    head: str
    tree: str
    date: str
    subject: str
    obsolete: str = ""  # why a newer tag replaced it
    kept: str = ""  # why prune leaves it, though obsolete
    pruned: bool = False


def of_series(repo: Repo, name: str) -> list[Branch]:
    """`carry/NAME` and every `carry/NAME/*`; git's pattern matches the ref itself and what
    lies under it, not `carry/NAME-other`."""
    out = []
    for line in repo.for_each_ref(f"refs/heads/carry/{name}", _FMT):
        ref, sha, tree, date, subject = line.split("\0", 4)
        out.append(Branch(ref.removeprefix("refs/heads/"), sha, tree, date, subject))
    return out


def mark_obsolete(repo: Repo, series: Series, found: list[Branch]) -> None:
    """Set `obsolete` on each per-tag branch whose tag is older than the newest `latest` tags
    of its target's pattern (by the target's name for it, or the bare tag an `--onto` wrote
    before the two shared one name), and `kept` when carry did not write it last."""
    by_name = {b.branch: b for b in found}
    for t in series.manifest.targets:
        if not t.tags:
            continue
        tags = targetmod.release_tags(repo, t.tags)
        newest = tags[-max(t.latest, 1):]
        for tag in tags[:-max(t.latest, 1)]:
            for slug in dict.fromkeys((targetmod.slug(f"{t.name}@{tag}"), targetmod.slug(tag))):
                b = by_name.get(f"carry/{series.name}/{slug}")
                if b is None or b.obsolete:
                    continue
                b.obsolete = (f"{tag} is older than the {len(newest)} newest tag(s) of target "
                              f"{t.name} ({', '.join(newest)})")
                b.kept = _not_ours(repo, series.name, b)


def _not_ours(repo: Repo, name: str, b: Branch) -> str:
    """Why carry did not write `b` last ("" when it did): checked out, no reflog, or a
    newest reflog entry that is not carry's for this series, or is for another commit."""
    ref = f"refs/heads/{b.branch}"
    where = repo.worktree_of(ref)
    if where:
        return f"checked out in {where}"
    last = repo.reflog(ref, 1)
    if not last:
        return "no reflog says carry wrote it"
    sha, msg = last[0]
    mine = msg.startswith(f"carry rebase {name} onto ") or msg in (
        f"carry apply {name}", f"carry rebase --abort {name}")
    if not mine or sha != b.head:
        return f"last written by {msg or 'an update with no message'!r}, not by carry"
    return ""


def keep_stopped(found: list[Branch], name: str, stopped: list[str]) -> None:
    """A stopped rebase finishes onto the commit its branch held: that branch stays."""
    for target in stopped:
        for b in found:
            if b.obsolete and not b.kept and \
                    b.branch == f"carry/{name}/{targetmod.slug(target)}":
                b.kept = f"a rebase onto {target} is stopped"


def prune(repo: Repo, found: list[Branch]) -> None:
    """Delete the obsolete branches carry wrote last, in one transaction against the commits
    they were seen at."""
    gone = [b for b in found if b.obsolete and not b.kept]
    if not gone:
        return
    repo.set_refs([RefUpdate(f"refs/heads/{b.branch}", None, b.head) for b in gone],
                  "carry status --prune")
    for b in gone:
        b.pruned = True
