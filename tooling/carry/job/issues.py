"""One issue per (series, target) on GitHub, whatever it tracks (a conflict: tracking.py;
failing tests: failing.py): its marker, found again, opened or edited when its text changed,
closed by a later clean run.

The marker is a line of its own at the top of the body, `<!-- carry:KIND series=NAME
target=TARGET ref=REF upstream=SHA -->`, parsed into its fields, so a person quoting it in
prose, or an issue of another series whose name contains this one's, never matches. Only
issues the token's own account opened are carry's (owned.py): one someone else opened with
the marker is never edited or closed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from carry.job.shared import Action, Context, Did, forge_repo
from carry.publish import github as forgemod
from carry.publish import owned, repository

if TYPE_CHECKING:
    from carry.job.shared import Row
    from carry.series.store import Series, Target

_SAFE = "@/._+-"  # kept readable; anything else (spaces, '>') is %-quoted


@dataclass(frozen=True)
class Marker:
    """The marker of one kind of issue (`carry:tracking`, `carry:failing`)."""

    kind: str
    what: str  # how a warning names it: "carry's tracking marker"
    issue: str  # how a waiting note names the issue: "its tracking issue"
    others: bool = False  # an action names the other open issues with the same marker

    @property
    def prefix(self) -> str:
        return f"<!-- carry:{self.kind} "

    def line(self, series: str, target: str, ref: str, upstream: str) -> str:
        fields = {"series": series, "target": target, "ref": ref, "upstream": upstream}
        return self.prefix + " ".join(f"{k}={quote(v, safe=_SAFE)}"
                                      for k, v in fields.items()) + " -->"

    def parse(self, body: str) -> dict[str, str] | None:
        """The marker's fields, or None when the body has no well-formed marker."""
        pattern = rf"^<!-- carry:{re.escape(self.kind)}((?: [A-Za-z]+=[^\s]*)+) -->$"
        m = re.search(pattern, body.replace("\r\n", "\n"), re.M)  # the web editor saves CRLF
        if m is None:
            return None
        return {k: unquote(v) for k, v in (kv.split("=", 1) for kv in m.group(1).split())}

    def matches(self, body: str, series: str, target: str) -> dict[str, str] | None:
        fields = self.parse(body)
        if fields and (fields.get("series"), fields.get("target")) == (series, target):
            return fields
        return None


def find(ctx: Context, full: str, mark: Marker, series: str, target: str
         ) -> list[tuple[forgemod.IssueInfo, dict[str, str]]]:
    """carry's open issues of (series, target) with `mark`, oldest first, with its fields."""
    out = []
    for issue in repository.repo(ctx.forge(), full).open_issues(mark.prefix):
        fields = mark.matches(issue.body, series, target)
        if fields is None:
            continue
        if owned.issue_is_mine(ctx.forge(), issue):
            out.append((issue, fields))
        else:
            owned.ignore_issue(ctx.forge(), full, issue, f"{mark.what} for {series} on {target}")
    return out


def keep(ctx: Context, s: Series, target: str, row: Row, mark: Marker,
         text: tuple[str, str]) -> list[Action]:
    """Open the issue with (title, body), or edit the open one when its text changed; a run
    with no room left opens it later."""
    title, body = text
    full = forge_repo(s, ctx.opts)
    act = Action(s.name, target, row.ref, "issue", Did.WOULD_OPEN)  # each way below says
    found = find(ctx, full, mark, s.name, target)
    if found:
        issue = found[0][0]
        act.number, act.url = issue.number, issue.url
        if mark.others and len(found) > 1:
            act.note = "also open: " + ", ".join(f"#{i.number}" for i, _ in found[1:])
        if (issue.title, issue.body) == (title, body):
            act.action = Did.UNCHANGED
        elif ctx.opts.dry_run:
            act.action = Did.WOULD_UPDATE
        else:
            repository.repo(ctx.forge(), full).edit_issue(issue.number, title=title, body=body)
            act.action = Did.UPDATED
    elif not ctx.room(s):
        act.action, act.note = Did.WAITING, ctx.waiting_note(mark.issue)
    elif not ctx.opts.dry_run:
        made = repository.repo(ctx.forge(), full).create_issue(title, body)
        ctx.took(s)
        act.action, act.number, act.url = Did.OPENED, made.number, made.url
    else:
        ctx.took(s)  # a dry run counts what it would open
    return [act]


def close(ctx: Context, s: Series, target: Target, row: Row, mark: Marker,
          comment: str) -> list[Action]:
    """A clean result closes the issue unless what it tracks is on something newer (two tag
    cells of one run finish in any order): a branch target's head is always the newest, a
    tag's issue is over when the clean commit contains the one it tracks."""
    full = forge_repo(s, ctx.opts)
    out = []
    for issue, fields in find(ctx, full, mark, s.name, target.name):
        act = Action(s.name, target.name, row.ref, "issue", Did.WOULD_CLOSE, issue.number,
                     issue.url)
        seen = fields.get("upstream", "")
        if target.tags and ctx.repo.try_rev_parse(seen) and not ctx.repo.is_ancestor(
                seen, row.onto):
            act.action = Did.SKIPPED
            act.note = f"left open: it tracks {fields.get('ref', seen)}, not contained in {row.ref}"
        elif not ctx.opts.dry_run:
            repository.repo(ctx.forge(), full).close_issue(issue.number, comment)
            act.action = Did.CLOSED
        out.append(act)
    return out
