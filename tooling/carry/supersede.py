"""`carry supersede`: find the open PRs that duplicate a series, say which PR supersedes them,
and close them. A dry run by default; a hidden marker keeps the comment from being posted twice.

A PR is a duplicate when any of these holds, and the report names which:
- its body carries carry's marker for the same series (an older carry PR);
- the manifest's provenance names it (role origin or superseded);
- its commits carry one of the series' patches (patch-id), read from `refs/pull/N/head`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from carry import forge as forgemod
from carry import pr as prmod
from carry import prbody
from carry.errors import CarryError
from carry.git import Repo
from carry.series import Series

DONE_MARKER = "<!-- carry:superseded-by={number} -->"


@dataclass
class Candidate:
    number: int
    title: str
    author: str
    reasons: list[str]
    actions: list[str] = field(default_factory=list)


@dataclass
class SupersedeResult:
    series: str
    repo: str
    by: int
    dry_run: bool
    candidates: list[Candidate]


def comment_text(by: int, series: Series, reasons: list[str]) -> str:
    why = "; ".join(reasons)
    return (f"Superseded by #{by}, which carries the series \"{series.manifest.title}\" "
            f"with every commit's original author and trailers. Closing this older "
            f"proposal to avoid duplicate integration (matched: {why}).\n\n"
            + DONE_MARKER.format(number=by))


def _provenance_numbers(series: Series, forge_repo: str) -> dict[int, str]:
    out = {}
    for p in series.manifest.provenance:
        repo, _, num = p.pr.partition("#")
        if repo == forge_repo and p.role in ("origin", "superseded"):
            out[int(num)] = f"provenance: {p.role} {p.pr}"
    return out


def _patch_overlap(repo: Repo, remote: str, number: int, ids: dict[str, str],
                   base: str) -> list[str]:
    ref = f"refs/carry/pull/{number}"
    try:
        repo.fetch_refspec(remote, f"+refs/pull/{number}/head:{ref}")
    except CarryError:
        return []
    head = repo.rev_parse(ref)
    mb = repo.merge_base(base, head) or base
    have = prmod.commit_patch_ids(repo, f"{mb}..{head}")
    return sorted(ids[pid] for pid in have if pid in ids)


def find(series: Series, forge: forgemod.Forge, forge_repo: str, by: int,
         repo: Repo | None, remote: str, base: str | None) -> list[Candidate]:
    known = _provenance_numbers(series, forge_repo)
    ids = prmod.series_patch_ids(repo, [series]) if repo is not None and series.patches() else {}
    base_commit = None
    if repo is not None and base:
        base_commit = repo.try_rev_parse(f"{remote}/{base}") or repo.rev_parse(base)
    out = []
    for p in forge.open_pulls(forge_repo):
        if p.number == by:
            continue
        reasons = []
        if series.name in prbody.marked_series(p.body):
            reasons.append("carry marker for this series")
        if p.number in known:
            reasons.append(known[p.number])
        if repo is not None and ids and base_commit:
            shared = _patch_overlap(repo, remote, p.number, ids, base_commit)
            if shared:
                reasons.append(f"patch-id of {len(shared)} series patch(es)")
        if reasons:
            out.append(Candidate(p.number, p.title, p.author, reasons))
    return out


def run(series: Series, forge_repo: str, by: int, repo: Repo | None, remote: str,
        base: str | None, apply: bool, access: forgemod.Access) -> SupersedeResult:
    forge = access.connect()
    forge.pull(forge_repo, by)  # the superseding PR must exist before anything is closed
    candidates = find(series, forge, forge_repo, by, repo, remote, base)
    marker = DONE_MARKER.format(number=by)
    for c in candidates:
        already = any(marker in x.body for x in forge.comments(forge_repo, c.number))
        if not apply:
            c.actions = ["would close"] + ([] if already else ["would comment"])
            continue
        if already:
            c.actions.append("comment already posted")
        else:
            forge.comment(forge_repo, c.number, comment_text(by, series, c.reasons))
            c.actions.append("commented")
        forge.edit_pull(forge_repo, c.number, state="closed")
        c.actions.append("closed")
    return SupersedeResult(series.name, forge_repo, by, not apply, candidates)
