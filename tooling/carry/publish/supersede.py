"""`carry supersede`: close the open PRs that a carry PR has made redundant, safely enough to run
from a scheduled job. A dry run by default; it lists every open PR it looked at and why.

The superseding PR (`--by N`) must be open or merged, in the same repository, and be carry's:
the manifest names it `consolidated`, or its body starts with carry's marker for the series and
the token's own account opened it from the fork (owned.py: anyone can write the marker).
An open PR is closed only when every rule holds, and the report names the first that fails:
- something ties it to the series: carry's marker, the manifest's provenance, or a shared patch;
- it is not the manifest's consolidated PR, and not an `origin` or `upstream-equivalent` one
  (unless --include-origin): those stay open for their authors and reviewers;
- it targets the same base as N and carries no other series;
- every one of its commits is in N (with --repo, by a verbatim patch-id that counts whitespace
  and merges; else by the provenance patches).

Concurrent runs leave one comment: a lock serialises runs on one machine, and, since CI
runners share none, each run re-reads the comments after posting and deletes its own when an
earlier one carries the same marker. Only comments by the token's own account count as carry's.

The provenance is written after the closes, so a run killed in between (or one whose series
could not be written) leaves closed PRs unrecorded: the next run finds them by carry's own
comment for #N and records them. A series folder that cannot be written is refused before
the first comment.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from carry.base.errors import CarryError
from carry.base.flock import flocked
from carry.git import Repo
from carry.publish import body as prbody
from carry.publish import github as forgemod
from carry.publish import owned, repository
from carry.publish import remote as remotemod
from carry.series import store as seriesmod
from carry.series.store import Provenance, Series

DONE_MARKER = "<!-- carry:superseded-by={number} -->"
PROTECTED_ROLES = ("origin", "upstream-equivalent")


@dataclass
class Looked:
    """One open PR supersede looked at: what tied it to the series, and the verdict."""

    number: int
    title: str
    author: str
    base: str
    matched: list[str]
    verdict: str  # close | keep | unrelated
    why: str
    actions: list[str] = field(default_factory=list)


@dataclass
class SupersedeResult:
    series: str
    repo: str
    by: int
    by_state: str  # open | draft | merged
    base: str
    dry_run: bool
    waiting: str = ""
    pulls: list[Looked] = field(default_factory=list)
    closing: list[int] = field(default_factory=list)
    provenance: list[str] = field(default_factory=list)
    # closed by an earlier run (carry's comment is on them) and missing from the provenance
    unrecorded: list[Looked] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Options:
    apply: bool = False
    when_merged: bool = False
    label: str | None = None  # None: the manifest's [supersede].label
    include_origin: bool = False


class Refused(CarryError):
    """`--by N` fails a rule: nothing is looked at, nothing is closed."""


def comment_text(by: forgemod.PullInfo, series: Series, matched: list[str]) -> str:
    where = (f"now merged on `{by.base}` as `{by.merge_sha[:10]}`" if by.merged
             else f"which targets `{by.base}` and is not merged yet")
    return (f"Superseded by #{by.number}, {where}. #{by.number} carries the series "
            f"\"{series.manifest.title}\" with every commit of this PR, each with its original "
            f"author and trailers. Closing this older proposal to avoid duplicate integration. "
            f"Do not merge or cherry-pick this PR separately.\n\n"
            f"(carry matched this PR by: {'; '.join(matched)})\n\n"
            + DONE_MARKER.format(number=by.number))


def _is_done(c: forgemod.CommentInfo, by: int, me: str) -> bool:
    """carry's comment, recognised as carry writes it: the marker is its whole last line, and
    the token's own account wrote it (anyone can write the marker)."""
    lines = (c.body or "").rstrip().splitlines()
    return (bool(lines) and lines[-1].strip() == DONE_MARKER.format(number=by)
            and owned.same(c.author, me))


def _provenance(series: Series, forge_repo: str, number: int) -> Provenance | None:
    return next((p for p in series.manifest.provenance if p.pr == f"{forge_repo}#{number}"),
                None)


def check_by(series: Series, by: forgemod.PullInfo, forge_repo: str, base: str | None,
             forge: forgemod.Forge) -> None:
    prov = _provenance(series, forge_repo, by.number)
    if by.state != "open" and not by.merged:
        raise Refused(f"#{by.number} is closed without being merged: a closed PR supersedes "
                      "nothing")
    if prov is not None and prov.role != "consolidated":
        raise Refused(f"#{by.number} is recorded as {prov.role} in the manifest of "
                      f"{series.name}: it cannot supersede other PRs")
    marked = series.name in prbody.marked_series(by.body)
    if not marked and prov is None:
        raise Refused(f"#{by.number} does not carry series {series.name}: its body does not "
                      "start with carry's marker for it and the manifest names no consolidated "
                      f"PR #{by.number}")
    if prov is None and not owned.pull_is_mine(forge, forge_repo, by):
        raise Refused(f"#{by.number} is not carry's PR for series {series.name}: its body "
                      f"starts with carry's marker, but it was "
                      f"{owned.whose(forge, forge_repo, by)}; the manifest names no "
                      f"consolidated PR #{by.number}")
    if base and by.base != base:
        raise Refused(f"#{by.number} targets {by.base}, not --base {base}")


@dataclass
class _Commits:
    """The ids of each change a PR adds on top of the base, read from refs/pull/N/head:
    verbatim, merges included (`Repo.change_ids`)."""

    repo: Repo
    remote: str
    base: str

    def of(self, number: int) -> list[str] | None:
        ref = f"refs/carry/pull/{number}"
        try:
            self.repo.fetch_refspec(self.remote, f"+refs/pull/{number}/head:{ref}")
        except CarryError:
            return None
        head = self.repo.rev_parse(ref)
        mb = self.repo.merge_base(self.base, head) or self.base
        return [pid for pid, _ in self.repo.change_ids(mb, head)]


@dataclass(frozen=True)
class _Against:
    """What every open PR is weighed against: the superseding PR `by` on `base`, and, when
    `--repo` lets the patches be compared, its commits' and the series' patch ids."""

    series: Series
    forge_repo: str
    by: forgemod.PullInfo
    base: str
    opts: Options
    commits: _Commits | None = None  # None: patches not compared (no --repo)
    ids: dict[str, str] = field(default_factory=dict)  # the series': patch-id -> name/file
    by_ids: set[str] | None = None  # `by`'s patch ids, when its commits could be read


def _evaluate(a: _Against, p: forgemod.PullInfo) -> Looked:
    series, by, commits, ids = a.series, a.by, a.commits, a.ids
    names = prbody.marked_series(p.body)
    prov = _provenance(series, a.forge_repo, p.number)
    theirs = commits.of(p.number) if commits is not None else None
    matched = []
    if series.name in names:
        matched.append("carry marker for this series")
    if prov is not None:
        matched.append(f"provenance: {prov.role}")
    shared = sorted({ids[pid] for pid in theirs or [] if pid in ids})
    if shared:
        matched.append(f"shares {len(shared)} series patch(es) by verbatim patch-id")
    look = Looked(p.number, p.title, p.author, p.base, matched, "keep", "")
    if not matched:
        look.verdict = "unrelated"
        look.why = ("no carry marker for the series, not in its provenance, no shared patch"
                    + ("" if commits else " (patches not compared: no --repo)"))
        return look
    others = [n for n in names if n != series.name]
    if prov is not None and prov.role == "consolidated":
        look.why = "it is the manifest's consolidated PR"
    elif prov is not None and prov.role in PROTECTED_ROLES and not a.opts.include_origin:
        look.why = f"provenance role {prov.role}: closed only with --include-origin"
    elif p.base != a.base:
        look.why = f"targets {p.base}, not {a.base}"
    elif others:
        look.why = f"also carries series {', '.join(others)}"
    else:
        look.why = _containment(series, p, by, prov, theirs, a.by_ids, commits is not None)
        look.verdict = "keep" if look.why else "close"
        look.why = look.why or f"every commit is in #{by.number}"
    return look


def _containment(series: Series, p: forgemod.PullInfo, by: forgemod.PullInfo,
                 prov: Provenance | None, theirs: list[str] | None, by_ids: set[str] | None,
                 compared: bool) -> str:
    """Why not every commit of `p` is known to be in `by`; "" when every one is."""
    if compared:
        if theirs is None or by_ids is None:
            which = p.number if theirs is None else by.number
            return f"cannot read the commits of #{which} (refs/pull/{which}/head)"
        if not theirs:
            return "it has no commits to compare"
        missing = [pid for pid in theirs if pid not in by_ids]
        if missing:
            return f"{len(missing)} of its {len(theirs)} commit(s) are not in #{by.number}"
        return ""
    numbers = {f.number for f in series.patches()}
    if prov is not None and prov.patches and set(prov.patches) <= numbers:
        return ""
    return (f"cannot show its commits are in #{by.number}: pass --repo to compare them by "
            "patch-id")


@contextmanager
def _machine_lock(api: str, forge_repo: str, by: int) -> Iterator[None]:
    """Runs on one machine take turns; runs on other machines are caught by the re-read."""
    key = hashlib.sha256(f"{api} {forge_repo} {by}".encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"carry-supersede-{key}.lock"
    with flocked(path, f"superseding by #{by}", wait=True):
        yield


def _comment_once(forge: forgemod.Forge, forge_repo: str, look: Looked,
                  by: forgemod.PullInfo, series: Series) -> None:
    me, gh = forge.me(), repository.repo(forge, forge_repo)
    if any(_is_done(c, by.number, me) for c in gh.comments(look.number)):
        look.actions.append("comment already posted")
        return
    mine = gh.comment(look.number, comment_text(by, series, look.matched))
    first = min(c.id for c in gh.comments(look.number)
                if _is_done(c, by.number, me) or c.id == mine.id)
    if first != mine.id:  # another machine's run posted first: keep one comment
        repository.repo(forge, forge_repo).delete_comment(look.number, mine.id)
        look.actions.append("comment already posted by another run; deleted the duplicate")
    else:
        look.actions.append("commented")


def _unrecorded(forge: forgemod.Forge, series: Series, forge_repo: str,
                by: forgemod.PullInfo) -> list[Looked]:
    """The PRs an earlier run closed for #N without recording them: killed after GitHub
    answered the close, or the series could not be written. GitHub keeps carry's comment
    whatever became of the run, so they are found by it (the token's account, #N's marker),
    in one listing of the comments written since #N was opened."""
    me = forge.me()
    numbers = sorted({n for n, c in repository.repo(forge, forge_repo).comments_since(by.created)
                      if n != by.number and _is_done(c, by.number, me)})
    out = []
    for n in numbers:
        prov = _provenance(series, forge_repo, n)
        if prov is not None and (prov.state, prov.superseded_by) == (
                "closed", f"{forge_repo}#{by.number}"):
            continue
        p = repository.repo(forge, forge_repo).pull(n)
        if p.state == "closed" and not p.merged:  # open: looked at as any open PR is
            out.append(Looked(p.number, p.title, p.author, p.base,
                              [f"carry's comment: superseded by #{by.number}"], "record",
                              "closed by an earlier run that did not record it"))
    return out


def _check_writable(series: Series) -> None:
    """Before the first comment: PRs closed into a series that cannot be written would be
    recorded only by a later run."""
    for path in (series.root, series.root.parent):
        if not os.access(path, os.W_OK):
            raise CarryError(f"cannot write series {series.name}: {path} is read-only, and "
                             "supersede records each PR it closes there; nothing was closed",
                             hint="make it writable, then run again")


def _record(loaded: Series, forge_repo: str, by: forgemod.PullInfo,
            closed: list[Looked]) -> list[str]:
    """The manifest's provenance after the closes: each closed PR superseded by N. Read again
    under the series lock, so a change another command made meanwhile is kept."""
    from carry.series.locks import series_lock

    with series_lock(loaded.root.parent, loaded.name):
        series = seriesmod.find(loaded.root.parent, loaded.name)
        return _update(series, forge_repo, by, closed)


def _update(series: Series, forge_repo: str, by: forgemod.PullInfo,
            closed: list[Looked]) -> list[str]:
    changes = []
    for look in sorted(closed, key=lambda x: x.number):  # whichever run closed which
        pr = f"{forge_repo}#{look.number}"
        prov = _provenance(series, forge_repo, look.number)
        if prov is None:
            prov = Provenance(pr=pr, role="superseded", title=look.title, author=look.author)
            series.manifest.provenance.append(prov)
        prov.state, prov.superseded_by = "closed", f"{forge_repo}#{by.number}"
        changes.append(f"{pr}: role {prov.role}, state closed, superseded_by {prov.superseded_by}")
    mine = _provenance(series, forge_repo, by.number)
    if mine is None:
        mine = Provenance(pr=f"{forge_repo}#{by.number}", role="consolidated", title=by.title)
        series.manifest.provenance.append(mine)
    mine.state = "merged" if by.merged else "open"
    mine.merged_as, mine.into = (by.merge_sha[:10], by.base) if by.merged else ("", "")
    changes.append(f"{mine.pr}: role consolidated, state {mine.state}"
                   + (f", merged_as {mine.merged_as} into {mine.into}" if by.merged else ""))
    seriesmod.save_manifest(series)
    return changes


def run(series: Series, forge_repo: str, by_number: int, repo: Repo | None,
        remote: str | None, base: str | None, opts: Options,
        access: forgemod.Access) -> SupersedeResult:
    """`remote`: of `repo`, the one with refs/pull/*; None for the manifest's
    (remote.for_pulls)."""
    from carry.series.locks import series_lock

    if opts.label is None:
        opts = dataclasses.replace(opts, label=series.manifest.supersede.label)
    pulls_remote = remotemod.for_pulls(remote, series, forge_repo) if repo else None
    if repo is not None and pulls_remote is not None:  # before any request: a local mistake
        remotemod.check(repo, pulls_remote)
    forge = access.connect()
    by = repository.repo(forge, forge_repo).pull(by_number)
    check_by(series, by, forge_repo, base, forge)
    if by.merged:
        merged_as = repository.repo(forge, forge_repo).merge_sha(by.number)
        by = dataclasses.replace(by, merge_sha=merged_as)
    target = base or by.base
    state = "merged" if by.merged else "draft" if by.draft else "open"
    result = SupersedeResult(series.name, forge_repo, by.number, state, target,
                             dry_run=not opts.apply)
    if opts.when_merged and not by.merged:
        result.dry_run = True
        result.waiting = f"#{by.number} is not merged yet: nothing is closed until it is"
        return result
    against = _Against(series, forge_repo, by, target, opts)
    if repo is not None and pulls_remote is not None:
        base_commit = remotemod.base_commit(repo, pulls_remote, target)
        commits = _Commits(repo, pulls_remote.name, base_commit)
        theirs = commits.of(by.number)
        against = dataclasses.replace(against, commits=commits, ids=_series_ids(repo, series),
                                      by_ids=set(theirs) if theirs is not None else None)
    for p in repository.repo(forge, forge_repo).open_pulls():
        if p.number != by.number:
            result.pulls.append(_evaluate(against, p))
    closing = [x for x in result.pulls if x.verdict == "close"]
    result.closing = [x.number for x in closing]
    result.unrecorded = _unrecorded(forge, series, forge_repo, by)
    if not opts.apply:
        me = forge.me()
        for look in closing:
            done = any(_is_done(c, by.number, me)
                       for c in repository.repo(forge, forge_repo).comments(look.number))
            look.actions = ["comment already posted" if done else "would comment",
                            *([f"would label {opts.label}"] if opts.label else []),
                            "would close"]
        for look in result.unrecorded:
            look.actions = ["would record"]
        return result
    if not closing and not result.unrecorded:
        return result
    _check_writable(series)
    with _machine_lock(forge.url, forge_repo, by.number), \
            series_lock(series.root.parent, series.name):
        for look in closing:
            _comment_once(forge, forge_repo, look, by, series)
            if opts.label:
                repository.repo(forge, forge_repo).add_label(look.number, opts.label)
                look.actions.append(f"labelled {opts.label}")
            repository.repo(forge, forge_repo).edit_pull(look.number, state="closed")
            look.actions.append("closed")
        result.provenance = _record(series, forge_repo, by, [*closing, *result.unrecorded])
        for look in result.unrecorded:
            look.actions = ["recorded"]
    return result


def _series_ids(repo: Repo, series: Series) -> dict[str, str]:
    """verbatim patch-id -> `name/file` of the series' patches, compared as `change_ids`."""
    from carry.series import patches as patchmod

    loaded = [patchmod.load(p.path, p.number) for p in series.patches()]
    ids = repo.diff_patch_ids([p.diff for p in loaded], verbatim=True) if loaded else []
    return {pid: f"{series.name}/{p.file}" for p, pid in zip(loaded, ids, strict=True) if pid}
