"""The tracking issue of a (series, target) whose tests fail on a clean rebase: the failing
test ids, whether each fails on the target without the series too (verdict.py), and the
tail of the output. Found again by its marker, `<!-- carry:failing series=S target=T ref=R
upstream=SHA -->`, parsed field by field like a conflict's (tracking.py); edited only when
its text changed; closed by a later run on the same target whose tests pass.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from carry.job import verdict
from carry.publish import github as forgemod
from carry.publish import owned, repository, text

if TYPE_CHECKING:
    from carry.job.shared import Action, Context
    from carry.series.store import Series, Target

MARK = "<!-- carry:failing "
_LINE = re.compile(r"^<!-- carry:failing((?: [A-Za-z]+=[^\s]*)+) -->$", re.M)
_SAFE = "@/._+-"


def marker(series: str, target: str, ref: str, upstream: str) -> str:
    fields = {"series": series, "target": target, "ref": ref, "upstream": upstream}
    return MARK + " ".join(f"{k}={quote(v, safe=_SAFE)}" for k, v in fields.items()) + " -->"


def matches(body: str, series: str, target: str) -> dict[str, str] | None:
    m = _LINE.search(body.replace("\r\n", "\n"))  # GitHub's web editor saves CRLF
    if m is None:
        return None
    fields = {k: unquote(v) for k, v in (kv.split("=", 1) for kv in m.group(1).split())}
    return fields if (fields.get("series"), fields.get("target")) == (series, target) else None


def title(series: str, target: str, ref: str) -> str:
    return f"carry: tests fail for {series} on {target} ({ref})"


def _fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def body(series: str, target: str, ref: str, upstream: str, failing: list[verdict.Failing],
         tail: str) -> str:
    """The issue's text, within GitHub's limit: rows past it are counted, not shown; every
    message is inert (text.inert) and the output sits in a fence it cannot close."""
    mine = sum(f.verdict == verdict.SERIES for f in failing)
    theirs = sum(f.verdict == verdict.UPSTREAM for f in failing)
    head = [
        marker(series, target, ref, upstream), "",
        f"The carried series `{series}` applies cleanly to `{ref}` (`{upstream[:12]}`, target "
        f"`{target}`), but its tests fail: {mine} only with the series, {theirs} on upstream "
        "too (the target without the series, with the series' test files: what `carry "
        "validate --baseline` runs). The CI job updates this issue while they fail and closes "
        "it when a later run passes.", "",
        "## Failing tests", "", "| test | without the series | message |",
        "| --- | --- | --- |"]
    end: list[str] = []
    if tail:
        fence = _fence(tail)
        end += ["", "## The end of the output", "", fence, tail, fence]
    end += ["", "## Next", "",
            f"A test that fails only with the series is the series' to fix: `carry validate "
            f"{series} --onto {ref} --baseline` runs both. One that fails on upstream too is "
            "upstream's breakage."]
    room = text.LIMIT - text.size("\n".join(head + end)) - 300
    rows: list[str] = []
    for f in failing:
        row = (f"| {text.code(f.test[:300])} | {text.inert(f.verdict)} "
               f"| {text.inert(f.message[:200])} |")
        room -= text.size(row) + 1
        if room < 0:
            break
        rows.append(row)
    if len(rows) < len(failing):
        rows.append(f"\n{len(failing) - len(rows)} more failing tests not shown (GitHub keeps "
                    f"{text.LIMIT} characters in an issue); the job's summary.json lists all "
                    f"{len(failing)}.")
    return text.bounded("\n".join(head + rows + end) + "\n")


def _find(ctx: Context, full: str, series: str, target: str
          ) -> list[tuple[forgemod.IssueInfo, dict[str, str]]]:
    out = []
    for issue in repository.repo(ctx.forge(), full).open_issues(MARK):
        fields = matches(issue.body, series, target)
        if fields is None:
            continue
        if owned.issue_is_mine(ctx.forge(), issue):
            out.append((issue, fields))
        else:
            owned.ignore_issue(ctx.forge(), full, issue,
                               f"carry's failing-tests marker for {series} on {target}")
    return out


def track(ctx: Context, s: Series, target: str, row: Any) -> list[Action]:
    from carry.job.shared import Action, forge_repo

    full = forge_repo(s, ctx.opts)
    head = title(s.name, target, row.ref)
    text = body(s.name, target, row.ref, row.onto, row.failing, getattr(row, "tail", ""))
    act = Action(s.name, target, row.ref, "issue", "would-open" if ctx.opts.dry_run else "")
    found = _find(ctx, full, s.name, target)
    if found:
        issue = found[0][0]
        act.number, act.url = issue.number, issue.url
        if (issue.title, issue.body) == (head, text):
            act.action = "unchanged"
        elif ctx.opts.dry_run:
            act.action = "would-update"
        else:
            repository.repo(ctx.forge(), full).edit_issue(issue.number, title=head, body=text)
            act.action = "updated"
    elif not ctx.room(s):
        act.action, act.note = "waiting", ctx.waiting_note("its failing-tests issue")
    elif not ctx.opts.dry_run:
        made = repository.repo(ctx.forge(), full).create_issue(head, text)
        ctx.took(s)
        act.action, act.number, act.url = "opened", made.number, made.url
    else:
        ctx.took(s)  # a dry run counts what it would open
    return [act]


def close(ctx: Context, s: Series, target: Target, row: Any) -> list[Action]:
    """Tests that pass close the issue, unless the failure it tracks is on a newer tag (two
    tag cells of one run finish in any order), as a conflict's issue."""
    from carry.job.shared import Action, forge_repo

    full = forge_repo(s, ctx.opts)
    out = []
    for issue, fields in _find(ctx, full, s.name, target.name):
        act = Action(s.name, target.name, row.ref, "issue", "would-close", issue.number,
                     issue.url)
        seen = fields.get("upstream", "")
        if target.tags and ctx.repo.try_rev_parse(seen) and not ctx.repo.is_ancestor(
                seen, row.onto):
            act.action = "skipped"
            act.note = f"left open: it tracks {fields.get('ref', seen)}, not contained in {row.ref}"
        elif not ctx.opts.dry_run:
            repository.repo(ctx.forge(), full).close_issue(issue.number, (
                f"carry: the tests of `{s.name}` pass on `{row.ref}` (`{row.onto[:12]}`); "
                "closing."))
            act.action = "closed"
        out.append(act)
    return out
