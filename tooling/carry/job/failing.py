"""The tracking issue of a (series, target) whose tests fail on a clean rebase: the failing
test ids, whether each fails on the target without the series too (verdict.py), and the
tail of the output. Found again by its marker, `<!-- carry:failing series=S target=T ref=R
upstream=SHA -->`, edited only when its text changed and closed by a later run on the same
target whose tests pass, as a conflict's issue is (issues.py does both).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from carry.job import issues, verdict
from carry.publish import text

if TYPE_CHECKING:
    from carry.job.shared import Action, Context, Row
    from carry.series.store import Series, Target

FAILING = issues.Marker("failing", "carry's failing-tests marker", "its failing-tests issue")
MARK = FAILING.prefix
marker = FAILING.line
matches = FAILING.matches


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


def track(ctx: Context, s: Series, target: str, row: Row) -> list[Action]:
    head = title(s.name, target, row.ref)
    said = body(s.name, target, row.ref, row.onto, row.failing, row.tail)
    return issues.keep(ctx, s, target, row, FAILING, (head, said))


def close(ctx: Context, s: Series, target: Target, row: Row) -> list[Action]:
    """Tests that pass close the issue, unless the failure it tracks is on a newer tag."""
    return issues.close(ctx, s, target, row, FAILING, (
        f"carry: the tests of `{s.name}` pass on `{row.ref}` (`{row.onto[:12]}`); closing."))
