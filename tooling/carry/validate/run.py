"""One validation: build the series on the target, check it out, run the plan, report.

The result is checked out into a throw-away worktree (the user's checkout is never touched);
the baseline tree is built in a private index from the onto commit plus the series' test
files only. Every step writes its own log under `.git/carry/validate/<run>/`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from carry.base import atomic, scratch
from carry.base.data import to_data
from carry.base.errors import CarryError, ValidationFailed
from carry.git import Repo
from carry.series.store import Series
from carry.validate import cache, engines, plan
from carry.validate.baseline import baseline_commit
from carry.validate.results import (
    Baseline,
    Report,
    StepResult,
    TestRun,
    parse_junit,
    summary_line,
)

# A fixed identity for the commits validate makes itself, so equal inputs give equal commits.
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Target:
    """What is validated: the series' result `head`, built on `onto`."""

    onto_ref: str
    onto: str
    head: str
    resolved: tuple[str, ...] = ()  # "FILE: why", the patches a recorded resolution resolved
    audit: tuple[str, ...] = ()  # replay.audit: what the clean patches break at the result


def validate_dir(repo: Repo) -> Path:
    return repo.carry_dir() / "validate"


def last_report_path(repo: Repo, name: str) -> Path:
    """The newest report of a series in this repository, for `carry pr` to quote."""
    return validate_dir(repo) / f"last-{name}.json"


def resolve_target(series: Series, repo: Repo, onto: str | None, commit: str | None) -> Target:
    """--onto builds the series as `carry rebase` would; --commit takes a built result whose
    last N commits are the series (N patches), or `--commit BASE..C` when C holds more."""
    if onto and commit:
        raise CarryError("give --onto REF or --commit C, not both",
                         hint="--onto builds the series on REF; --commit BASE..C validates a "
                              "built C on BASE")
    if not onto and not commit:
        raise CarryError("give --onto REF (build the series on it) or --commit C (validate C)")
    if commit:
        onto, _, commit = commit.rpartition("..") if ".." in commit else ("", "", commit)
        head = repo.rev_parse(commit or "HEAD")
        if onto:
            base = repo.rev_parse(onto)
        else:
            n = len(series.patches())
            if n == 0:
                raise CarryError(f"series {series.name} has no patches",
                                 hint="pass --onto BASE with --commit")
            base = repo.rev_parse(f"{head}~{n}")
        if not repo.is_ancestor(base, head):
            raise CarryError(f"{onto or base[:12]} is not an ancestor of {commit}")
        return Target(onto or f"{commit}~{len(series.patches())}", base, head)
    assert onto is not None
    onto_sha = repo.rev_parse(onto)
    return Target(onto, onto_sha, *_build(series, repo, onto_sha))


def _build(series: Series, repo: Repo,
           onto: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """The series replayed as `carry rebase` would, with no ref, state or worktree written."""
    from carry.replay.engine import replay

    if not series.patches():
        raise CarryError(f"series {series.name} has no patches yet", hint="run carry import")
    result = replay(series, repo, onto)
    if result.status != "applied":
        where = f" at {result.conflict.file}" if result.conflict else ""
        raise ValidationFailed(
            f"series {series.name} does not replay onto {onto[:12]}: {result.status}{where}"
            + (f" ({result.message})" if result.message else ""),
            hint=f"carry rebase {series.name} --onto {onto[:12]} resolves it; "
                 "then validate --commit")
    return result.head, tuple(f"{p.file}: {p.reason}" for p in result.patches
                              if p.resolutions), tuple(f.line for f in result.audit)


WORKTREE_STEM = "carry-validate-"


@contextmanager
def _worktrees(repo: Repo, commits: dict[str, str]) -> Iterator[dict[str, Repo]]:
    """Throw-away checkouts, named for this process: a validation killed with -9 leaves a
    whole checkout behind, which the next validation removes (and unregisters)."""
    scratch.sweep(Path(tempfile.gettempdir()), WORKTREE_STEM)
    repo.worktree_prune()  # also forgets checkouts a dead validation of this repo left
    tmp = Path(tempfile.mkdtemp(prefix=scratch.prefix(WORKTREE_STEM)))
    made: dict[str, Repo] = {}
    try:
        for name, commit in commits.items():
            made[name] = repo.worktree_add(tmp / name, commit)
        yield made
    finally:
        for name in made:
            repo.worktree_remove(tmp / name)
        shutil.rmtree(tmp, ignore_errors=True)


def run(
    series: Series,
    repo: Repo,
    onto: str | None,
    commit: str | None,
    engine_name: str = "local",
    python: str | None = None,
    baseline: bool = False,
    use_cache: bool = True,
    progress: Progress | None = None,
    allow_no_tests: bool = False,
    record: bool = True,  # False: a side run (the CI's upstream check) is not the last report
) -> Report:
    tp = series.manifest.test
    if not (tp.suites or tp.hooks or tp.diff_check):
        raise CarryError(f"series {series.name} has no test plan", hint="fill in its [test] table")
    plan.check(tp)
    engine = engines.make(engine_name, tp.image, python or tp.python)
    if engine_name == "local":
        engine.check()  # a missing interpreter is bad input even when a report is cached
    inputs = {"plan": to_data(tp), "python": engine.python, "engine": engine.identity(),
              **({"allow_no_tests": True} if allow_no_tests else {})}
    store = validate_dir(repo) / "cache"
    early = _early_key(series, repo, onto, baseline, inputs) if onto and not commit else ""
    if use_cache and early:
        hit = cache.follow(store, early)
        if hit is not None:
            return _answer(repo, series, hit, hit.get("head", ""), record=record)
    t = resolve_target(series, repo, onto, commit)
    started = time.monotonic()
    changed = repo.changed_files(t.onto, t.head)
    test_files = [p for p in repo.changed_files(t.onto, t.head, deleted=True)
                  if plan.is_test_file(p, tp.suites)]
    modules = [p for p in test_files
               if p in changed and plan.is_test_module(p) and _in_suites(p, tp.suites)]
    base_commit = baseline_commit(repo, t.onto, t.head, test_files) if baseline else ""
    head_tree = repo.rev_parse(t.head, "tree")
    key = cache.key({
        "head_tree": head_tree, "onto_tree": repo.rev_parse(t.onto, "tree"),
        "baseline_tree": repo.rev_parse(base_commit, "tree") if base_commit else None,
        **inputs,
    })
    if use_cache:
        hit = cache.load(store, key)
        if hit is not None:
            if early:
                cache.link(store, early, key)
            return _answer(repo, series, hit, t.head, list(t.resolved), record, list(t.audit))
    engine.check()
    stamp = dt.datetime.now(dt.UTC)
    validate_dir(repo).mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(  # unique even for two runs of one head in one second
        prefix=f"{stamp:%Y%m%d-%H%M%S}-{series.name}-{t.head[:12]}-", dir=validate_dir(repo)))
    run_dir.chmod(0o755)
    config = plan.read_hook_config(repo.show_file(t.head, plan.PRECOMMIT_CONFIG))
    decisions = plan.resolve_hooks(tp.hooks, config)
    resolved = plan.build(tp, engine.python, changed, decisions, str(run_dir / "pytest.xml"),
                          (t.onto, t.head),
                          (modules, str(run_dir / "baseline.xml")) if baseline else None)
    trees = {"head": t.head, **({"baseline": base_commit} if base_commit else {})}
    with _worktrees(repo, trees) as wts:
        mounts = [engines.Mount(wts["head"].path.parent), engines.Mount(run_dir)]
        mounts += [engines.Mount(w.git_dir) for w in wts.values()]
        mounts.append(engines.Mount(repo.common_dir, read_only=True))
        mounts.sort(key=lambda m: len(m.path.parts))
        with engine.session(mounts) as session:
            results = _run_steps(resolved, session, wts, repo, t, run_dir, progress)
        tests = _parse(run_dir / "pytest.xml", tp.suites, wts["head"].path)
        base = None
        if baseline:
            base = _baseline(repo, t, base_commit, test_files, modules, tests,
                             _parse(run_dir / "baseline.xml", modules, wts["baseline"].path))
    ok = all(r.ok for r in results) and not (base and base.flagged)
    summary = summary_line(tests, len(tp.suites)) if tp.suites else (
        "no tests ran: the plan names no suites" + (
            " (accepted with --allow-no-tests)" if allow_no_tests
            else "; add [test].suites, or pass --allow-no-tests"))
    ok = ok and (bool(tp.suites) or allow_no_tests)
    report = Report(
        series=series.name, version=series.manifest.version, onto_ref=t.onto_ref, onto=t.onto,
        head=t.head, head_tree=head_tree, engine=engine.name,
        image=tp.image if engine.name != "local" else "", python=engine.python,
        changed=changed, steps=results, tests=tests, suites=list(tp.suites),
        summary=summary,
        status="passed" if ok else "failed", cache_key=key, run_dir=str(run_dir),
        started=stamp.isoformat(timespec="seconds"),
        seconds=round(time.monotonic() - started, 3),
        hook_notes=[d.note for d in decisions if d.note], baseline=base,
        resolved=list(t.resolved), audit=list(t.audit),
    )
    data = to_data(report)
    atomic.write_json(run_dir / "report.json", data)
    if record:
        atomic.write_json(last_report_path(repo, series.name), data)
    if not any(r.kind == "install" and not r.ok for r in results):
        cache.store(store, key, data)  # a failed install is the network's, not the series'
        if early:
            cache.link(store, early, key)
    return report


def _early_key(series: Series, repo: Repo, onto: str, baseline: bool,
               inputs: dict[str, Any]) -> str:
    """What a `--onto` result depends on, known before any replay: the series' content on its
    base (the chain's key), the onto commit, what drop detection reads from the manifest, and
    the plan and engine. A hit answers without building the series: cost follows the series'
    size, not the repository's."""
    from carry.replay.chain import chain_key, series_base
    from carry.series.store import read_resolutions

    m = series.manifest
    files = [(f.number, f.name, f.read()) for f in series.patches()]
    recorded = sorted((n, hashlib.sha256(d).hexdigest())
                      for n, d in read_resolutions(series.root).items())
    return cache.key({"chain": chain_key(series_base(series, repo), files),
                      "onto": repo.rev_parse(onto), "baseline": baseline,
                      "drops": [to_data(m.provenance), m.upstream.repo], **inputs,
                      **({"resolutions": recorded} if recorded else {})})


def _answer(repo: Repo, series: Series, hit: dict[str, Any], head: str,
            resolved: list[str] | None = None, record: bool = True,
            audit: list[str] | None = None) -> Report:
    report = Report.from_data(hit)
    if resolved is not None:  # how this build got its tree, which another run may share
        report.resolved = resolved
        report.audit = audit or []
    # the record of what ran stays; today's commit may differ only in its dates
    report.cached, report.cached_for = True, head
    # another series with the same plan may have filled the entry: this is its run now
    report.series, report.version = series.name, series.manifest.version
    if record:  # recorded as a fresh run is, so `carry pr` quotes it
        atomic.write_json(last_report_path(repo, series.name), to_data(report))
    return report


def _in_suites(path: str, suites: list[str]) -> bool:
    return any(path == s.split("::", 1)[0].rstrip("/")
               or path.startswith(s.split("::", 1)[0].rstrip("/") + "/") for s in suites)


def _parse(xml: Path, suites: list[str], tree: Path) -> TestRun | None:
    if not xml.exists():
        return None
    try:
        return parse_junit(xml, suites, tree)
    except Exception as exc:  # a truncated file from a killed run: report it, don't crash
        raise CarryError(f"cannot read the JUnit XML {xml}: {exc}") from None


def _run_steps(resolved: plan.Resolved, session: engines.Session, wts: dict[str, Repo],
               repo: Repo, t: Target, run_dir: Path, progress: Progress | None,
               ) -> list[StepResult]:
    results: list[StepResult] = []
    installed = True
    n = len(resolved.steps)
    for i, step in enumerate(resolved.steps, 1):
        if progress:
            progress(i, n, step.name)
        log = run_dir / f"{i:02d}-{_SLUG.sub('-', step.name).strip('-')}.log"
        r = StepResult(step.kind, step.name, step.command, "passed", log=str(log))
        began = time.monotonic()
        if step.kind == "diff-check":
            clean, out = repo.diff_check(t.onto, t.head)
            atomic.write_bytes(log, f"$ git diff --check {t.onto} {t.head}\n".encode() + out)
            r.status, r.returncode = ("passed", 0) if clean else ("failed", 2)
            if not clean:
                r.note = "whitespace errors; see the log"
        elif step.kind == "hook" and step.hook is not None and step.hook.missing:
            atomic.write_text(log, step.hook.note + "\n")
            r.status, r.note, r.log = "missing", step.hook.note, str(log)
        elif step.kind in ("pytest", "baseline") and not installed:
            r.status, r.note, r.log = "skipped", "the requirements did not install", ""
        else:
            rc = session.run(step.argv, wts[step.tree].path, log)
            r.returncode = rc
            r.status = "passed" if rc == 0 else "failed"
            if step.hook is not None and step.hook.fallback_used:
                r.note = step.hook.note
            if step.kind == "install" and rc != 0:
                installed = False
            started = _junit_written(step.argv)
            _scrub_junit(step.argv)
            if step.kind in ("pytest", "baseline") and rc not in (0, 1):
                r.note = _PYTEST_EXIT.get(rc, f"pytest exited {rc}")
            if step.kind in ("pytest", "baseline") and not started:
                r.status, r.note = "failed", f"pytest did not start: {_reason(log)}"
            elif step.kind == "baseline" and rc in (0, 1):
                r.status, r.note = "passed", "failures here are the point: see the baseline"
            if r.status == "failed" and not r.note:
                r.note = _reason(log)
        r.seconds = round(time.monotonic() - began, 3)
        results.append(r)
    return results


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


def _reason(log: Path) -> str:
    """The last line of a failed step's log that says something, for its summary line."""
    try:
        lines = log.read_text("utf-8", "replace").splitlines()
    except OSError:
        return "see the log"
    said = [ln.strip(" =") for ln in lines if ln.strip(" =-")]
    return said[-1][:200] if said else "no output; see the log"


_PYTEST_EXIT = {2: "pytest was interrupted", 3: "pytest hit an internal error",
                4: "pytest usage error", 5: "pytest collected no tests"}


_DEF = re.compile(rb"^\s*(?:async\s+)?def\s+(\w+)", re.M)


def _def_names(text: bytes | None) -> set[str]:
    """The functions a file defines: a test whose name is not among them before is new."""
    return {m.decode() for m in _DEF.findall(text or b"")}


def _baseline(repo: Repo, t: Target, commit: str, files: list[str], modules: list[str],
              head: TestRun | None, base: TestRun | None) -> Baseline:
    """Which of the series' tests fail without the fix and pass with it."""
    if not modules:
        return Baseline(commit, files, None, "", [], [], [], True,
                        "the series changes no test module inside the planned suites")
    if base is None or head is None:
        which = "baseline" if base is None else "series' own"
        return Baseline(commit, files, base, "", [], [], [], True,
                        f"the {which} pytest run wrote no JUnit XML; see its log")
    before = {m: _def_names(repo.show_file(t.onto, m)) for m in modules}
    after = head.outcomes if head else {}
    proven: list[str] = []
    passes: list[str] = []
    both: list[str] = []
    for test, outcome in base.outcomes.items():
        if "::" not in test and outcome == "error":
            # The module did not even collect on the base (it imports what the fix adds):
            # each of its tests fails there, and is proven if it passes with the fix.
            mine = [h for h in after if h.split("::", 1)[0] == test]
            for h in mine:
                (proven if after[h] == "passed" else both).append(h)
            if not mine:
                both.append(test)
            continue
        module = test.split("::", 1)[0]
        func = test.split("::")[-1].split("[", 1)[0]
        new = func not in before.get(module, set())
        if outcome in ("failed", "error"):
            (proven if after.get(test) == "passed" else both).append(test)
        elif outcome == "passed" and new:
            passes.append(test)
    flagged = not proven
    note = ("no test of the series fails without the fix: its tests do not prove it"
            if flagged else "")
    return Baseline(commit, files, base, summary_line(base, len(modules), "test module"),
                    proven, passes, both, flagged, note)
