"""The flagship's PR body, as `carry pr --dry-run` writes it from a synthetic validation report:
`python -m tests.examples > docs/examples/flagship-pr-body.md` (tests/test_examples.py checks
the file is exactly what this makes). `python -m tests.examples dashboard` prints the CI
job's dashboard issue for the flagship, which ci/README.md shows (`dashboard_body`).

The fork is made up the way tests/test_flagship.py makes it (two commits by Toby Mao without
sign-off, one follow-up without trailers, three with `Assisted-by` and `Signed-off-by`); the
manifest and cover are the real ones in series/. The report carries #643's numbers: 382 tests
across the six suites, and a baseline where two tests fail on the unfixed base.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from carry.cli import render
from carry.validate.results import (
    Baseline,
    Failure,
    Outcome,
    Report,
    Status,
    StepKind,
    StepResult,
    SuiteCounts,
    TestRun,
)
from tests.conftest import LOGPROBZ, TOBY, CommitBuilder, git, run_carry

REPO = Path(__file__).resolve().parents[1]
NAME = "mamba-sparse-retention"
BASE = "fork/dev/jovian-judgement"
FILES = ["tests/v1/core/test_prefix_caching.py",
         "tests/v1/kv_connector/unit/test_mooncake_store_coordinator.py",
         "vllm/v1/core/kv_cache_coordinator.py",
         "vllm/v1/core/single_type_kv_cache_manager.py",
         "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/coordinator.py"]
PY = "/opt/venv/bin/python"
COUNTS = [("tests/v1/core/test_prefix_caching.py", 214), ("tests/v1/core/prefix_cache", 61),
          ("tests/v1/core/test_mamba_align_chunk_split.py", 23),
          ("tests/v1/kv_connector/unit/test_mooncake_store_coordinator.py", 48),
          ("tests/v1/kv_connector/unit/test_mooncake_store_worker.py", 19),
          ("tests/v1/kv_connector/unit/test_mooncake_store_scheduler.py", 17)]
BASELINE = [
    ("tests/v1/core/test_prefix_caching.py::test_swa_eagle_replay_hits_reachable_prefix",
     "AssertionError: SWA replay returned 0 cached tokens instead of the reachable 64-token "
     "prefix"),
    ("tests/v1/core/test_prefix_caching.py::test_sparse_retention_gets_fine_hit_alignment",
     "AssertionError: sparse retention received 64-token scheduler alignment instead of the "
     "32-token fine-hit alignment"),
]


def _fork(tmp: Path) -> CommitBuilder:
    b = CommitBuilder.init(tmp / "work")
    b.commit("Initial", {f: "X = 0\n" for f in FILES})
    git(b.path, "update-ref", f"refs/remotes/{BASE}", "HEAD")
    sob, ai = "Signed-off-by: logprobz <logprobz@example.com>\n", "Assisted-by: OpenAI Codex\n"
    b.commit("[BugFix] Mamba sparse retention keeps a state below each boundary under "
             "EAGLE/MTP\n", {FILES[2]: "X = 1\n"}, author=TOBY)
    b.commit("[BugFix] Rename to get_replay_boundaries\n", {FILES[3]: "X = 1\n"}, author=TOBY)
    b.commit("Retain both EAGLE-reachable positions\n", {FILES[0]: "X = 1\n"},
             author=LOGPROBZ)
    for i, f in ((4, FILES[4]), (5, FILES[1]), (6, FILES[2])):
        b.commit(f"Follow-up {i}\n\nBody.\n\n{ai}{sob}", {f: f"X = {i}\n"}, author=LOGPROBZ)
    git(b.path, "branch", "carry/flagship")
    return b


def _report(b: CommitBuilder, run_dir: str) -> Report:
    head, onto = git(b.path, "rev-parse", "carry/flagship"), git(b.path, "rev-parse", BASE)
    suites = [name for name, _ in COUNTS]
    files = " ".join(FILES)
    steps = [
        StepResult(StepKind.INSTALL, "install", f"{PY} -m pip install -q tblib", Status.PASSED, 0),
        StepResult(StepKind.PYTEST, "pytest", f"{PY} -m pytest -q -p no:cacheprovider "
                   f"{' '.join(suites)} --junitxml={run_dir}/pytest.xml", Status.PASSED, 0),
        StepResult(StepKind.HOOK, "hook all hooks", f"pre-commit run --files {files}",
                   Status.PASSED, 0),
        StepResult(StepKind.HOOK, "hook mypy-3.12 -> mypy (stage manual)",
                   f"pre-commit run mypy --hook-stage manual --files {files}", Status.PASSED, 0,
                   note="mypy-3.12 is not a hook of this .pre-commit-config.yaml; ran its "
                        "fallback mypy"),
        StepResult(StepKind.DIFF_CHECK, "git diff --check",
                   f"git diff --check {onto[:12]} {head[:12]}", Status.PASSED, 0),
    ]
    tests = TestRun([SuiteCounts(name, passed=n) for name, n in COUNTS], [], {})
    failing = TestRun([SuiteCounts(FILES[0], failed=2)],
                      [Failure(t, Outcome.FAILED, m) for t, m in BASELINE], {})
    base = Baseline("0" * 40, [FILES[0]], failing, "2 failed in the one suite",
                    [t for t, _ in BASELINE], [], [], False)
    return Report(
        series=NAME, version=1, onto_ref=BASE, onto=onto, head=head,
        head_tree=git(b.path, "rev-parse", "carry/flagship^{tree}"), engine="podman",
        image="voipmonitor/vllm@sha256:284784e685aa0377f1cf63a312a364fc884b02beb98949d6886624"
              "edbddb3806", python=PY, changed=FILES, steps=steps, tests=tests,
        suites=suites, summary="382 tests passed across the six suites", status=Status.PASSED,
        cache_key="0" * 64, run_dir=run_dir, started="2026-12-03T00:00:00+00:00",
        seconds=1.0, baseline=base)


def flagship_body() -> str:
    with tempfile.TemporaryDirectory(prefix="carry-example-") as d:
        tmp = Path(d)
        env = {"HOME": str(tmp), "GIT_CONFIG_NOSYSTEM": "1", "GIT_COMMITTER_NAME": "C O Mitter",
               "GIT_COMMITTER_EMAIL": "committer@example.com", "GH_TOKEN": "",
               "GITHUB_TOKEN": "", "CARRY_SERIES_DIR": str(tmp / "series")}
        os.environ.update(env)
        b = _fork(tmp)
        shutil.copytree(REPO / "series" / NAME, tmp / "series" / NAME)
        r = run_carry("import", NAME, "--repo", str(b.path), "--range", f"{BASE}..carry/flagship",
                      "--base", BASE, env=env)
        if r.code != 0:
            raise SystemExit(r.err)
        report = tmp / "report.json"
        report.write_text(json.dumps(render.to_data(_report(b, str(tmp / "run")))))
        r = run_carry("pr", NAME, "--repo", str(b.path), "--branch", "carry/flagship",
                      "--remote", "fork", "--forge-repo", "local-inference-lab/vllm", "--base",
                      "dev/jovian-judgement", "--validation", str(report), "--dry-run",
                      "--json", env=env)
        if r.code != 0:
            raise SystemExit(r.err)
        body: str = json.loads(r.out)["body"]
        return body


DASHBOARD_RUN = "2026-11-16T18:04:00Z"


def dashboard_body() -> str:
    """The dashboard as the CI job renders it (job/board.py), from rows and loop actions as
    job/steer.py takes them, on the flagship's three manifest targets: the dev branch
    validated with its PR open, the newest release conflicting at a root patch (the replay's
    `why` names the upstream commit; a later patch builds on it) with 0.35.0 on the index but
    not tagged yet, and upstream main with failing tests, triaged, and a retry ticked."""
    from carry.job import board as boardmod
    from carry.job import steer
    from carry.job.cells import Row
    from carry.job.shared import Action, Check, Did
    from carry.job.verdict import Failing
    from carry.series.store import find

    def sha(what: str) -> str:
        return hashlib.sha1(what.encode()).hexdigest()

    s = find(REPO / "series", NAME)
    board = boardmod.Board(s.manifest.fork.repo, open_limit=5)
    board.cells = [boardmod.Cell(NAME, t.name) for t in s.manifest.targets]
    dev = Row(NAME, "fork-dev", sha("dev"), "applied", check=Check.PASSED, cached=True,
              summary="382 tests passed across the six suites", ref="dev/jovian-judgement")
    release = Row(NAME, "upstream-release@v0.34.0", sha("v0.34.0"), "conflict",
                  ref="v0.34.0", conflict="0001-BugFix-Mamba-sparse-retention.patch", why=[
        {"file": "0001-BugFix-Mamba-sparse-retention.patch", "status": "conflict",
         "cause": {"sha": sha("55012"), "subject": "[Core] Hybrid allocator: one boundary list",
                   "pr": 55012}, "builds_on": "",
         "text": "0001 conflicts since upstream"},
        {"file": "0004-Retain-both-EAGLE-reachable-positions.patch",
         "status": "would-conflict", "cause": None,
         "builds_on": "0001-BugFix-Mamba-sparse-retention.patch", "text": "0004 builds on 0001"}])
    main = Row(NAME, "upstream-main", sha("main"), "applied", check=Check.FAILED,
               summary="2 failed, 380 passed across the six suites", ref="upstream/main",
               failing=[Failing(f"{FILES[0]}::test_swa_eagle_replay_hits_reachable_prefix",
                                "AssertionError", "fails only with the series"),
                        Failing("tests/v1/core/prefix_cache/test_partial_prefix_cache_"
                                "primitives.py::test_evict_partial", "KeyError",
                                "fails on upstream too")])
    for row, when in ((dev, "2026-11-16T12:02:00Z"), (release, "2026-11-16T18:01:00Z"),
                      (main, DASHBOARD_RUN)):
        cell = board.cell(NAME, row.target.split("@", 1)[0])
        assert cell is not None
        steer._take(cell, row, False, when)
    for act in (Action(NAME, "fork-dev", "dev/jovian-judgement", "pr", Did.UNCHANGED, 712),
                Action(NAME, "upstream-release", "v0.34.0", "issue", Did.OPENED, 715),
                Action(NAME, "upstream-main", "upstream/main", "issue", Did.UPDATED, 716)):
        steer._act(board, act)
    release_cell = board.cell(NAME, "upstream-release")
    assert release_cell is not None
    release_cell.pending = ["0.35.0: waiting for the tag"]  # as steer._pending words it
    board.retry = {(NAME, "upstream-main")}
    board.last_run = DASHBOARD_RUN
    return boardmod.render(board)


if __name__ == "__main__":
    if sys.argv[1:] == ["dashboard"]:
        sys.stdout.write(dashboard_body())
    else:
        sys.stdout.write(flagship_body())
