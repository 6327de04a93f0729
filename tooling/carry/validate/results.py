"""What a validation found: per-step results, per-suite counts from JUnit XML, the report.

The report is the one record of a run: the CLI prints it, `--json` dumps it, the cache stores
it, and a PR body can quote its commands and counts, which are exactly what ran.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
OTHER = "(outside the planned suites)"


class Status(StrEnum):
    """A step's or a whole run's outcome. A StrEnum: the JSON and the cache keep the words."""

    PASSED = "passed"
    FAILED = "failed"
    MISSING = "missing"  # a hook the plan names that the tree's config does not have
    SKIPPED = "skipped"  # pytest when the requirements did not install
    NOT_INSTALLED = "not-installed"  # a hook environment pre-commit could not install


class StepKind(StrEnum):
    """What a step runs."""

    INSTALL = "install"
    PYTEST = "pytest"
    HOOK = "hook"
    DIFF_CHECK = "diff-check"
    BASELINE = "baseline"


class Outcome(StrEnum):
    """One test's outcome, as its JUnit entry says."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"

    @property
    def bad(self) -> bool:
        return self in (Outcome.FAILED, Outcome.ERROR)


def number_word(n: int) -> str:
    """#643 spells small counts of things ("the six suites") and gives test counts as digits."""
    return _WORDS[n] if 0 <= n < len(_WORDS) else str(n)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@dataclass
class SuiteCounts:
    suite: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    errors: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped + self.errors


@dataclass
class Failure:
    test: str  # pytest's node id, e.g. tests/test_core.py::TestX::test_y[1]
    kind: Outcome  # FAILED | ERROR
    message: str


@dataclass
class TestRun:
    """One pytest run, read back from its JUnit XML."""

    suites: list[SuiteCounts] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # node id -> its outcome

    def totals(self) -> SuiteCounts:
        t = SuiteCounts("all")
        for s in self.suites:
            t.passed += s.passed
            t.failed += s.failed
            t.skipped += s.skipped
            t.errors += s.errors
        return t


def node_id(classname: str, name: str, is_file: Callable[[str], bool]) -> str:
    """Rebuild pytest's node id from JUnit's dotted classname, using the files in the tree to
    tell modules from classes (`tests.unit.test_a.TestX` may be a module or a class)."""
    if not classname:  # a collection error: the name is the dotted module
        parts, rest = name.split("."), []
    else:
        parts, rest = classname.split("."), [name]
    for i in range(len(parts), 0, -1):
        path = "/".join(parts[:i]) + ".py"
        if is_file(path):
            return "::".join([path, *parts[i:], *rest])
    return "::".join([p for p in (classname, name) if p])


def suite_of(test: str, suites: Sequence[str]) -> str:
    path = test.split("::", 1)[0]
    for s in suites:
        base = s.split("::", 1)[0].rstrip("/")
        if path == base or path.startswith(base + "/"):
            return s
    return OTHER


def parse_junit(xml: Path, suites: Sequence[str], tree: Path) -> TestRun:
    """Counts per planned suite, plus every failure's node id and message (junitparser)."""
    from junitparser import Error, JUnitXml, Skipped, TestSuite
    from junitparser import Failure as JFailure

    doc = JUnitXml.fromfile(str(xml))
    groups = [doc] if isinstance(doc, TestSuite) else list(doc)
    counts = {s: SuiteCounts(s) for s in suites}
    run = TestRun()

    def is_file(p: str) -> bool:
        return (tree / p).is_file()

    for group in groups:
        for case in group:
            test = node_id(case.classname or "", case.name or "", is_file)
            suite = suite_of(test, suites)
            c = counts.setdefault(suite, SuiteCounts(suite))
            results = list(case.result)
            bad = next((r for r in results if isinstance(r, Error | JFailure)), None)
            if bad is not None:
                kind = Outcome.ERROR if isinstance(bad, Error) else Outcome.FAILED
                if kind is Outcome.ERROR:
                    c.errors += 1
                else:
                    c.failed += 1
                message = (bad.message or bad.text or "").strip()
                if not case.classname:  # a module that did not collect: say why, not that
                    message = _collection_error(bad.text or "") or message
                run.failures.append(Failure(test, kind, message.splitlines()[0] if message
                                            else ""))
                # pytest reports a teardown error as a second entry for a test that passed
                if run.outcomes.get(test) in (None, Outcome.PASSED):
                    run.outcomes[test] = kind
            elif any(isinstance(r, Skipped) for r in results):
                c.skipped += 1
                run.outcomes.setdefault(test, Outcome.SKIPPED)
            else:
                c.passed += 1
                run.outcomes.setdefault(test, Outcome.PASSED)
    run.suites = [c for c in counts.values() if c.suite != OTHER or c.total]
    return run


def _collection_error(text: str) -> str:
    """pytest's reason a module did not collect (`E   ModuleNotFoundError: ...`)."""
    said = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ") and ln[1:].strip()]
    # its own temporary checkout's path says nothing to the reader: `(/tmp/.../core.py)`
    return re.sub(r" \(/[^()]*\)$", "", said[-1]) if said else ""


def summary_line(run: TestRun | None, planned: int, noun: str = "suite") -> str:
    """#643's form: "382 tests passed across the six suites"; failures lead, as in pytest."""
    where = (f"in the one {noun}" if planned == 1
             else f"across the {number_word(planned)} {noun}s")
    if run is None:
        return f"no test results {where}"
    t = run.totals()
    if t.total == 0:
        return f"no tests ran {where}"
    if not t.failed and not t.errors:
        head = _plural(t.passed, "test") + " passed"
        return f"{head} and {t.skipped} skipped {where}" if t.skipped else f"{head} {where}"
    parts = [f"{t.failed} failed"] if t.failed else []
    parts.append(f"{t.passed} passed")
    if t.errors:
        parts.append(_plural(t.errors, "error"))
    if t.skipped:
        parts.append(f"{t.skipped} skipped")
    return f"{', '.join(parts)} {where}"


@dataclass
class StepResult:
    kind: StepKind
    name: str
    command: str
    status: Status
    returncode: int | None = None
    seconds: float = 0.0
    log: str = ""
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.status is Status.PASSED


@dataclass
class Baseline:
    """The fail-before proof: the series' test changes alone, on the unfixed base."""

    commit: str  # the overlay commit: onto's tree plus the series' test files
    files: list[str]  # the test files overlaid
    run: TestRun | None
    summary: str
    proven: list[str]  # fail without the fix, pass with it
    passes_without_fix: list[str]  # new tests that already pass on the unfixed base
    fails_with_fix: list[str]  # fail on both trees
    flagged: bool
    note: str = ""
    # "MODULE did not import on the unfixed base (why): ...": none of its tests is proof
    import_errors: list[str] = field(default_factory=list)


@dataclass
class Report:
    series: str
    version: int
    onto_ref: str
    onto: str
    head: str
    head_tree: str
    engine: str
    image: str
    python: str
    changed: list[str]
    steps: list[StepResult]
    tests: TestRun | None
    suites: list[str]
    summary: str
    status: Status  # PASSED | FAILED
    cache_key: str
    run_dir: str
    started: str
    seconds: float
    hook_notes: list[str] = field(default_factory=list)
    baseline: Baseline | None = None
    cached: bool = False
    cached_for: str = ""  # on a cache hit: this run's result commit, with the same tree
    resolved: list[str] = field(default_factory=list)  # "FILE: why", by recorded resolutions
    audit: list[str] = field(default_factory=list)  # replay.audit: what clean patches break

    @property
    def exit_code(self) -> int:
        return 0 if self.status is Status.PASSED else 1

    @classmethod
    def from_data(cls, d: dict[str, Any]) -> Report:
        """A report read back (the cache): every field of its type, or BadData."""
        from carry.base import untrusted

        return untrusted.build(cls, d, "report", strict=True)
