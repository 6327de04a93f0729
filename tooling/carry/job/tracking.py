"""The tracking issue of a (series, target) that stopped applying: its marker and its text.

The issue is found again by its marker, `<!-- carry:tracking series=NAME target=TARGET
ref=REF upstream=SHA -->` (issues.py finds, opens, edits and closes it, as it does the
failing-tests issue). The text holds nothing that changes between two runs on the same
upstream commit, so a run that finds nothing new sends no edit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from carry.git import LogEntry
from carry.job.issues import Marker

CONFLICT = Marker("tracking", "carry's tracking marker", "its tracking issue", others=True)
MARK = CONFLICT.prefix
marker = CONFLICT.line
parse = CONFLICT.parse
matches = CONFLICT.matches


@dataclass
class ConflictReport:
    series: str
    target: str  # the manifest target
    ref: str  # the tag or branch that was checked
    upstream: str  # the commit it resolved to
    base: str  # the series base the patches apply to
    patch: str  # the patch file that stopped the replay
    subject: str
    author: str
    paths: list[str]
    commits: list[LogEntry] = field(default_factory=list)
    why: list[str] = field(default_factory=list)  # one line per conflict, root conflicts first


def why_lines(entries: Sequence[Any]) -> list[str]:
    """The lines of a `replay.causes.explain` list (root conflicts first); one read back from a
    cell's summary.json may hold anything, so only well-formed entries count."""
    return [str(w["text"]) for w in entries if isinstance(w, dict) and "text" in w]


def title(r: ConflictReport) -> str:
    return f"carry: {r.series} no longer applies to {r.target} ({r.ref})"


def body(r: ConflictReport) -> str:
    lines = [
        marker(r.series, r.target, r.ref, r.upstream), "",
        f"The carried series `{r.series}` does not apply to `{r.ref}` "
        f"(`{r.upstream[:12]}`, target `{r.target}`). The CI job updates this issue while "
        "the conflict lasts and closes it when a later run applies cleanly.", "",
        "## Conflict", "",
        f"- patch: `{r.patch}`: {r.subject}",
        f"- author: {r.author}",
        f"- conflicting paths: {', '.join(f'`{p}`' for p in r.paths) or '(none reported)'}",
        *(["", "## Why", "", *(f"- {w}" for w in r.why)] if r.why else []),
        "", f"## Upstream commits that touched these paths since the series base "
        f"`{r.base[:12]}`", "",
    ]
    lines += [f"- `{c.sha[:12]}` {c.subject} ({c.author}, {c.date[:10]})" for c in r.commits]
    if not r.commits:
        lines.append("- none found (the base is not an ancestor, or the paths were renamed)")
    lines += ["", "## Next", "",
              f"`carry rebase {r.series} --onto {r.ref}` stops at this conflict; "
              "`carry rebase --resolve` makes the worktree to resolve it in, and "
              "`carry rebase --continue` takes the resolution; or record an upstream "
              "equivalent in the manifest's provenance."]
    return "\n".join(lines) + "\n"


def closing_comment(series: str, ref: str, upstream: str) -> str:
    return (f"carry: `{series}` applies cleanly to `{ref}` (`{upstream[:12]}`) and its "
            "validation passed; closing.")
