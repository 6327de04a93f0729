"""One validation: build the series on the target, check it out, run the plan, report.

The result is checked out into a throw-away worktree (the user's checkout is never touched);
the baseline tree is built in a private index from the onto commit plus the series' test
files only. Every step writes its own log under `.git/carry/validate/<run>/`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from carry.base import atomic, scratch
from carry.base.data import to_data
from carry.base.errors import CarryError, ValidationFailed
from carry.git import Repo
from carry.series.store import Series
from carry.validate import baseline as proof
from carry.validate import cache, engines, plan, steps
from carry.validate.results import (
    Report,
    Status,
    StepKind,
    TestRun,
    parse_junit,
    summary_line,
)
from carry.validate.steps import Progress


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


@dataclass(frozen=True, kw_only=True)
class Request:
    """What one validation is asked: the target (`onto`, or an explicit `commit` range), where
    it runs, and how its answer is kept."""

    onto: str | None = None
    commit: str | None = None
    engine: str = "local"
    python: str | None = None
    baseline: bool = False
    use_cache: bool = True
    progress: Progress | None = None
    allow_no_tests: bool = False
    record: bool = True  # False: a side run (the CI's upstream check) is not the last report


def run(series: Series, repo: Repo, req: Request) -> Report:
    """The report of `req` on `series`: from the cache when everything its outcome depends on
    is the same (checked twice: before the build, by the target's name, and after, by trees),
    else from a fresh run whose report is then kept."""
    tp = series.manifest.test
    if not (tp.suites or tp.hooks or tp.diff_check):
        raise CarryError(f"series {series.name} has no test plan", hint="fill in its [test] table")
    plan.check(tp)
    engine = engines.make(req.engine, tp.image, req.python or tp.python, tp.env)
    if req.engine == "local":
        engine.check()  # a missing interpreter is bad input even when a report is cached
    inputs = _inputs(engine, series, req.allow_no_tests)
    store = validate_dir(repo) / "cache"
    early = _early_key(series, repo, req.onto, req.baseline, inputs) \
        if req.onto and not req.commit else ""
    if req.use_cache and early:
        hit = cache.follow(store, early)
        if hit is not None:
            return _answer(repo, series, hit, hit.head, record=req.record)
    t = resolve_target(series, repo, req.onto, req.commit)
    _check_suites(series, repo, t)
    test_files = [p for p in repo.changed_files(t.onto, t.head, deleted=True)
                  if plan.is_test_file(p, tp.suites)]
    base_commit = proof.baseline_commit(repo, t.onto, t.head, test_files) \
        if req.baseline else ""
    trees = {"head_tree": repo.rev_parse(t.head, "tree"),
             "onto_tree": repo.rev_parse(t.onto, "tree"),
             "baseline_tree": repo.rev_parse(base_commit, "tree") if base_commit else None}
    key = cache.key({**trees, **inputs})
    if req.use_cache and (hit := cache.load(store, key)) is not None:
        if early:
            cache.link(store, early, key)
        return _answer(repo, series, hit, t.head, list(t.resolved), req.record, list(t.audit))
    report = _fresh(series, repo, req, engine, t, (test_files, base_commit, key))
    data = to_data(report)
    atomic.write_json(Path(report.run_dir) / "report.json", data)
    if req.record:
        atomic.write_json(last_report_path(repo, series.name), data)
    if all(r.status is not Status.NOT_INSTALLED and (r.kind is not StepKind.INSTALL or r.ok)
           for r in report.steps):
        # a failed install is the network's, not the series': never cached
        after = _inputs(engine, series, req.allow_no_tests)  # as the install left it
        for ins in [inputs] + ([after] if after != inputs else []):
            k = cache.key({**trees, **ins})
            cache.store(store, k, report)
            if early:
                cache.link(store, _early_key(series, repo, req.onto or "", req.baseline, ins),
                           k)
    return report


def _fresh(series: Series, repo: Repo, req: Request, engine: engines.Engine, t: Target,
           found: tuple[list[str], str, str]) -> Report:
    """Run the plan on the target in throw-away worktrees: the steps, then the JUnit counts
    and (with a baseline) which tests the change proves."""
    tp = series.manifest.test
    test_files, base_commit, key = found
    started = time.monotonic()
    changed = repo.changed_files(t.onto, t.head)
    modules = [p for p in test_files
               if p in changed and plan.is_test_module(p) and _in_suites(p, tp.suites)]
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
                          (modules, str(run_dir / "baseline.xml")) if req.baseline else None)
    commits = {"head": t.head, **({"baseline": base_commit} if base_commit else {})}
    with _worktrees(repo, commits) as wts:
        mounts = [engines.Mount(wts["head"].path.parent), engines.Mount(run_dir)]
        mounts += [engines.Mount(w.git_dir) for w in wts.values()]
        mounts.append(engines.Mount(repo.common_dir, read_only=True))
        mounts.sort(key=lambda m: len(m.path.parts))
        with engine.session(mounts) as session:
            results = steps.run_steps(resolved, session, wts, repo, (t.onto, t.head), run_dir,
                                      req.progress)
        tests = _parse(run_dir / "pytest.xml", tp.suites, wts["head"].path)
        steps.empty_suites(results, tests, tp.suites, tp.allow_empty)
        base = None
        if req.baseline:
            base = proof.judge(repo, t.onto, t.head, base_commit, test_files, modules, tests,
                               _parse(run_dir / "baseline.xml", modules, wts["baseline"].path))
    ok = all(r.ok for r in results) and not (base and base.flagged)
    summary = summary_line(tests, len(tp.suites)) if tp.suites else (
        "no tests ran: the plan names no suites" + (
            " (accepted with --allow-no-tests)" if req.allow_no_tests
            else "; add [test].suites, or pass --allow-no-tests"))
    ok = ok and (bool(tp.suites) or req.allow_no_tests)
    return Report(
        series=series.name, version=series.manifest.version, onto_ref=t.onto_ref, onto=t.onto,
        head=t.head, head_tree=repo.rev_parse(t.head, "tree"), engine=engine.name,
        image=tp.image if engine.name != "local" else "", python=engine.python,
        changed=changed, steps=results, tests=tests, suites=list(tp.suites), summary=summary,
        status=Status.PASSED if ok else Status.FAILED, cache_key=key, run_dir=str(run_dir),
        started=stamp.isoformat(timespec="seconds"),
        seconds=round(time.monotonic() - started, 3),
        hook_notes=[d.note for d in decisions if d.note], baseline=base,
        resolved=list(t.resolved), audit=list(t.audit),
    )


def _inputs(engine: engines.Engine, series: Series, allow_no_tests: bool) -> dict[str, Any]:
    """What a result depends on besides the trees: the plan (its env included), the engine
    and, locally, the interpreter's packages and environment as they are now."""
    return {"plan": to_data(series.manifest.test), "python": engine.python,
            "engine": engine.identity(), **({"allow_no_tests": True} if allow_no_tests else {})}


def _check_suites(series: Series, repo: Repo, t: Target) -> None:
    """Every planned suite is in the target before anything runs: a misspelt or moved one
    would otherwise pass as "0 passed"."""
    missing = plan.missing_suites(series.manifest.test,
                                  lambda p: repo.show_file(t.head, p) is not None)
    if missing:
        raise CarryError(f"planned suite{'s' if len(missing) > 1 else ''} not in the target "
                         f"tree ({t.onto_ref}, result {t.head[:12]}): {', '.join(missing)}",
                         hint="fix [test].suites, or validate on a target that has them")


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
                      **({"resolutions": recorded} if recorded else {}),
                      **({} if m.policy.auto_resolve else {"auto_resolve": False})})


def _answer(repo: Repo, series: Series, report: Report, head: str,
            resolved: list[str] | None = None, record: bool = True,
            audit: list[str] | None = None) -> Report:
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
