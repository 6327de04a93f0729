"""F20: what `carry validate` met on vLLM's own suites, on the synthetic upstream with real git,
pytest and pre-commit: a failing fallback hook says why, a hook environment that cannot be
installed says so (and is not cached), the baseline proves only what the series adds or
changes, an empty suite fails, the plan's environment reaches the steps and the cache key,
the local engine finds its own cache after an install, suites stay inside the target, and a
cached report shows no step durations."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import synthetic

from carry.series import store as seriesmod
from carry.series.store import Hook
from carry.series.store import TestPlan as Plan

try:  # tests/ on sys.path (rootdir conftest), or tests/ as a package
    from conftest import LOGPROBZ, TOBY, CommitBuilder, Result, run_carry
except ImportError:
    from tests.conftest import LOGPROBZ, TOBY, CommitBuilder, Result, run_carry


@pytest.fixture
def up(tmp_path: Path) -> CommitBuilder:
    return synthetic.upstream_project(tmp_path / "calc")


def _series(up: CommitBuilder, root: Path, name: str = "fix", branch: str = "fix",
            hooks: list[Hook] | None = None, python: str = sys.executable, **test: Any) -> None:
    synthetic.import_series(root, up.path, name, branch, python, hooks=hooks)
    s = seriesmod.find(root, name)
    for k, v in test.items():
        setattr(s.manifest.test, k, v)
    s.manifest.test.diff_check = test.get("diff_check", True)
    seriesmod.save_manifest(s)


def _validate(up: CommitBuilder, root: Path, onto: str, *args: str, name: str = "fix",
              env: dict[str, str] | None = None) -> Result:
    return run_carry("validate", name, "--repo", str(up.path), "--engine", "local", "--onto",
                     onto, "--series-dir", str(root), *args, env=env)


def _on_v2(up: CommitBuilder, tag: str, files: dict[str, str]) -> None:
    """A new upstream release `tag` on top of v2."""
    up.checkout("v2")
    up.commit(f"Release {tag}", files)
    up.tag(tag)
    up.checkout("main")


def _line(out: str, start: str) -> str:
    return next(ln for ln in out.splitlines() if ln.strip().startswith(start))


# -- 1. a failing fallback hook says why -------------------------------------------------------

FAILING_TYPECHECK = ('import sys\n'
                     'print("calc/core.py:12: error: Incompatible return value type")\n'
                     'sys.exit(1)\n')


def test_a_failing_fallback_hook_says_why_on_its_line(up: CommitBuilder, tmp_path: Path) -> None:
    _on_v2(up, "v3", {"tools/typecheck.py": FAILING_TYPECHECK})
    root = tmp_path / "series"
    _series(up, root, hooks=[Hook(id="typecheck-3.12", stage="manual", fallback="typecheck")])
    r = _validate(up, root, "v3")
    assert r.code == 1, r.out + r.err
    line = _line(r.out, "[FAILED] hook typecheck-3.12 -> typecheck")
    assert "calc/core.py:12: error: Incompatible return value type" in line, line
    assert "used the declared fallback 'typecheck'" in line


# -- 2. a hook environment that cannot be installed ---------------------------------------------

def test_a_hook_environment_that_cannot_be_installed(up: CommitBuilder, tmp_path: Path) -> None:
    gone = tmp_path / "no-such-hooks-repo"
    config = synthetic.CONFIG.format(typecheck="typecheck") + (
        f"  - repo: file://{gone}\n    rev: v1.0.0\n    hooks:\n      - id: black\n")
    _on_v2(up, "v3", {".pre-commit-config.yaml": config})
    root = tmp_path / "series"
    _series(up, root, hooks=[Hook()], diff_check=False)
    env = {"PRE_COMMIT_HOME": str(tmp_path / "pc-home")}
    r = _validate(up, root, "v3", "--json", env=env)
    assert r.code == 1, r.err
    report = json.loads(r.out)
    hook = next(s for s in report["steps"] if s["kind"] == "hook")
    assert hook["status"] == "not-installed"
    assert hook["note"].startswith(
        f"the hook environment could not be installed: file://{gone}: fatal: '{gone}' "
        "does not appear to be a git repository"), hook["note"]
    kept = Path(hook["log"]).with_name(Path(hook["log"]).stem + "-pre-commit.log")
    assert f"(pre-commit's log: {kept.name})" in hook["note"]
    assert "### error information" in kept.read_text()  # pre-commit's own log, with the step's
    text = _validate(up, root, "v3", env=env)
    assert "[NOT-INSTALLED] hook all hooks: the hook environment could not be installed" in (
        text.out)
    assert "[cached]" not in text.out  # the network's outcome, not the series': not kept


# -- 3. the baseline proves only what the series adds or changes --------------------------------

CORE_WITH_WINDOW = synthetic.CORE.format(fix=synthetic.FIX) + (
    "\n\ndef window(n: int) -> list[int]:\n    return list(range(n))\n")
TEST_CORE_WINDOW = synthetic.TEST_CORE.replace(
    "from calc.core import boundaries, retained",
    "from calc.core import boundaries, retained, window").replace(
    "assert set(retained(64, 16)) <= set(boundaries(64, 16))",
    "assert set(retained(80, 16)) <= set(boundaries(80, 16))") + synthetic.NEW_TEST + (
    "\n\ndef test_window():\n    assert window(2) == [0, 1]\n")


def test_baseline_counts_only_the_tests_the_series_adds_or_changes(up: CommitBuilder,
                                                                     tmp_path: Path) -> None:
    up.checkout("v1")
    up.commit("[BugFix] retained() keeps the state below; add window()",
              {"calc/core.py": synthetic.SPDX_LINE + CORE_WITH_WINDOW}, author=TOBY)
    up.commit("Test the fix and window()", {"tests/test_core.py": TEST_CORE_WINDOW},
              author=LOGPROBZ)
    up.branch("fork/window")
    up.checkout("main")
    root = tmp_path / "series"
    _series(up, root, "window", "window", hooks=[])
    r = _validate(up, root, "v1", "--baseline", name="window")
    assert r.code == 0, r.out + r.err
    proven = sorted(ln.split(": ", 1)[1] for ln in r.out.splitlines()
                    if "fails without the fix, passes with it:" in ln)
    # two new tests and the changed one; not test_boundaries, which the series left alone
    assert proven == ["tests/test_core.py::test_retained_is_a_subset",
                      "tests/test_core.py::test_retained_keeps_the_state_below_the_last_boundary",
                      "tests/test_core.py::test_window"]
    line = _line(r.out, "tests/test_core.py did not import on the unfixed base")
    assert "(ImportError: cannot import name 'window' from 'calc.core'):" in line
    assert line.endswith("none of its 5 tests ran there; 3 of them the series adds or changes")


# -- 4. a planned suite that ran no test ---------------------------------------------------------

def test_a_planned_suite_that_ran_no_test_fails_unless_allowed(up: CommitBuilder,
                                                                 tmp_path: Path) -> None:
    root = tmp_path / "series"
    args = ["-q", "-p", "no:cacheprovider", "-k", "retained or clamp"]
    _series(up, root, hooks=[], pytest_args=args)
    r = _validate(up, root, "v1")
    assert r.code == 1, r.out + r.err
    line = _line(r.out, "[FAILED] pytest")
    assert "no test ran in tests/unit" in line and "[test].allow_empty" in line
    assert "validation FAILED" in r.out
    _series(up, root, hooks=[], pytest_args=args, allow_empty=["tests/unit"])
    assert "allow_empty = [" in (root / "fix" / "series.toml").read_text()
    r = _validate(up, root, "v1")
    assert r.code == 0, r.out
    assert "tests/unit: 0 passed, 0 failed, 0 skipped, 0 errors" in r.out
    _series(up, root, hooks=[], allow_empty=["tests/nope"])
    r = _validate(up, root, "v1")
    assert r.code == 2 and "[test].allow_empty names tests/nope" in r.err


# -- 5. the plan's environment --------------------------------------------------------------------

TEST_ENV = 'import os\n\n\ndef test_mode():\n    assert os.environ.get("CALC_MODE") == "strict"\n'


def test_the_plan_names_its_environment_and_the_cache_keys_on_it(up: CommitBuilder,
                                                                   tmp_path: Path) -> None:
    _on_v2(up, "v3", {"tests/test_env.py": TEST_ENV})
    root = tmp_path / "series"
    suites = [*synthetic.SUITES, "tests/test_env.py"]
    _series(up, root, hooks=[], suites=suites)
    assert _validate(up, root, "v3").code == 1
    # the shell's environment is what the local steps see: a change there is not a cache hit
    r = _validate(up, root, "v3", env={"CALC_MODE": "strict"})
    assert r.code == 0 and "[cached]" not in r.out, r.out
    _series(up, root, hooks=[], suites=suites, env={"CALC_MODE": "strict"})
    assert '[test.env]\nCALC_MODE = "strict"' in (root / "fix" / "series.toml").read_text()
    r = _validate(up, root, "v3")
    assert r.code == 0 and "[cached]" not in r.out, r.out
    assert "[cached]" in _validate(up, root, "v3").out
    from carry.validate import engines

    pinned = "localhost/carry-test@sha256:" + "ab" * 32
    podman = engines.make("podman", pinned, "/opt/venv/bin/python", {"CALC_MODE": "strict"})
    assert podman.step_env()["CALC_MODE"] == "strict"  # every engine gets it


@pytest.mark.parametrize(("env", "said"), [
    ({"HF_TOKEN": "abc"}, "[test].env 'HF_TOKEN' looks like a secret"),
    ({"CALC_URL": "ghp_" + "x" * 36}, "[test].env 'CALC_URL' looks like a secret"),
    ({"GIT_DIR": "/tmp"}, "[test].env 'GIT_DIR' is set by carry for every step"),
    ({"1BAD": "x"}, "[test].env '1BAD' is not a variable name"),
])
def test_a_secret_in_the_plan_environment_is_refused(up: CommitBuilder, tmp_path: Path,
                                                     env: dict[str, str], said: str) -> None:
    root = tmp_path / "series"
    _series(up, root, hooks=[], env=env)
    r = _validate(up, root, "v1")
    assert r.code == 2 and said in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1 and "x" * 36 not in r.err


# -- 6. the local engine finds its own cache after the requirements installed something ----------

def test_the_first_rerun_after_an_install_is_cached(up: CommitBuilder, tmp_path: Path) -> None:
    import site
    import venv

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    purelib = next(env_dir.glob("lib/python*/site-packages"))
    # pytest and pre-commit from carry's own environment, without installing them
    (purelib / "carry_tests.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    root = tmp_path / "series"
    _series(up, root, hooks=[], python=str(py), requirements=[synthetic.WHEEL])
    first = _validate(up, root, "v1")
    assert first.code == 0, first.out + first.err
    assert "9 tests passed and 1 skipped" not in first.out  # carry_tinydep is there now
    again = _validate(up, root, "v1")
    assert again.code == 0 and "[cached]" in again.out, again.out


# -- 7. suites stay inside the target, and each must be there ------------------------------------

def test_a_suite_outside_the_target_or_missing_from_it_is_refused(up: CommitBuilder,
                                                                   tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "test_x.py"
    outside.parent.mkdir()
    outside.write_text("def test_x():\n    pass\n")
    root = tmp_path / "series"
    for suite in (str(outside), "../elsewhere/test_x.py"):
        _series(up, root, hooks=[], suites=["tests/test_core.py", suite])
        r = _validate(up, root, "v1")
        assert r.code == 2, r.out
        assert f"[test].suites entry {suite!r} is outside the target tree" in r.err
    _series(up, root, hooks=[], suites=["tests/test_core.py", "tests/test_gone.py",
                                        "tests/unit::test_x"])
    r = _validate(up, root, "v1")
    assert r.code == 2, r.out
    assert "planned suite not in the target tree (v1, result" in r.err
    assert r.err.strip().split("): ", 1)[1].startswith("tests/test_gone.py (hint:")
    runs = up.path / ".git" / "carry" / "validate"
    assert not runs.exists() or not [p for p in runs.iterdir() if p.name != "cache"]


# -- 8. a cached report shows no step durations ---------------------------------------------------

def test_a_cached_report_shows_no_step_durations(up: CommitBuilder, tmp_path: Path) -> None:
    root = tmp_path / "series"
    _series(up, root, hooks=[])
    first = _validate(up, root, "v1")
    seconds = re.compile(r"\(\d+\.\ds\)")
    assert seconds.search(_line(first.out, "[ok] pytest"))
    again = _validate(up, root, "v1")
    assert "[cached]" in again.out
    steps = [ln for ln in again.out.splitlines() if ln.strip().startswith("[ok]")]
    assert steps and not any(seconds.search(ln) for ln in steps), steps


def test_the_plan_dataclass_defaults() -> None:
    assert Plan().env == {} and Plan().allow_empty == []
