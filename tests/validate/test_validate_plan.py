"""The pure parts of validation: hook drift, node ids, the #643-style summary line."""

from __future__ import annotations

import pytest

from carry.base.errors import CarryError
from carry.series.store import Hook
from carry.series.store import TestPlan as Plan
from carry.validate import plan
from carry.validate.results import SuiteCounts, node_id, summary_line
from carry.validate.results import TestRun as Run

VLLM_031 = b"""
default_stages: [pre-commit, manual]
repos:
  - repo: https://github.com/astral-sh/ruff-pre-commit
    rev: v0.9.0
    hooks:
      - id: ruff
        args: [--fix]
  - repo: local
    hooks:
      - id: mypy-3.10
        entry: tools/mypy.sh 0 "local"
        language: python
        stages: [pre-commit]
      - id: mypy-3.12
        entry: tools/mypy.sh 1 "3.12"
        language: python
        stages: [manual]
      - id: signoff-commit
        entry: sh -c 'true'
        language: system
        stages: [commit-msg]
        alias: dco
"""
VLLM_032 = VLLM_031.replace(b"mypy-3.12", b"mypy").replace(b"id: mypy-3.10\n",
                                                          b"id: mypy-3.10-gone\n")


def test_hook_ids_stages_and_aliases_are_read_from_the_config() -> None:
    cfg = plan.read_hook_config(VLLM_031)
    assert cfg is not None
    assert cfg.ids() == ["dco", "mypy-3.10", "mypy-3.12", "ruff", "signoff-commit"]
    assert cfg.runs_at("ruff", "manual") and cfg.runs_at("ruff", "pre-commit")  # defaults
    assert cfg.runs_at("mypy-3.12", "manual") and not cfg.runs_at("mypy-3.12", "pre-commit")
    assert cfg.runs_at("dco", "commit-msg") and not cfg.runs_at("dco", "manual")
    assert plan.read_hook_config(None) is None
    with pytest.raises(CarryError, match="not valid YAML"):
        plan.read_hook_config(b"repos: [")


def test_a_legacy_stage_name_means_the_same_stage() -> None:
    cfg = plan.read_hook_config(b"repos:\n- repo: local\n  hooks:\n  - id: a\n"
                                b"    stages: [commit, push]\n")
    assert cfg is not None and cfg.runs_at("a", "pre-commit") and cfg.runs_at("a", "pre-push")
    no_defaults = plan.read_hook_config(b"repos:\n- repo: local\n  hooks:\n  - id: b\n")
    assert no_defaults is not None and no_defaults.runs_at("b", "manual")


def test_vllm_032_drift_mypy_312_uses_the_fallback_or_is_named_missing() -> None:
    new = plan.read_hook_config(VLLM_032)
    with_fallback, without, whole, wrong_stage = plan.resolve_hooks([
        Hook(id="mypy-3.12", stage="manual", fallback="mypy"),
        Hook(id="mypy-3.12", stage="manual"),
        Hook(),
        Hook(id="signoff-commit", stage="manual"),
    ], new)
    assert (with_fallback.run_id, with_fallback.fallback_used, with_fallback.missing) == (
        "mypy", True, False)
    assert with_fallback.note == ("hook id 'mypy-3.12' is not defined by the target; "
                                  "used the declared fallback 'mypy'")
    assert without.missing and without.note == (
        "hook id 'mypy-3.12' is not defined by the target "
        "(defined: dco, mypy, mypy-3.10-gone, ruff, signoff-commit)")
    assert whole == plan.HookDecision("", "", "")
    assert wrong_stage.missing
    assert wrong_stage.note.startswith("hook 'signoff-commit' does not run at stage 'manual'")
    old = plan.resolve_hooks([Hook(id="mypy-3.12", stage="manual", fallback="mypy")],
                             plan.read_hook_config(VLLM_031))
    assert old[0].run_id == "mypy-3.12" and not old[0].fallback_used
    none = plan.resolve_hooks([Hook(id="ruff")], None)
    assert none[0].missing and "no .pre-commit-config.yaml" in none[0].note


def test_steps_are_laid_out_as_643_ran_them() -> None:
    tp = Plan(python="/opt/venv/bin/python", requirements=["tblib"],
                  suites=["tests/a.py", "tests/b"], hooks=[Hook(), Hook("mypy", "manual")])
    decisions = plan.resolve_hooks(tp.hooks, plan.read_hook_config(
        b"default_stages: [pre-commit, manual]\nrepos:\n- repo: local\n  hooks:\n  - id: mypy\n"))
    r = plan.build(tp, tp.python, ["x.py", "tests/a.py"], decisions, "/run/pytest.xml",
                   ("a" * 40, "b" * 40))
    assert [s.command for s in r.steps] == [
        "/opt/venv/bin/python -m pip install -q tblib",
        "/opt/venv/bin/python -m pytest -q -p no:cacheprovider tests/a.py tests/b "
        "--junitxml=/run/pytest.xml",
        "pre-commit run --files x.py tests/a.py",
        "pre-commit run mypy --hook-stage manual --files x.py tests/a.py",
        f"git diff --check {'a' * 12} {'b' * 12}",
    ]


def test_test_files_are_the_suites_and_test_shaped_paths() -> None:
    suites = ["tests/v1/core/test_prefix_caching.py", "tests/v1/core/prefix_cache"]
    assert plan.is_test_file("tests/v1/core/prefix_cache/helpers.py", suites)
    assert plan.is_test_file("tests/v1/kv_connector/unit/test_x.py", suites)
    assert plan.is_test_file("tests/conftest.py", suites)
    assert not plan.is_test_file("vllm/v1/core/kv_cache_coordinator.py", suites)
    assert plan.is_test_module("tests/v1/core/test_prefix_caching.py")
    assert not plan.is_test_module("tests/v1/core/prefix_cache/helpers.py")


def test_node_ids_are_rebuilt_with_the_tree_telling_modules_from_classes() -> None:
    files = {"tests/v1/core/test_prefix_caching.py", "tests/unit/test_a.py"}
    assert node_id("tests.v1.core.test_prefix_caching.TestReplay", "test_swa[64-32]",
                   files.__contains__) == (
        "tests/v1/core/test_prefix_caching.py::TestReplay::test_swa[64-32]")
    assert node_id("tests.unit.test_a", "test_x", files.__contains__) == (
        "tests/unit/test_a.py::test_x")
    assert node_id("", "tests.unit.test_a", files.__contains__) == "tests/unit/test_a.py"
    assert node_id("elsewhere.mod", "t", files.__contains__) == "elsewhere.mod::t"


@pytest.mark.parametrize(("counts", "planned", "line"), [
    ((382, 0, 0, 0), 6, "382 tests passed across the six suites"),
    ((1, 0, 0, 0), 1, "1 test passed in the one suite"),
    ((95, 2, 0, 0), 6, "2 failed, 95 passed across the six suites"),
    ((9, 0, 1, 0), 3, "9 tests passed and 1 skipped across the three suites"),
    ((8, 1, 1, 1), 12, "1 failed, 8 passed, 1 error, 1 skipped across the 12 suites"),
    ((0, 0, 0, 0), 2, "no tests ran across the two suites"),
])
def test_summary_line_has_643s_form(counts: tuple[int, int, int, int], planned: int,
                                    line: str) -> None:
    run = Run([SuiteCounts("s", *counts)])
    assert summary_line(run, planned) == line


def test_a_changed_file_named_like_an_option_reaches_pre_commit_as_a_file() -> None:
    """`--files --config=x.yaml` would make pre-commit read another config: such a path is
    given as ./NAME (the same file), every other path as it is."""
    tp = Plan(python="python", hooks=[Hook()])
    decisions = plan.resolve_hooks(tp.hooks, plan.read_hook_config(
        b"repos:\n- repo: local\n  hooks:\n  - id: h\n"))
    r = plan.build(tp, tp.python, ["--config=x.yaml", "-x", "a/-b.py"], decisions,
                   "/run/pytest.xml", ("a" * 40, "b" * 40))
    assert r.steps[0].argv == ("pre-commit", "run", "--files", "./--config=x.yaml", "./-x",
                               "a/-b.py")
