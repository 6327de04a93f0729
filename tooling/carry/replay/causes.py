"""What a why says, apart from how it is worked out (`replay.why`): the check of a cause read
back from a file, and the line a person reads. A stop's report and a saved state need only
these, so a `--skip` imports none of the search (its threads, its merges)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from carry.replay.runs import PatchResult

CONFLICTING = ("conflict", "would-conflict")

_SHA = re.compile(r"[0-9a-f]{40}\Z")


def valid_cause(cause: Any) -> bool:
    """None, or the commit, subject and PR number `replay.why` gives: a cause read back from
    a file (a saved rebase, the why cache) is printed, so it is checked first."""
    return cause is None or (
        isinstance(cause, dict) and set(cause) == {"sha", "subject", "pr"}
        and isinstance(cause["sha"], str) and bool(_SHA.match(cause["sha"]))
        and isinstance(cause["subject"], str)
        and (cause["pr"] is None or type(cause["pr"]) is int))


def explain(steps: Sequence[PatchResult], line: str = "") -> list[dict[str, Any]]:
    """One entry per conflicting patch, root conflicts first (series order within each), with
    the one line a person reads. `line`: the target's name when it is not upstream's line (a
    fork branch), so that its commits are not called upstream's."""
    status = {s.file: s.status for s in steps}
    out = [{"file": s.file, "status": s.status, "cause": s.cause, "builds_on": s.builds_on,
            "look": s.look, "line": line, "text": describe(s, status.get(s.builds_on, ""), line)}
           for s in steps if s.status in CONFLICTING]
    return sorted(out, key=lambda e: bool(e["builds_on"]))


def describe(step: PatchResult, on_status: str = "", line: str = "") -> str:
    """"0007 conflicts since upstream abc123 'Rename foo (#12)'" ("since fork-dev commit
    abc123 ..." when the target, `line`, is a fork branch), "0009 builds on 0007, which was
    skipped"."""
    num = _num(step.file)
    verb = "conflicts" if step.status == "conflict" else "would conflict"
    if step.builds_on:
        which = {"skipped": "was skipped", "conflict": "conflicts",
                 "would-conflict": "would conflict too"}.get(on_status, "was left out")
        return f"{num} builds on {_num(step.builds_on)}, which {which}"
    c = step.cause
    where = f"{line} commit" if line else "upstream"
    if c:
        return f"{num} {verb} since {where} {str(c.get('sha', ''))[:12]} '{c.get('subject')}'"
    text = f"{num} {verb}; no single {line or 'upstream'} commit explains it"
    if step.look:
        return f"{text}: read the commits that change its files, {step.look}"
    return f"{text}: compare its files between the series base and the target"


def _num(file: str) -> str:
    return file.split("-", 1)[0]
