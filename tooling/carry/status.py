"""`carry status`: where each series stands in one repository, read from what carry left there.

Stopped rebases come from their saved state, the last result per target from the
`carry/NAME/...` branches carry writes, and the last validation from its report; whether
that report is for the current tree is a tree comparison, not a date guess. The recorded
resolutions come from the series folder, each with whether a replay can still use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carry.base import untrusted
from carry.base.errors import CarryError
from carry.git import Repo
from carry.series.store import Series

if TYPE_CHECKING:
    from carry.rebase.branches import Branch


@dataclass
class Stopped:
    target: str
    phase: str
    patch: str
    paths: list[str]
    worktree: str
    next: str
    why: list[str] = field(default_factory=list)  # each conflict's why, root conflicts first


@dataclass
class LastValidation:
    status: str
    summary: str
    onto_ref: str
    head: str
    head_tree: str
    started: str
    current: bool
    for_branch: str  # the first of `for_branches`
    for_branches: list[str] = field(default_factory=list)  # every branch with that tree


@dataclass
class RecordedResolution:
    """One file of `resolutions/`; `unmatched` says why no replay can use it any more."""

    file: str
    patch: str
    path: str
    version: int
    unmatched: str = ""


@dataclass
class SeriesStatus:
    series: str
    version: int
    patches: int
    base: str
    targets: list[str]
    stopped: list[Stopped] = field(default_factory=list)
    branches: list[Branch] = field(default_factory=list)
    validation: LastValidation | None = None
    resolutions: list[RecordedResolution] = field(default_factory=list)
    resolutions_note: str = ""  # what could not be checked
    pruned: dict[str, str] = field(default_factory=dict)  # file: why, with --prune
    pruned_version: int = 0
    audit: dict[str, list[str]] = field(default_factory=dict)  # branch: its replay's findings


@dataclass
class Status:
    repo: str
    series: list[SeriesStatus]


def _stopped(repo: Repo, series: Series) -> list[Stopped]:
    from carry.rebase import command as rebase
    from carry.rebase import resume
    from carry.replay.causes import explain

    out = []
    several = len(resume.stopped(repo)) > 1
    for s in rebase.in_progress(repo, series.name):
        patch = s.stop.file if s.position < len(s.patches) else ""
        action = "--continue" if s.phase.stopped else "--abort"
        nxt = resume.command(repo, str(series.root.parent), action,
                             series.name if several else "", s.target.name if several else "")
        why = [w["text"] for w in explain(s.patches)]
        out.append(Stopped(s.target.name, s.phase, patch, list(s.paths),
                           s.worktree if s.ready else "", nxt, why))
    return out


def _branches(repo: Repo, series: Series, st: SeriesStatus, prune: bool) -> None:
    """Every branch of the series with its tree; the per-tag ones a newer tag made obsolete,
    removed with `prune` when carry wrote them last."""
    from carry.rebase import branches
    from carry.replay import audit

    st.branches = branches.of_series(repo, series.name)
    st.audit = {b.branch: found for b in st.branches if (found := audit.recorded(repo, b.head))}
    branches.mark_obsolete(repo, series, st.branches)
    branches.keep_stopped(st.branches, series.name, [s.target for s in st.stopped])
    if prune:
        branches.prune(repo, st.branches)


def _validation(repo: Repo, name: str, branches: list[Branch]) -> LastValidation | None:
    from carry.validate.run import last_report_path

    path = last_report_path(repo, name)
    try:
        data: dict[str, Any] | None = untrusted.read_json(path, dict, missing_ok=True)
    except (CarryError, ValueError):  # damaged: status shows no validation, as for none
        return None
    if data is None:
        return None
    tree = str(data.get("head_tree", ""))
    same = [b.branch for b in branches if b.tree == tree and not b.pruned]
    return LastValidation(str(data.get("status", "")), str(data.get("summary", "")),
                          str(data.get("onto_ref", "")), str(data.get("head", "")), tree,
                          str(data.get("started", "")), bool(same), same[0] if same else "",
                          same)


def _resolutions(repo: Repo | None, series: Series, st: SeriesStatus, prune: bool) -> None:
    from carry.replay import resolution

    if prune:
        st.pruned, st.pruned_version, _ = resolution.prune(series, repo)
        st.version = series.manifest.version
    try:
        files, gone, st.resolutions_note = resolution.unmatched(series, repo)
    except CarryError as exc:  # status reports a damaged file; a replay refuses it
        st.resolutions_note = exc.line()
        return
    st.resolutions = [RecordedResolution(f"resolutions/{r.file_name}", f"{r.patch:04d}",
                                         r.path, r.version, gone.get(r.name, ""))
                      for r in files]


def run(series_list: list[Series], repo_path: str | None, prune: bool = False) -> Status:
    """`prune` also removes the resolutions that no longer match (a new version) and, with
    a repository, the per-tag branches a newer tag made obsolete."""
    repo = Repo.open(repo_path) if repo_path else None
    out = []
    try:
        for s in series_list:
            m = s.manifest
            st = SeriesStatus(m.name, m.version, len(s.patches()),
                              (m.base.commit[:12] if m.base.ref == m.base.commit
                               else f"{m.base.ref} {m.base.commit[:12]}".strip()),
                              [t.name for t in m.targets])
            _resolutions(repo, s, st, prune)
            if repo is not None:
                st.stopped = _stopped(repo, s)
                _branches(repo, s, st, prune)
                st.validation = _validation(repo, m.name, st.branches)
            out.append(st)
    finally:
        if repo is not None:
            repo.close()
    return Status(str(Path(repo.path)) if repo is not None else "", out)
