"""The real flagship manifest, driven end to end on a synthetic fork shaped like the PR record:
two commits by Toby Mao without sign-off, a follow-up published without trailers, three
follow-ups with `Assisted-by: OpenAI Codex` and `Signed-off-by`. The commits are made up here;
only the manifest is the real one from series/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import LOGPROBZ, TOBY, CommitBuilder, git, run_carry

REPO = Path(__file__).resolve().parents[1]
NAME = "mamba-sparse-retention"
SOB = "Signed-off-by: logprobz <logprobz@example.com>\n"
AI = "Assisted-by: OpenAI Codex\n"
COORD = "vllm/v1/core/kv_cache_coordinator.py"
MANAGER = "vllm/v1/core/single_type_kv_cache_manager.py"
TEST = "tests/v1/core/test_prefix_caching.py"


@pytest.fixture
def world(tmp_path: Path, series_root: Path) -> tuple[Path, Path]:
    """`upstream.git` and `fork.git` remotes, and a work clone with both, as
    ci/clone-targets.sh makes it. Returns (work clone, series dir)."""
    up = CommitBuilder.init(tmp_path / "up")
    up.commit("Initial", {COORD: "def coordinate():\n    return 0\n",
                          MANAGER: "def manage():\n    return 0\n", TEST: "def test_x():\n"
                                                                          "    pass\n"})
    base = up.rev()
    git(up.path, "checkout", "-q", "-b", "pr643")
    up.commit("[BugFix] Mamba sparse retention keeps a state below each boundary\n",
              {COORD: "def coordinate():\n    return 1\n"}, author=TOBY)
    up.commit("[BugFix] Rename to get_replay_boundaries\n",
              {MANAGER: "def get_replay_boundaries():\n    return 0\n"}, author=TOBY)
    up.commit("Retain both EAGLE-reachable positions\n",
              {TEST: "def test_x():\n    pass\n\n\ndef test_y():\n    pass\n"},
              author=LOGPROBZ)
    for i in (4, 5, 6):
        up.commit(f"Follow-up {i}\n\nBody.\n\n{AI}{SOB}", {f"vllm/f{i}.py": f"X = {i}\n"},
                  author=LOGPROBZ)
    pr_head = up.rev()
    # Upstream squash-merges the equivalent of patches 1-2 (#54713) with its own diff.
    git(up.path, "checkout", "-q", "-b", "upstream-main", base)
    up.commit("[BugFix] Retain both replay boundaries (#54713)",
              {COORD: "def coordinate():\n    return 1\n",
               MANAGER: "def get_replay_boundaries():\n    return 0  # upstream\n"})
    up.commit("Unrelated upstream work (#54800)", {"docs/x.md": "x\n"})
    for remote, branch, sha in (("fork", "dev/jovian-judgement", base),
                                ("upstream", "main", "upstream-main")):
        bare = tmp_path / f"{remote}.git"
        git(tmp_path, "init", "-q", "--bare", str(bare))
        git(up.path, "push", "-q", str(bare), f"{sha}:refs/heads/{branch}")
    git(up.path, "push", "-q", str(tmp_path / "fork.git"), f"{pr_head}:refs/pull/643/head")
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", "--origin", "fork", str(tmp_path / "fork.git"), str(work))
    git(work, "remote", "add", "upstream", str(tmp_path / "upstream.git"))
    git(work, "fetch", "-q", "upstream")
    shutil.copytree(REPO / "series" / NAME, series_root / NAME)
    return work, series_root


def test_readme_import_then_check_against_the_expectations(world: tuple[Path, Path]) -> None:
    work, root = world
    env = {"CARRY_SERIES_DIR": str(root)}
    r = run_carry("import", NAME, "--repo", str(work), "--pr", "643", "--base",
                  "fork/dev/jovian-judgement", "--json", env=env)
    assert r.code == 0, r.err
    imported = json.loads(r.out)
    assert imported["version"] == 1 and len(imported["patches"]) == 6
    check = run_carry("check", NAME, "--json", env=env)
    report = json.loads(check.out)
    assert check.code == 1 and report["status"] == "violations"
    kinds = {p["number"]: [(f["kind"], f["message"]) for f in p["findings"]]
             for p in report["patches"]}
    # Toby's two commits lack Signed-off-by: the same DCO gap upstream review found.
    assert kinds[1] == kinds[2] == [("violation", "missing required trailer Signed-off-by")]
    assert kinds[3] == [("exception", "no Signed-off-by: published without trailers; left "
                                      "unamended to preserve published history")]
    assert kinds[4] == kinds[5] == kinds[6] == []
    assert [p["author"] for p in report["patches"]] == ["Toby Mao"] * 2 + ["logprobz"] * 4
    manifest = (root / NAME / "series.toml").read_text()
    assert 'ref = "fork/dev/jovian-judgement"' in manifest


def test_rebase_onto_upstream_main_drops_the_merged_upstream_equivalent(
        world: tuple[Path, Path]) -> None:
    work, root = world
    env = {"CARRY_SERIES_DIR": str(root)}
    assert run_carry("import", NAME, "--repo", str(work), "--pr", "643", "--base",
                     "fork/dev/jovian-judgement", env=env).code == 0
    r = run_carry("rebase", NAME, "--repo", str(work), "--target", "upstream-main", "--json",
                  env=env)
    assert r.code == 0, r.err
    (result,) = json.loads(r.out)
    assert result["status"] == "applied"
    status = [(p["status"], p["reason"].split(":")[0]) for p in result["patches"]]
    assert status[:2] == [("dropped", "provenance")] * 2
    assert [s for s, _ in status[2:]] == ["applied"] * 4
    assert "vllm-project/vllm#54713" in result["patches"][0]["reason"]
    log = git(work, "log", "--format=%an|%s", f"upstream/main..{result['head']}")
    assert log.splitlines() == ["logprobz|Follow-up 6", "logprobz|Follow-up 5",
                                "logprobz|Follow-up 4",
                                "logprobz|Retain both EAGLE-reachable positions"]
