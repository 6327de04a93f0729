"""A cell whose tests fail: which tests, the tail of their output, and whether each also
fails on the target without the series.

"Without the series" is the commit `carry validate --baseline` tests: the target with only
the series' test files laid over it (validate/baseline.py). It is validated like any
commit, with the plan's suites and no hooks, so its report is cached like every validation
and a scheduled rerun starts no container. A test that fails there too is upstream's
breakage; one that passes there (or does not exist without the series) is the series'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from carry.base import redact
from carry.base.errors import CarryError
from carry.git import Repo
from carry.series.store import Series
from carry.validate.results import Report, StepKind

UPSTREAM = "fails on upstream too"
SERIES = "fails only with the series"
TAIL_LINES = 40
LINE_CHARS = 2000  # of one output line: an issue shows no more, and the clean-up stays short
LOG_BYTES = 1 << 20  # of the log's end: what the tail is cut from
# Every pattern here starts with a literal and runs no unbounded lazy or nested repetition, so
# each is linear in the line (the old `\S*?/carry-validate-...` tried every position of a
# long word to its end: a 100 KB line kept `ci run` busy for minutes).
_WORKTREE = re.compile(r"/carry-validate-[^/\s]*/(?:head|baseline)/")
_TIME = re.compile(r" in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d\))?")
_SPACE = re.compile(r"(\s+)")


@dataclass
class Failing:
    """A failing test, and whether it fails without the series too (the defaults: a
    summary.json someone else wrote may leave a key out)."""

    test: str = ""  # pytest's node id
    message: str = ""
    verdict: str = ""  # UPSTREAM | SERIES | "not known: why"


def triage(s: Series, repo: Repo, onto: str, head: str, report: Report, engine: str,
           python: str | None) -> list[Failing]:
    """One entry per failing test id."""
    from carry.validate import plan
    from carry.validate import run as validate
    from carry.validate.baseline import baseline_commit

    failing: dict[str, str] = {}
    for f in report.tests.failures if report.tests else []:
        failing.setdefault(f.test, f.message)
    if not failing:
        return []
    tp = s.manifest.test
    files = [p for p in repo.changed_files(onto, head, deleted=True)
             if plan.is_test_file(p, tp.suites)]
    commit = baseline_commit(repo, onto, head, files)
    alone = replace(s, manifest=replace(s.manifest, test=replace(tp, hooks=[],
                                                                 diff_check=False)))
    try:
        base = validate.run(alone, repo, validate.Request(
            commit=f"{onto}..{commit}", engine=engine, python=python, record=False))
    except CarryError as exc:
        return [Failing(t, m, f"not known: {exc.line()}") for t, m in failing.items()]
    outcomes = base.tests.outcomes if base.tests else {}
    out = []
    for test, message in failing.items():
        seen = outcomes.get(test) or outcomes.get(test.split("::", 1)[0])  # or its module's
        verdict = UPSTREAM if seen is not None and seen.bad else SERIES
        out.append(Failing(test, message, verdict))
    return out


def tail(report: Report, lines: int = TAIL_LINES) -> str:
    """The end of the pytest step's output, scrubbed, without what differs between two runs
    of the same failure (the durations, the throw-away checkout's path)."""
    step = next((x for x in report.steps if x.kind is StepKind.PYTEST and x.log), None)
    if step is None:
        return ""
    try:
        with open(step.log, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - LOG_BYTES))
            text = fh.read(LOG_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""
    lines_of = text.splitlines()
    if len(lines_of) >= 2 and lines_of[0].startswith("# cwd: ") and lines_of[1].startswith("$"):
        lines_of = lines_of[2:]  # the engine's header: the checkout and the command line
    kept = [clean(line) for line in lines_of[-lines:]]
    return redact.scrub("\n".join(kept).strip("\n"))[-6000:]


def clean(line: str) -> str:
    """One output line without what differs between two runs (durations, the throw-away
    checkout's path, cut at its start), bounded to LINE_CHARS."""
    if len(line) > LINE_CHARS:
        line = f"{line[:LINE_CHARS]} [{len(line) - LINE_CHARS} more characters not shown]"
    words = _SPACE.split(line)
    for i, word in enumerate(words):
        if "/carry-validate-" in word:
            found = list(_WORKTREE.finditer(word))
            if found:
                words[i] = word[found[-1].end():]
    return _TIME.sub("", "".join(words)).rstrip()
