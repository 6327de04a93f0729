"""The failing-tests issue's text, from test output anyone can write: bounded to GitHub's
limit, mentions and HTML made inert, and cleaned up in time linear in the output."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from carry.job import failing, verdict
from carry.publish import text
from carry.validate.results import Status, StepKind, StepResult

EVIL = "assert x == 1 @vllm-project/team <!-- hide <img src=x onerror=alert(1)> | `tick`"


def _failing(n: int, message: str = EVIL) -> list[verdict.Failing]:
    return [verdict.Failing(f"tests/test_core.py::test_case_{i:04d}[{'p' * 80}]",
                            message + " " + "m" * 150, verdict.SERIES)
            for i in range(n)]


def test_300_failing_tests_fit_githubs_limit_with_a_count_of_the_rest() -> None:
    body = failing.body("s", "main", "v1", "a" * 40, _failing(300), "tail\n" * 40)
    assert text.size(body) <= text.LIMIT
    shown = body.count("| `tests/test_core.py::test_case_")
    assert 0 < shown < 300 and f"{300 - shown} more failing tests not shown" in body
    assert body.rstrip().endswith("upstream's breakage.")  # the end is never cut off


def test_mentions_and_html_from_test_output_are_inert() -> None:
    tail = "E   @someone <!-- x --> <img src=x onerror=alert(1)>\n```\nbreak out\n```"
    body = failing.body("s", "main", "v1", "a" * 40, _failing(2), tail)
    rows = [ln for ln in body.splitlines() if ln.startswith("| `tests/")]
    assert rows and all("<" not in r and "@vllm" not in r for r in rows)
    assert all(r.count(" | ") == 2 for r in rows)  # no `|` of the message ends a cell
    fence = re.search(r"^(`{3,})$", body, re.M)
    assert fence and len(fence.group(1)) > 3  # the output's own ``` cannot close it
    outside = body.split(fence.group(1))[0] + body.split(fence.group(1))[-1]
    assert "<!-- x" not in outside and "onerror" not in outside.replace(
        "onerror=alert(1)&gt;", "")


def _report(log: Path) -> Any:
    step = StepResult(StepKind.PYTEST, "pytest", "pytest -q", Status.FAILED, 1, 0.0, str(log))
    return SimpleNamespace(steps=[step])


def test_the_clean_up_is_linear_in_a_long_output_line(tmp_path: Path) -> None:
    """A quadratic pattern takes hours over these 2 MB; a linear one, well under a second."""
    log = tmp_path / "pytest.log"
    long_word = "x" * 1_000_000
    paths = "/tmp/carry-validate-ab/head/tests/t.py:3:" * 25_000
    log.write_text(f"# cwd: /x\n$ pytest\n{long_word}\n{paths} in 1.5s\nE failed\n")
    tail = verdict.tail(_report(log))
    assert tail.endswith("E failed") and "more characters not shown" in tail
    assert len(tail) <= 6000
    assert verdict.clean("at /tmp/carry-validate-x/baseline/tests/t.py:3 in 0.12s") == \
        "at tests/t.py:3"


def test_the_dashboard_cell_lists_a_few_failing_tests_and_counts_the_rest() -> None:
    from carry.job import board as boardmod
    from carry.job import steer
    from carry.job.shared import Check, Row

    row = Row("s", "main", "a" * 40, "applied", check=Check.FAILED, failing=_failing(300))
    state, details = steer._state(row)
    assert state == "tests failing" and len(details) == steer.SHOWN + 1
    assert details[-1] == f"{300 - steer.SHOWN} more in its issue"
    cell = boardmod.Cell("s", "main", state="upstream says @team <b>hi</b>")
    body = boardmod.render(boardmod.Board("lab/fork", cells=[cell]))
    assert "@team" not in body and "<b>" not in body
