"""The tracking issue of a (series, target) that stopped applying: its marker and its text.

The issue is found again by a marker on a line of its own at the top of the body,
`<!-- carry:tracking series=NAME target=TARGET ref=REF upstream=SHA -->`, parsed into its
fields, so a person quoting the marker in prose, or an issue of another series whose name
contains this one's, never matches. The text holds nothing that changes between two runs on
the same upstream commit, so a run that finds nothing new sends no edit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from carry.git import LogEntry

MARK = "<!-- carry:tracking "
_LINE = re.compile(r"^<!-- carry:tracking((?: [A-Za-z]+=[^\s]*)+) -->$", re.M)
_SAFE = "@/._+-"  # kept readable; anything else (spaces, '>') is %-quoted


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
    """The lines of a `replay.why.explain` list (root conflicts first); one read back from a
    cell's summary.json may hold anything, so only well-formed entries count."""
    return [str(w["text"]) for w in entries if isinstance(w, dict) and "text" in w]


def marker(series: str, target: str, ref: str, upstream: str) -> str:
    fields = {"series": series, "target": target, "ref": ref, "upstream": upstream}
    return MARK + " ".join(f"{k}={quote(v, safe=_SAFE)}" for k, v in fields.items()) + " -->"


def parse(body: str) -> dict[str, str] | None:
    """The marker's fields, or None when the body has no well-formed carry marker."""
    m = _LINE.search(body.replace("\r\n", "\n"))  # GitHub's web editor saves CRLF
    if m is None:
        return None
    pairs = (kv.split("=", 1) for kv in m.group(1).split())
    return {k: unquote(v) for k, v in pairs}


def matches(body: str, series: str, target: str) -> dict[str, str] | None:
    fields = parse(body)
    if fields and fields.get("series") == series and fields.get("target") == target:
        return fields
    return None


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
