"""`carry validate --baseline` when the series adds a test module that imports code the fix
adds, a plan with no suites, a pytest that cannot start, and failed steps that say why."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import synthetic

from carry.series import store as seriesmod

try:  # tests/ on sys.path (rootdir conftest), or tests/ as a package
    from conftest import LOGPROBZ, TOBY, CommitBuilder, run_carry
except ImportError:
    from tests.conftest import LOGPROBZ, TOBY, CommitBuilder, run_carry

WINDOW = synthetic.SPDX_LINE + "def window(n: int) -> list[int]:\n    return list(range(n))\n"
TEST_WINDOW = ("from calc.window import window\n\n\n"
               "def test_window_three():\n    assert window(3) == [0, 1, 2]\n\n\n"
               "def test_window_empty():\n    assert window(0) == []\n")


@pytest.fixture
def newmod(tmp_path: Path) -> tuple[CommitBuilder, Path]:
    """fork/newmod: the fix plus a new module, then a test in test_core.py that fails without
    the fix and a new test module that imports the new module."""
    up = synthetic.upstream_project(tmp_path / "calc")
    up.checkout("v1")
    up.commit("[BugFix] retained() keeps the state below; add window()",
              {"calc/core.py": synthetic.SPDX_LINE + synthetic.CORE.format(fix=synthetic.FIX),
               "calc/window.py": WINDOW}, author=TOBY)
    up.commit("Test the fix and window()",
              {"tests/test_core.py": synthetic.TEST_CORE + synthetic.NEW_TEST,
               "tests/test_window.py": TEST_WINDOW}, author=LOGPROBZ)
    up.branch("fork/newmod")
    up.checkout("main")
    root = tmp_path / "series"
    synthetic.import_series(root, up.path, "newmod", "newmod", sys.executable, hooks=[])
    s = seriesmod.find(root, "newmod")
    s.manifest.test.suites = [*synthetic.SUITES, "tests/test_window.py"]
    seriesmod.save_manifest(s)
    return up, root


def _validate(up: CommitBuilder, root: Path, name: str, *args: str) -> tuple[int, str, str]:
    r = run_carry("validate", name, "--repo", str(up.path), "--engine", "local", "--onto", "v1",
                  "--series-dir", str(root), *args)
    return r.code, r.out, r.err


def test_baseline_counts_a_module_that_cannot_collect_as_failing(
        newmod: tuple[CommitBuilder, Path]) -> None:
    up, root = newmod
    code, out, err = _validate(up, root, "newmod", "--baseline", "--json")
    assert code == 0, out + err
    b = json.loads(out)["baseline"]
    assert sorted(b["proven"]) == [
        "tests/test_core.py::test_retained_keeps_the_state_below_the_last_boundary",
        "tests/test_window.py::test_window_empty", "tests/test_window.py::test_window_three"]
    assert b["fails_with_fix"] == [] and b["passes_without_fix"] == [] and not b["flagged"]
    code, out, _ = _validate(up, root, "newmod", "--baseline", "--no-cache")
    assert code == 0
    assert ("fails without the fix, passes with it: tests/test_window.py::test_window_three"
            in out)
    assert "Interrupted" not in out and "FLAGGED" not in out


def test_baseline_whose_pytest_cannot_start_is_an_error(
        newmod: tuple[CommitBuilder, Path], tmp_path: Path) -> None:
    up, root = newmod
    venv = tmp_path / "bare"  # an interpreter without pytest
    import venv as venvmod

    venvmod.create(venv, with_pip=False)
    py = str(venv / "bin" / "python")
    code, out, _ = _validate(up, root, "newmod", "--baseline", "--python", py)
    assert code == 1
    assert "[FAILED] baseline pytest: pytest did not start:" in out
    assert "No module named pytest" in out
    assert "[FAILED] pytest: pytest did not start:" in out
    assert "validation FAILED" in out


def test_failed_step_says_why_on_its_line(tmp_path: Path) -> None:
    up = synthetic.upstream_project(tmp_path / "calc")
    root = tmp_path / "series"
    synthetic.import_series(root, up.path, "broken", "broken", sys.executable, hooks=[])
    code, out, _ = _validate(up, root, "broken")
    assert code == 1
    line = next(ln for ln in out.splitlines() if "[FAILED] pytest" in ln)
    assert "1 failed" in line, line


def test_a_plan_without_suites_fails_unless_allowed(tmp_path: Path) -> None:
    up = synthetic.upstream_project(tmp_path / "calc")
    root = tmp_path / "series"
    synthetic.import_series(root, up.path, "fix", "fix", sys.executable, hooks=[])
    s = seriesmod.find(root, "fix")
    s.manifest.test.suites = []
    seriesmod.save_manifest(s)
    code, out, _ = _validate(up, root, "fix")
    assert code == 1
    assert "no tests ran: the plan names no suites" in out and "validation FAILED" in out
    code, out, _ = _validate(up, root, "fix", "--allow-no-tests")
    assert code == 0, out
    assert "no tests ran" in out and "validation passed" in out
