"""Which patches the linearizing import changed from their fork commits, and why, recorded in
the manifest so that `carry check --against-repo` reports them as linearized rather than
failing them for a patch-id that differs from the fork's commit.

A patch changes when it absorbed part of a merge (its tree, its resolution, an earlier
patch's change: `linearize.Absorbed`) or when carrying it across a merge onto a newer
upstream changed its diff (context or lines the upstream side moved). Both are said, per
patch, and compared by patch-id, the measure `check` uses.
"""

from __future__ import annotations

from dataclasses import replace

from carry.git import Repo
from carry.intake.linearize import PART, Changed, Linear
from carry.series.linearized import Linearized


def find(repo: Repo, linear: Linear, names: dict[str, str]) -> list[Linearized]:
    """The records for the patches of `linear` (`names`: written commit -> patch file) whose
    patch-id is not their fork commit's; none for a range without merges."""
    report = linear.report
    if report is None or not linear.origin:
        return []
    ids = dict((c, pid) for pid, c in repo.log_patch_ids(
        [*linear.origin, *linear.origin.values()], no_walk=True))
    upstream = report.merges[-1].upstream if report.merges else ""
    across = ", ".join(m.merge[:12] for m in report.merges)
    out = []
    for sha, orig in linear.origin.items():
        pid = ids.get(sha, "")
        if pid == ids.get(orig, ""):
            continue
        took = [f"{PART[a.part]}{f' ({a.source})' if a.source else ''} at merge "
                f"{a.merge[:12]}: {_few(a.paths)}" for a in report.absorbed if a.commit == orig]
        why = "; ".join(took) or (f"carried across merge {across} onto upstream "
                                  f"{upstream[:12]}: its diff changed with the code it "
                                  "applies to")
        out.append(Linearized(patch=names[sha], commit=orig, patch_id=pid, why=why))
    return out


def with_changes(linear: Linear, found: list[Linearized]) -> Linear:
    """`linear` whose report lists `found`, for the import's output."""
    if linear.report is None:
        return linear
    changed = [Changed(x.patch, x.commit, x.why) for x in found]
    return replace(linear, report=replace(linear.report, changed=changed))


def _few(paths: list[str]) -> str:
    return ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
