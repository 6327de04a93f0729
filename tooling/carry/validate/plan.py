"""The manifest's test plan, resolved against one target tree.

A plan is written once, but targets drift: vLLM 0.32 replaced the `mypy-3.12` hook with a
single `mypy`. So the hook ids are checked against the target's own `.pre-commit-config.yaml`
before anything runs, and a declared fallback is used openly instead of failing late inside
pre-commit with "No hook with id".
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from carry.base.errors import CarryError
from carry.series.store import Hook, TestPlan
from carry.validate.results import StepKind

PRECOMMIT_CONFIG = ".pre-commit-config.yaml"
DEFAULT_STAGE = "pre-commit"
# pre-commit still accepts its pre-3.2 stage names; compare in the new spelling.
_LEGACY_STAGES = {"commit": "pre-commit", "merge-commit": "pre-merge-commit", "push": "pre-push"}
_TEST_MODULE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")
# [test].env names a variable every step sees, stored in the manifest and the cache key: never
# a credential, never what locates git's repository or carry's interpreter.
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|API_?KEY|"
                          r"ACCESS_?KEY|PRIVATE_?KEY|AUTH|COOKIE|SESSION", re.I)
_TOKEN_VALUE = re.compile(r"(ghp_|gho_|ghs_|ghu_|github_pat_|hf_|sk-|glpat-|xox[abp]-)\w{8}")
_RESERVED = re.compile(r"PATH|GIT_.*|PYTHONHOME|LD_PRELOAD|LD_LIBRARY_PATH")
_TEST_PATH = re.compile(r"(^|/)(tests?|testing)/|(^|/)conftest\.py$")


def _stage(name: str) -> str:
    return _LEGACY_STAGES.get(name, name)


@dataclass(frozen=True)
class HookConfig:
    """The hook ids (and aliases) a target defines, with the stages each one runs at.

    A hook with no stages of its own runs at the config's `default_stages`, or at every stage
    when there are none; `stages` is then None.
    """

    hooks: dict[str, frozenset[str] | None]

    def ids(self) -> list[str]:
        return sorted(self.hooks)

    def runs_at(self, hook_id: str, stage: str) -> bool:
        stages = self.hooks.get(hook_id, frozenset())
        return stages is None or _stage(stage) in stages


def read_hook_config(text: bytes | None) -> HookConfig | None:
    """Parse a `.pre-commit-config.yaml`; None when the target has none."""
    if text is None:
        return None
    import yaml

    try:
        doc: Any = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise CarryError(f"the target's {PRECOMMIT_CONFIG} is not valid YAML: "
                         f"{str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict):
        raise CarryError(f"the target's {PRECOMMIT_CONFIG} is not a mapping")
    defaults = doc.get("default_stages")
    default = frozenset(_stage(str(s)) for s in defaults) if defaults else None
    hooks: dict[str, frozenset[str] | None] = {}
    for repo in doc.get("repos") or []:
        if not isinstance(repo, dict):
            continue
        for hook in repo.get("hooks") or []:
            if not isinstance(hook, dict) or "id" not in hook:
                continue
            own = hook.get("stages")
            stages = frozenset(_stage(str(s)) for s in own) if own else default
            for name in (hook["id"], hook.get("alias")):
                if name:
                    prior = hooks.get(str(name), frozenset())
                    hooks[str(name)] = (None if stages is None or prior is None
                                        else prior | stages)
    return HookConfig(hooks)


@dataclass(frozen=True)
class HookDecision:
    """What one `[[test.hook]]` entry becomes on this target."""

    requested: str  # the plan's id; "" runs every hook of the stage
    stage: str
    run_id: str  # the id that runs: requested, or the fallback
    fallback_used: bool = False
    missing: bool = False
    available: tuple[str, ...] = ()
    note: str = ""

    @property
    def label(self) -> str:
        name = self.requested or "all hooks"
        if self.fallback_used:
            name += f" -> {self.run_id}"
        return f"{name} (stage {self.stage})" if self.stage else name


def resolve_hooks(hooks: Sequence[Hook], config: HookConfig | None) -> list[HookDecision]:
    out = []
    for h in hooks:
        stage = h.stage
        available = tuple(config.ids()) if config else ()
        if config is None:
            out.append(HookDecision(h.id, stage, h.id, missing=True, note=(
                f"the target has no {PRECOMMIT_CONFIG}, so no hook can run")))
            continue
        if not h.id:
            out.append(HookDecision("", stage, ""))
            continue
        at = stage or DEFAULT_STAGE
        if config.runs_at(h.id, at):
            out.append(HookDecision(h.id, stage, h.id))
            continue
        why = (f"hook id {h.id!r} is not defined by the target" if h.id not in config.hooks
               else f"hook {h.id!r} does not run at stage {at!r} on the target")
        if h.fallback and config.runs_at(h.fallback, at):
            out.append(HookDecision(h.id, stage, h.fallback, fallback_used=True,
                                    available=available,
                                    note=f"{why}; used the declared fallback {h.fallback!r}"))
            continue
        if h.fallback:
            why += f", nor is its fallback {h.fallback!r}"
        out.append(HookDecision(h.id, stage, h.id, missing=True, available=available,
                                note=f"{why} (defined: {', '.join(available) or 'none'})"))
    return out


def is_test_file(path: str, suites: Sequence[str]) -> bool:
    """Part of the tests: inside a planned suite, or shaped like a test file or directory."""
    for s in suites:
        s = s.split("::", 1)[0].rstrip("/")
        if path == s or path.startswith(s + "/"):
            return True
    return bool(_TEST_MODULE.search(path) or _TEST_PATH.search(path))


def is_test_module(path: str) -> bool:
    """A file pytest collects by default (`test_*.py`, `*_test.py`)."""
    return bool(_TEST_MODULE.search(path))


@dataclass(frozen=True)
class StepSpec:
    """One step, before it runs. `argv` is exactly what runs (in the worktree named by `tree`);
    an empty argv is a step carry does itself (the diff check) or cannot run (a missing hook)."""

    kind: StepKind
    name: str
    argv: tuple[str, ...]
    tree: str = "head"  # head | baseline
    hook: HookDecision | None = None
    display: str = ""

    @property
    def command(self) -> str:
        return self.display or shlex.join(self.argv)


@dataclass(frozen=True)
class Resolved:
    """The plan as it will run on this target."""

    python: str
    changed: tuple[str, ...]
    steps: tuple[StepSpec, ...]
    baseline_tests: tuple[str, ...] = ()
    hooks: tuple[HookDecision, ...] = field(default=())


def check(plan: TestPlan) -> None:
    """What of the plan becomes a value on pytest's or pre-commit's command line is never an
    option there: options go in `pytest_args`, and a suite `-p evil` or a hook `--config=x`
    is refused before anything runs."""
    for key, values in (("suites", plan.suites),
                        ("hook", [v for h in plan.hooks for v in (h.id, h.fallback)])):
        bad = next((v for v in values if v.startswith("-")), None)
        if bad is not None:
            raise CarryError(f"[test].{key} entry {bad!r} starts with '-': it would reach "
                             "the command line as an option",
                             hint="name a path or a hook id; pytest options go in "
                                  "[test].pytest_args")
    for suite in plan.suites:
        path = suite.split("::", 1)[0]
        if path.startswith("/") or ".." in path.split("/"):
            raise CarryError(f"[test].suites entry {suite!r} is outside the target tree",
                             hint="name the suite by its path inside the target, e.g. "
                                  "tests/test_x.py")
    stray = [s for s in plan.allow_empty if s not in plan.suites]
    if stray:
        raise CarryError(f"[test].allow_empty names {', '.join(stray)}, which is not in "
                         "[test].suites", hint="name suites exactly as [test].suites does")
    for name, value in plan.env.items():
        _check_env(name, value)


def _check_env(name: str, value: str) -> None:
    """A plan's variable is written in a manifest others read and keyed in the cache: one
    that looks like a credential is refused, by its name or its value, never printed."""
    from carry.base import redact

    why = ("is not a variable name" if not _ENV_NAME.fullmatch(name)
           else "looks like a secret; a plan never holds one" if _SECRET_NAME.search(name)
           or redact.credential(name, value) or _TOKEN_VALUE.search(value)
           else "is set by carry for every step" if _RESERVED.fullmatch(name) else "")
    if why:
        raise CarryError(f"[test].env {name!r} {why}",
                         hint="name only plain settings there (HF_HUB_OFFLINE = \"1\"); "
                              "steps never see carry's credentials")


def missing_suites(plan: TestPlan, exists: Callable[[str], bool]) -> list[str]:
    """The planned suites the target tree does not hold."""
    return [s for s in plan.suites if not exists(s.split("::", 1)[0].rstrip("/"))]


def _as_files(paths: Sequence[str]) -> list[str]:
    """Changed paths for `--files`: one named like an option is given as `./NAME`."""
    return [f"./{p}" if p.startswith("-") else p for p in paths]


def build(
    plan: TestPlan,
    python: str,
    changed: Sequence[str],
    hooks: Sequence[HookDecision],
    junit: str,
    diff_range: tuple[str, str],
    baseline: tuple[Sequence[str], str] | None = None,
) -> Resolved:
    """Lay out the steps in #643's order: install, pytest, hooks, `git diff --check`.

    `baseline` is (the test modules to run on the unfixed tree, its JUnit path) or None.
    """
    steps: list[StepSpec] = []
    if plan.requirements:
        steps.append(StepSpec(StepKind.INSTALL, "install",
                              (python, "-m", "pip", "install", "-q", *plan.requirements)))
    if plan.suites:
        steps.append(StepSpec(StepKind.PYTEST, "pytest", (
            python, "-m", "pytest", *plan.pytest_args, *plan.suites, f"--junitxml={junit}")))
    for d in hooks:
        argv: tuple[str, ...] = ()
        if not d.missing:
            argv = ("pre-commit", "run", *([d.run_id] if d.run_id else []),
                    *(["--hook-stage", d.stage] if d.stage else []), "--files",
                    *_as_files(changed))
        steps.append(StepSpec(StepKind.HOOK, f"hook {d.label}", argv, hook=d,
                              display="" if argv else f"pre-commit run {d.requested}"))
    if plan.diff_check:
        a, b = diff_range
        steps.append(StepSpec(StepKind.DIFF_CHECK, "git diff --check", (),
                              display=f"git diff --check {a[:12]} {b[:12]}"))
    tests: tuple[str, ...] = ()
    if baseline is not None:
        tests, xml = tuple(baseline[0]), baseline[1]
        if tests:
            # A module that imports what the fix adds cannot collect on the base; without this
            # flag pytest stops there and the series' other tests never run.
            steps.append(StepSpec(StepKind.BASELINE, "baseline pytest", (
                python, "-m", "pytest", *plan.pytest_args, "--continue-on-collection-errors",
                *tests, f"--junitxml={xml}"),
                tree="baseline"))
    return Resolved(python, tuple(changed), tuple(steps), tests, tuple(hooks))
