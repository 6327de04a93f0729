"""Running a resolved plan's steps in a session, one log each, and saying why each failed.

A failed step's line says why: pytest's closing line, a hook's last words (also when a declared
fallback ran), or, when pre-commit could not install a hook's environment (its hook repository
cannot be fetched offline), that it could not and why, with pre-commit's own log copied beside
the step's, read through the session, so a container's copy is kept too.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from carry.base import atomic
from carry.git import Repo
from carry.validate import engines, plan
from carry.validate.results import Status, StepKind, StepResult, TestRun

Progress = Callable[[int, int, str], None]
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_PYTEST_EXIT = {
    2: "pytest was interrupted",
    3: "pytest hit an internal error",
    4: "pytest usage error",
    5: "pytest collected no tests",
}
_PC_ENV = re.compile(r"^\[INFO\] (?:Initializing|Installing) environment for (.+?)\.?$", re.M)
_PC_ERROR = re.compile(r"^An (?:unexpected )?error has occurred: (.*)$", re.M)
_PC_LOG = re.compile(r"^Check the log at (/\S*pre-commit\.log)$", re.M)
_COPY = "import sys; sys.stdout.write(open(sys.argv[1], encoding='utf-8', errors='replace').read())"


def run_steps(
    resolved: plan.Resolved,
    session: engines.Session,
    wts: dict[str, Repo],
    repo: Repo,
    diff: tuple[str, str],
    run_dir: Path,
    progress: Progress | None,
) -> list[StepResult]:
    results: list[StepResult] = []
    installed = True
    n = len(resolved.steps)
    for i, step in enumerate(resolved.steps, 1):
        if progress:
            progress(i, n, step.name)
        log = run_dir / f"{i:02d}-{_SLUG.sub('-', step.name).strip('-')}.log"
        r = StepResult(step.kind, step.name, step.command, Status.PASSED, log=str(log))
        began = time.monotonic()
        if step.kind is StepKind.DIFF_CHECK:
            clean, out = repo.diff_check(*diff)
            atomic.write_bytes(log, f"$ git diff --check {diff[0]} {diff[1]}\n".encode() + out)
            r.status, r.returncode = (Status.PASSED, 0) if clean else (Status.FAILED, 2)
            if not clean:
                r.note = "whitespace errors; see the log"
        elif step.kind is StepKind.HOOK and step.hook is not None and step.hook.missing:
            atomic.write_text(log, step.hook.note + "\n")
            r.status, r.note, r.log = Status.MISSING, step.hook.note, str(log)
        elif step.kind in (StepKind.PYTEST, StepKind.BASELINE) and not installed:
            r.status, r.note, r.log = Status.SKIPPED, "the requirements did not install", ""
        else:
            rc = session.run(step.argv, wts[step.tree].path, log)
            r.returncode = rc
            r.status = Status.PASSED if rc == 0 else Status.FAILED
            if step.kind is StepKind.INSTALL and rc != 0:
                installed = False
            _judge(step, r, log)
            if step.kind is StepKind.HOOK and rc != 0:
                _hook_env(r, log, session, wts[step.tree].path, resolved.python)
        r.seconds = round(time.monotonic() - began, 3)
        results.append(r)
    return results


def _judge(step: plan.StepSpec, r: StepResult, log: Path) -> None:
    """The status and note of a step that ran, from its exit code, JUnit XML and log."""
    rc = r.returncode
    started = _junit_written(step.argv)
    _scrub_junit(step.argv)
    if step.kind in (StepKind.PYTEST, StepKind.BASELINE) and rc not in (0, 1):
        r.note = _PYTEST_EXIT.get(rc or 0, f"pytest exited {rc}")
    if step.kind in (StepKind.PYTEST, StepKind.BASELINE) and not started:
        r.status, r.note = Status.FAILED, f"pytest did not start: {reason(log)}"
    elif step.kind is StepKind.BASELINE and rc in (0, 1):
        r.status, r.note = Status.PASSED, "failures here are the point: see the baseline"
    if r.status is Status.FAILED and not r.note:
        r.note = reason(log)
    if step.hook is not None and step.hook.fallback_used:
        # the failure's reason first: the fallback is how it ran, not why it failed
        r.note = f"{r.note} ({step.hook.note})" if r.status is Status.FAILED else step.hook.note


def _hook_env(r: StepResult, log: Path, session: engines.Session, cwd: Path, python: str) -> None:
    """A hook step that died installing a hook's environment: one line saying so and why,
    pre-commit's own log kept beside the step's, and a status the cache does not keep."""
    try:
        text = log.read_text("utf-8", "replace")
    except OSError:
        return
    error = _PC_ERROR.search(text)
    envs = _PC_ENV.findall(text[: error.start()] if error else "")
    if error is None or not envs:
        return
    r.status = Status.NOT_INSTALLED
    r.note = f"the hook environment could not be installed: {envs[-1]}: {_why(text, error)}"
    found = _PC_LOG.search(text)
    if found:
        kept = log.with_name(log.stem + "-pre-commit.log")
        session.run([python, "-c", _COPY, found.group(1)], cwd, kept)
        r.note += f" (pre-commit's log: {kept.name})"


def _why(text: str, error: re.Match[str]) -> str:
    """The first line of what failed under pre-commit that says an error, else its error."""
    rest = text[error.end() :].splitlines()
    for ln in rest:
        s = ln.strip()
        if s.lower().startswith(("fatal:", "error:")) or s.startswith("ERROR"):
            return s[:200]
    return error.group(1)[:200]


def empty_suites(
    results: list[StepResult],
    tests: TestRun | None,
    suites: Sequence[str],
    allow_empty: Sequence[str],
) -> list[str]:
    """A planned suite that selected no test fails the pytest step, unless the plan allows it:
    a `-m` mark the suite does not carry otherwise passes with nothing run."""
    step = next((r for r in results if r.kind is StepKind.PYTEST), None)
    if step is None or tests is None:
        return []
    ran = {c.suite: c.total for c in tests.suites}
    empty = [s for s in suites if not ran.get(s) and s not in allow_empty]
    if empty:
        said = f"no test ran in {', '.join(empty)}"
        if step.status is Status.PASSED:
            step.status = Status.FAILED
            step.note = f"{said}; [test].allow_empty names a suite that may select none"
        else:
            step.note = f"{step.note}; {said}" if step.note else said
    return empty


def _junit_written(argv: Sequence[str]) -> bool:
    """A pytest step that wrote no JUnit XML never ran a test (`No module named pytest`)."""
    xml = next((a.removeprefix("--junitxml=") for a in argv if a.startswith("--junitxml=")), "")
    return not xml or Path(xml).is_file()


def _scrub_junit(argv: Sequence[str]) -> None:
    """The JUnit XML pytest wrote quotes the tests' failures: scrubbed like the log, before
    carry reads it."""
    xml = next((a.removeprefix("--junitxml=") for a in argv if a.startswith("--junitxml=")), "")
    if xml and Path(xml).is_file() and not Path(xml).is_symlink():
        atomic.write_bytes(Path(xml), Path(xml).read_bytes())


def reason(log: Path) -> str:
    """The last line of a failed step's log that says something, for its summary line."""
    try:
        lines = log.read_text("utf-8", "replace").splitlines()
    except OSError:
        return "see the log"
    said = [ln.strip(" =") for ln in lines if ln.strip(" =-")]
    return said[-1][:200] if said else "no output; see the log"
