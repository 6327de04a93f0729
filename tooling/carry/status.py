"""`carry status`: where each series stands in one repository, read from what carry left there.

Stopped rebases come from their saved state, the last result per target from the
`carry/NAME/...` branches carry writes, and the last validation from its report; whether
that report is for the current tree is a tree comparison, not a date guess.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from carry.git import Repo
from carry.series.store import Series


@dataclass
class Stopped:
    target: str
    phase: str
    patch: str
    paths: list[str]
    worktree: str
    next: str


@dataclass
class BranchResult:
    branch: str
    head: str
    date: str
    subject: str


@dataclass
class LastValidation:
    status: str
    summary: str
    onto_ref: str
    head: str
    head_tree: str
    started: str
    current: bool
    for_branch: str


@dataclass
class SeriesStatus:
    series: str
    version: int
    patches: int
    base: str
    targets: list[str]
    stopped: list[Stopped] = field(default_factory=list)
    branches: list[BranchResult] = field(default_factory=list)
    validation: LastValidation | None = None


@dataclass
class Status:
    repo: str
    series: list[SeriesStatus]


def _stopped(repo: Repo, series: Series) -> list[Stopped]:
    from carry.rebase import command as rebase
    from carry.rebase import resume

    out = []
    several = len(resume.stopped(repo)) > 1
    for s in rebase.in_progress(repo, series.name):
        pos = s.get("position", 0)
        patches = s.get("patches", [])
        patch = patches[pos]["file"] if 0 <= pos < len(patches) else ""
        action = "--continue" if s.get("phase") == "conflict" else "--abort"
        nxt = resume.command(repo, str(series.root.parent), action,
                             series.name if several else "",
                             s["target"]["name"] if several else "")
        out.append(Stopped(s["target"]["name"], s.get("phase", ""), patch,
                           list(s.get("paths", [])),
                           s.get("worktree", "") if s.get("ready", True) else "", nxt))
    return out


def _branches(repo: Repo, name: str) -> list[BranchResult]:
    fmt = "%(refname:short)%00%(objectname)%00%(committerdate:iso-strict)%00%(subject)"
    out = []
    for line in repo.for_each_ref(f"refs/heads/carry/{name}/", fmt):
        ref, sha, date, subject = line.split("\0", 3)
        out.append(BranchResult(ref, sha, date, subject))
    return out


def _validation(repo: Repo, name: str, branches: list[BranchResult]) -> LastValidation | None:
    from carry.validate.run import last_report_path

    path = last_report_path(repo, name)
    try:
        data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    tree = str(data.get("head_tree", ""))
    current = ""
    for b in branches:
        if repo.try_rev_parse(b.head, "tree") == tree:
            current = b.branch
    return LastValidation(str(data.get("status", "")), str(data.get("summary", "")),
                          str(data.get("onto_ref", "")), str(data.get("head", "")), tree,
                          str(data.get("started", "")), bool(current), current)


def run(series_list: list[Series], repo_path: str | None) -> Status:
    repo = Repo.open(repo_path) if repo_path else None
    out = []
    try:
        for s in series_list:
            m = s.manifest
            st = SeriesStatus(m.name, m.version, len(s.patches()),
                              f"{m.base.ref} {m.base.commit[:12]}".strip(),
                              [t.name for t in m.targets])
            if repo is not None:
                st.stopped = _stopped(repo, s)
                st.branches = _branches(repo, m.name)
                st.validation = _validation(repo, m.name, st.branches)
            out.append(st)
    finally:
        if repo is not None:
            repo.close()
    return Status(str(Path(repo.path)) if repo is not None else "", out)
