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
from dataclasses import replace
from pathlib import Path

from carry.base import redact
from carry.base.errors import CarryError
from carry.git import Repo
from carry.series.store import Series
from carry.validate.results import Report

UPSTREAM = "fails on upstream too"
SERIES = "fails only with the series"
TAIL_LINES = 40
_WORKTREE = re.compile(r"\S*?/carry-validate-[^/\s]*/(?:head|baseline)/")
_TIME = re.compile(r" in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d\))?")


def triage(s: Series, repo: Repo, onto: str, head: str, report: Report, engine: str,
           python: str | None) -> list[dict[str, str]]:
    """One entry per failing test id: {test, message, verdict}."""
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
        base = validate.run(alone, repo, None, f"{onto}..{commit}", engine_name=engine,
                            python=python, record=False)
    except CarryError as exc:
        return [{"test": t, "message": m, "verdict": f"not known: {exc.line()}"}
                for t, m in failing.items()]
    outcomes = base.tests.outcomes if base.tests else {}
    out = []
    for test, message in failing.items():
        seen = outcomes.get(test) or outcomes.get(test.split("::", 1)[0])  # or its module's
        verdict = UPSTREAM if seen in ("failed", "error") else SERIES
        out.append({"test": test, "message": message, "verdict": verdict})
    return out


def tail(report: Report, lines: int = TAIL_LINES) -> str:
    """The end of the pytest step's output, scrubbed, without what differs between two runs
    of the same failure (the durations, the throw-away checkout's path)."""
    step = next((x for x in report.steps if x.kind == "pytest" and x.log), None)
    if step is None:
        return ""
    try:
        text = Path(step.log).read_text("utf-8", "replace")
    except OSError:
        return ""
    lines_of = text.splitlines()
    if len(lines_of) >= 2 and lines_of[0].startswith("# cwd: ") and lines_of[1].startswith("$"):
        lines_of = lines_of[2:]  # the engine's header: the checkout and the command line
    kept = [_TIME.sub("", _WORKTREE.sub("", line)).rstrip() for line in lines_of]
    return redact.scrub("\n".join(kept[-lines:]).strip("\n"))[-6000:]
