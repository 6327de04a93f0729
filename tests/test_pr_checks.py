"""What `carry pr` checks and says: the commits it pushes are the series' current version,
counted on the base of the repository the PR targets; the validation it quotes ran the
current test plan; the AI-assistance section quotes the policy's `ai_attribution` trailer
and a `Co-authored-by:` whose name is a known AI tool's, each as written (an email, a
person's noreply address too, decides nothing)."""

from __future__ import annotations

import json
from pathlib import Path

from carry.publish import body
from carry.series import patches as patchmod
from tests import github_server
from tests.conftest import FORGE_TOKEN, FORK, CommitBuilder, git, run_carry

PATCH = """From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001
From: A U Thor <author@example.com>
Date: Thu, 7 Apr 2005 22:13:13 +0200
Subject: [PATCH] core: fix the thing

Body.

{trailers}
---
 a | 1 +
 1 file changed, 1 insertion(+)

diff --git a/a b/a
index e69de29..d00491f 100644
--- a/a
+++ b/a
@@ -0,0 +1 @@
+1
--
2.43.0
"""


def _patch(*trailers: str) -> patchmod.Patch:
    text = PATCH.format(trailers="\n".join(trailers))
    return patchmod.parse(1, "0001-core.patch", text.encode())


def test_each_ai_trailer_is_quoted_as_written_and_a_person_is_not_one() -> None:
    p = _patch("Co-Authored-By: Claude Opus 4 <noreply@anthropic.com>",
               "Co-authored-by: OpenAI Codex <codex@openai.com>",
               "Co-authored-by: Kim Person <12345+kim@users.noreply.github.com>",
               "Helped-by: Some Tool",
               "Signed-off-by: A U Thor <author@example.com>")
    assert body.ai_trailers("Assisted-by", p) == [
        "Co-Authored-By: Claude Opus 4 <noreply@anthropic.com>",
        "Co-authored-by: OpenAI Codex <codex@openai.com>"]
    assert body.ai_trailers("Helped-by", _patch("Helped-by: Some Tool")) == [
        "Helped-by: Some Tool"]  # the policy's own key, whatever it names


def test_pr_refuses_a_branch_whose_commits_are_not_the_series_current_version(
        tmp_path: Path, fork: CommitBuilder, series_root: Path) -> None:
    """Same diffs, other messages: the branch lost a Signed-off-by the series has. pr checks
    the commits it pushes, not only the series, and its checklist ticks nothing for them."""
    gh = github_server.start(FORGE_TOKEN)
    gh.state.repo(FORK)
    try:
        env = {"GH_TOKEN": "", "GITHUB_TOKEN": FORGE_TOKEN, "GITHUB_API_URL": gh.url,
               "CARRY_SERIES_DIR": str(series_root)}
        r = run_carry("import", "demo", "--repo", str(fork.path), "--range", "main..feature",
                      env=env)
        assert r.code == 0, r.err
        r = run_carry("apply", "demo", "--repo", str(fork.path), "--onto", "main",
                      "--branch", "carry/demo", env=env)
        assert r.code == 0, r.err
        git(fork.path, "checkout", "-q", "carry/demo")
        git(fork.path, "commit", "-q", "--amend", "-m", "core: follow-up\n\n"
            "Assisted-by: OpenAI Codex\n")  # its Signed-off-by gone
        git(fork.path, "checkout", "-q", "main")
        args = ["pr", "demo", "--repo", str(fork.path), "--branch", "carry/demo",
                "--forge-repo", FORK, "--base", "main", "--dry-run", "--json"]
        r = run_carry(*args, env=env)
        assert r.code != 0 and len(r.err.strip().splitlines()) <= 2, r.out + r.err
        assert "carries an older version of 1 series patch(es)" in r.err
        forced = run_carry(*args, "--force", env=env)
        assert forced.code == 0, forced.err
        assert "- [ ] Every commit carries the trailers" in json.loads(forced.out)["body"]
    finally:
        gh.stop()


def test_pr_counts_its_commits_against_the_base_of_the_repository_it_targets(
        tmp_path: Path, fork: CommitBuilder, series_root: Path) -> None:
    """A PR to upstream counts on upstream's main, not on the fork's (which lags here)."""
    from carry.series import store as seriesmod

    up = tmp_path / "upstream.git"
    git(tmp_path, "init", "-q", "--bare", str(up))
    git(fork.path, "checkout", "-q", "main")
    fork.commit("upstream: one", {"src/a.py": "A = 1\n"})
    fork.commit("upstream: two", {"src/b.py": "B = 1\n"})
    git(fork.path, "remote", "add", "upstream", str(up))
    git(fork.path, "push", "-q", "upstream", "main")
    git(fork.path, "fetch", "-q", "upstream")
    gh = github_server.start(FORGE_TOKEN)
    gh.state.repo("up/proj")
    try:
        env = {"GH_TOKEN": "", "GITHUB_TOKEN": FORGE_TOKEN, "GITHUB_API_URL": gh.url,
               "CARRY_SERIES_DIR": str(series_root)}
        r = run_carry("import", "demo", "--repo", str(fork.path), "--range",
                      "main~2..feature", env=env)
        assert r.code == 0, r.err
        s = seriesmod.find(series_root, "demo")
        s.manifest.upstream.repo, s.manifest.upstream.remote = "up/proj", "upstream"
        seriesmod.save_manifest(s)
        r = run_carry("apply", "demo", "--repo", str(fork.path), "--onto", "upstream/main",
                      "--branch", "carry/demo", env=env)
        assert r.code == 0, r.err
        r = run_carry("pr", "demo", "--repo", str(fork.path), "--branch", "carry/demo",
                      "--forge-repo", "up/proj", "--base", "main", "--dry-run", "--json",
                      env=env)
        assert r.code == 0, r.err
        assert "3 commits on `main`" in json.loads(r.out)["body"]
    finally:
        gh.stop()


def test_pr_quotes_no_validation_of_another_test_plan(tmp_path: Path,
                                                      series_root: Path) -> None:
    """Validated under plan A, then B; the plan is A again: the last report (B's, of the same
    tree) is not this plan's validation, and the PR does not quote it."""
    import sys

    from carry.series import store as seriesmod
    from tests.validate import synthetic

    up = synthetic.upstream_project(tmp_path / "calc")
    synthetic.import_series(series_root, up.path, "good", "fix", sys.executable)
    env = {"CARRY_SERIES_DIR": str(series_root), "GH_TOKEN": "", "GITHUB_TOKEN": ""}
    assert run_carry("apply", "good", "--repo", str(up.path), "--onto", "v1", "--branch",
                     "carry/good", env=env).code == 0

    def plan(suites: list[str]) -> None:
        s = seriesmod.find(series_root, "good")
        s.manifest.test.suites = suites
        seriesmod.save_manifest(s)
        v = run_carry("validate", "good", "--repo", str(up.path), "--commit", "carry/good",
                      "--engine", "local", env=env)
        assert v.code == 0, v.out + v.err

    plan(list(synthetic.SUITES))
    plan(synthetic.SUITES[:1])
    s = seriesmod.find(series_root, "good")
    s.manifest.test.suites = list(synthetic.SUITES)  # changed back, not validated again
    seriesmod.save_manifest(s)
    r = run_carry("pr", "good", "--repo", str(up.path), "--branch", "carry/good",
                  "--forge-repo", FORK, "--base", "v1", "--dry-run", "--json", env=env)
    assert r.code == 0, r.err
    assert "No validation report of this tree was given." in json.loads(r.out)["body"]
    assert "ran another test plan (suites tests/test_core.py, not " in r.err
