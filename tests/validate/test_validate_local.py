"""`carry validate --engine local` on the synthetic upstream: real git worktrees, real pytest
subprocesses, real pre-commit, the real CLI. The container tier runs the same plan in podman."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import synthetic

from carry.series import store as seriesmod
from carry.series.store import Hook

try:  # tests/ on sys.path (rootdir conftest), or tests/ as a package
    from conftest import CommitBuilder, Result, git, run_carry
except ImportError:
    from tests.conftest import CommitBuilder, Result, git, run_carry


@dataclass
class Calc:
    up: CommitBuilder
    root: Path

    def validate(self, name: str, *args: str, env: dict[str, str] | None = None) -> Result:
        if not (self.root / name).exists():  # `carry import` fork/<name> on first use
            synthetic.import_series(self.root, self.up.path, name, name, sys.executable)
        return run_carry("validate", name, "--repo", str(self.up.path), "--engine", "local",
                         "--series-dir", str(self.root), *args, env=env)

    def report(self, name: str, *args: str) -> tuple[int, dict[str, Any]]:
        r = self.validate(name, *args, "--json")
        assert r.out, r.err
        return r.code, json.loads(r.out)

    def hooks(self, name: str, hooks: list[Hook]) -> None:
        synthetic.import_series(self.root, self.up.path, name, name, sys.executable, hooks)
        s = seriesmod.find(self.root, name)
        s.manifest.test.hooks = hooks
        seriesmod.save_manifest(s)


@pytest.fixture
def calc(tmp_path: Path) -> Calc:
    return Calc(synthetic.upstream_project(tmp_path / "calc"), tmp_path / "series")


def step(report: dict[str, Any], kind: str, index: int = 0) -> dict[str, Any]:
    return [s for s in report["steps"] if s["kind"] == kind][index]


def suites(report: dict[str, Any]) -> dict[str, tuple[int, int, int, int]]:
    return {s["suite"]: (s["passed"], s["failed"], s["skipped"], s["errors"])
            for s in report["tests"]["suites"]}


def test_pass_runs_the_plan_in_a_throwaway_worktree(calc: Calc) -> None:
    head_before = calc.up.rev("HEAD")
    code, r = calc.report("fix", "--onto", "v1")
    assert code == 0 and r["status"] == "passed" and r["exit_code"] == 0
    assert r["summary"] == "9 tests passed and 1 skipped across the three suites"
    assert suites(r) == {"tests/test_core.py": (4, 0, 0, 0), "tests/unit": (3, 0, 1, 0),
                         "tests/test_util.py": (2, 0, 0, 0)}
    assert r["changed"] == ["calc/core.py", "tests/test_core.py"]
    assert r["hook_notes"] == [] and r["cached"] is False and r["engine"] == "local"
    assert [(s["kind"], s["status"]) for s in r["steps"]] == [
        ("pytest", "passed"), ("hook", "passed"), ("hook", "passed"), ("diff-check", "passed")]
    assert step(r, "pytest")["command"].startswith(
        f"{sys.executable} -m pytest -q -p no:cacheprovider tests/test_core.py tests/unit "
        "tests/test_util.py --junitxml=")
    assert step(r, "hook", 0)["command"] == (
        "pre-commit run --files calc/core.py tests/test_core.py")
    assert step(r, "hook", 1)["command"] == (
        "pre-commit run typecheck-3.12 --hook-stage manual --files calc/core.py "
        "tests/test_core.py")
    # each step has its own log, under .git/carry/validate/<run>/
    run_dir = Path(r["run_dir"])
    assert run_dir.parent == calc.up.path / ".git" / "carry" / "validate"
    logs = {Path(s["log"]).name: Path(s["log"]).read_text() for s in r["steps"]}
    assert len(logs) == 4 and all(Path(s["log"]).parent == run_dir for s in r["steps"])
    hook_log = logs["03-hook-typecheck-3.12-stage-manual.log"]
    assert "typecheck (manual, CI-style)" in hook_log and "Passed" in hook_log
    assert "4 passed" not in logs["01-pytest.log"] and "9 passed, 1 skipped" in logs[
        "01-pytest.log"]
    assert json.loads((run_dir / "report.json").read_text())["cache_key"] == r["cache_key"]
    # the result is the series replayed onto v1: the fork branch's tree exactly
    assert r["head_tree"] == git(calc.up.path, "rev-parse", "fork/fix^{tree}")
    # the user's checkout and worktree list are untouched
    assert calc.up.rev("HEAD") == head_before
    assert git(calc.up.path, "status", "--porcelain") == ""
    assert len(git(calc.up.path, "worktree", "list").splitlines()) == 1


def test_a_failing_test_is_named_with_its_message(calc: Calc) -> None:
    r = calc.validate("broken", "--onto", "v1")
    assert r.code == 1, r.err
    assert ("FAILED tests/test_core.py::test_retained_keeps_three_states - "
            "assert [48, 64] == [32, 48, 64]") in r.out
    assert "tests/test_core.py: 3 passed, 1 failed, 0 skipped, 0 errors" in r.out
    assert "1 failed, 8 passed, 1 skipped across the three suites" in r.out
    assert "validation FAILED" in r.out


def test_a_failing_hook_and_whitespace_fail_the_validation(calc: Calc) -> None:
    code, r = calc.report("sloppy", "--onto", "v1")
    assert code == 1
    assert step(r, "pytest")["status"] == "passed"
    hook = step(r, "hook", 0)
    assert hook["status"] == "failed" and hook["returncode"] == 1
    assert "calc/core.py: contains a tab" in Path(hook["log"]).read_text()
    assert step(r, "hook", 1)["status"] == "passed"
    diff = step(r, "diff-check")
    assert diff["status"] == "failed"
    assert "calc/core.py:13: trailing whitespace." in Path(diff["log"]).read_text()


def test_a_hook_id_the_target_dropped_is_reported_by_name(calc: Calc) -> None:
    calc.hooks("fix", [Hook(), Hook(id="typecheck-3.12", stage="manual")])
    code, r = calc.report("fix", "--onto", "v2")
    assert code == 1 and r["status"] == "failed"
    missing = step(r, "hook", 1)
    assert missing["status"] == "missing" and missing["returncode"] is None
    assert missing["note"] == ("hook id 'typecheck-3.12' is not defined by the target "
                               "(defined: no-tabs, spdx, typecheck)")
    # everything else still ran and passed
    assert [s["status"] for s in r["steps"]] == ["passed", "passed", "missing", "passed"]


def test_a_declared_fallback_is_used_and_said(calc: Calc) -> None:
    r = calc.validate("fix", "--onto", "v2")
    assert r.code == 0, r.out + r.err
    assert ("pre-commit run typecheck --hook-stage manual --files calc/core.py "
            "tests/test_core.py") in r.out
    assert ("hook id 'typecheck-3.12' is not defined by the target; used the declared "
            "fallback 'typecheck'") in r.out


def test_baseline_proves_the_new_test_fails_without_the_fix(calc: Calc) -> None:
    code, r = calc.report("fix", "--onto", "v1", "--baseline")
    assert code == 0, r
    b = r["baseline"]
    assert b["proven"] == [
        "tests/test_core.py::test_retained_keeps_the_state_below_the_last_boundary"]
    assert b["passes_without_fix"] == [] and not b["flagged"]
    assert b["files"] == ["tests/test_core.py"]
    assert b["summary"] == "1 failed, 3 passed in the one test module"
    # the baseline is v1's tree plus the series' test file only, built without a worktree
    v1 = calc.up.rev("v1")
    assert git(calc.up.path, "rev-parse", f"{b['commit']}^") == v1
    assert git(calc.up.path, "diff", "--name-only", v1, b["commit"]) == "tests/test_core.py"
    assert git(calc.up.path, "show", f"{b['commit']}:calc/core.py") == git(
        calc.up.path, "show", "v1:calc/core.py")
    assert step(r, "baseline")["command"].startswith(
        f"{sys.executable} -m pytest -q -p no:cacheprovider --continue-on-collection-errors "
        "tests/test_core.py --junitxml=")
    assert len(git(calc.up.path, "worktree", "list").splitlines()) == 1


def test_baseline_flags_tests_that_pass_without_the_fix(calc: Calc) -> None:
    r = calc.validate("weak", "--onto", "v1", "--baseline")
    assert r.code == 1
    assert ("new test passes without the fix: "
            "tests/test_core.py::test_retained_keeps_the_last_boundary") in r.out
    assert "FLAGGED: no test of the series fails without the fix" in r.out
    assert "4 tests passed in the one test module" in r.out


def test_an_unchanged_input_is_answered_from_the_cache(calc: Calc) -> None:
    first = calc.validate("fix", "--onto", "v1")
    assert first.code == 0 and "validation passed in" in first.out
    runs = calc.up.path / ".git" / "carry" / "validate"
    dirs = sorted(p for p in runs.iterdir() if p.is_dir() and p.name != "cache")
    objects = git(calc.up.path, "count-objects")
    again = calc.validate("fix", "--onto", "v1")
    assert again.code == 0
    # found from the series' content and the onto commit: no replay wrote a single commit
    assert git(calc.up.path, "count-objects") == objects
    assert "[cached]" in again.out and "nothing ran" in again.out
    steps = [ln for ln in again.out.splitlines() if ln.startswith("  [ok] ")]
    assert steps and not any(re.search(r"\(\d+\.\ds\)", ln) for ln in steps)  # no durations
    assert any(re.search(r"\(\d+\.\ds\)", ln) for ln in first.out.splitlines())
    assert "9 tests passed and 1 skipped across the three suites" in again.out
    # --commit on the fork branch is the same tree, plan and interpreter: the same entry
    code, by_commit = calc.report("fix", "--commit", "fork/fix")
    assert code == 0 and by_commit["cached"] and by_commit["cached_for"] == calc.up.rev("fork/fix")
    assert by_commit["onto"] == calc.up.rev("v1")
    assert sorted(p for p in runs.iterdir() if p.is_dir() and p.name != "cache") == dirs
    fresh = calc.validate("fix", "--onto", "v1", "--no-cache")
    assert fresh.code == 0 and "[cached]" not in fresh.out
    assert len([p for p in runs.iterdir() if p.is_dir() and p.name != "cache"]) == len(dirs) + 1


def test_bad_input_exits_2_with_one_line(calc: Calc, tmp_path: Path) -> None:
    cases = {
        (): "give --onto REF (build the series on it) or --commit C (validate C)",
        ("--onto", "no-such-ref"): "unknown revision 'no-such-ref'",
        ("--onto", "v1", "--engine", "lxc"): "unknown engine 'lxc'",
        ("--onto", "v1", "--python", str(tmp_path / "nope")): "not found on this machine",
    }
    for args, message in cases.items():
        r = calc.validate("fix", *args)
        assert r.code == 2 and message in r.err, (args, r.err)
        assert len(r.err.strip().splitlines()) == 1
    r = run_carry("validate", "nope", "--repo", str(calc.up.path), "--onto", "v1",
                  "--series-dir", str(calc.root))
    assert r.code == 2 and "unknown series 'nope'" in r.err


def _set_image(calc: Calc, image: str) -> None:
    synthetic.import_series(calc.root, calc.up.path, "fix", "fix", sys.executable)
    s = seriesmod.find(calc.root, "fix")
    s.manifest.test.image = image
    seriesmod.save_manifest(s)


def test_container_engines_refuse_an_image_without_a_digest(calc: Calc) -> None:
    _set_image(calc, "voipmonitor/vllm:latest")
    for engine in ("podman", "docker"):
        r = calc.validate("fix", "--onto", "v1", "--engine", engine)
        assert r.code == 2
        assert r.err.strip() == (
            "carry: error: image 'voipmonitor/vllm:latest' is not pinned by digest; carry runs "
            "container images by digest only (hint: write [test].image as "
            "NAME@sha256:<64 hex digits>)")


PINNED = "localhost/carry-test@sha256:" + "ab" * 32


def test_an_engine_that_is_not_installed(calc: Calc, tmp_path: Path) -> None:
    _set_image(calc, PINNED)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    r = calc.validate("fix", "--onto", "v1", "--engine", "podman", "--no-cache",
                      env={"PATH": str(bin_dir)})
    assert r.code == 2
    assert r.err.strip() == ("carry: error: podman is not installed (not found on PATH) "
                             "(hint: apt-get install podman runc (see "
                             "ci/container/setup-podman.sh))")


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker client on this machine")
def test_a_docker_daemon_that_is_not_running(calc: Calc, tmp_path: Path) -> None:
    _set_image(calc, PINNED)
    sock = tmp_path / "no-dockerd.sock"
    r = calc.validate("fix", "--onto", "v1", "--engine", "docker",
                      env={"DOCKER_HOST": f"unix://{sock}"})
    assert r.code == 2
    line = r.err.strip()
    assert line.startswith(f"carry: error: the docker daemon is not running at unix://{sock}")
    assert line.endswith("(hint: start it (e.g. systemctl start docker), or use --engine "
                         "podman / --engine local)")
    assert len(line.splitlines()) == 1
    assert not os.path.exists(sock)


def test_a_checkout_a_killed_validation_left_is_removed_by_the_next(calc: Calc,
                                                                      tmp_path: Path) -> None:
    import subprocess

    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = tmpdir / f"carry-validate-{dead.pid}-abc"
    git(calc.up.path, "worktree", "add", "--detach", str(left / "head"), "v1")
    live = tmpdir / f"carry-validate-{os.getpid()}-xyz"  # a running maker's: kept
    live.mkdir()
    r = calc.validate("fix", "--onto", "v1", "--no-cache", env={"TMPDIR": str(tmpdir)})
    assert r.code == 0, r.err
    assert not left.exists() and live.exists()
    assert str(left) not in git(calc.up.path, "worktree", "list")
    assert [p.name for p in tmpdir.iterdir()] == [live.name]  # its own checkout went too
