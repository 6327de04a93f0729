"""Secrets and paths: carry reads only regular files inside a series directory, follows no link
out of it, and scrubs URL credentials and token values from everything it prints or sends. Real
CLI, real git, real HTTP to the loopback GitHub server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests import github_server
from tests.conftest import (
    FORGE_TOKEN,
    FORK,
    CommitBuilder,
    forge_env,
    git,
    import_and_apply,
    run_carry,
)

PR = ["--branch", "carry/demo", "--forge-repo", FORK, "--base", "main"]


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): (os.readlink(p).encode() if p.is_symlink()
                                       else p.read_bytes())
            for p in sorted(root.rglob("*")) if p.is_symlink() or p.is_file()}


def test_cover_linked_to_the_environment_is_refused_and_nothing_is_sent(
        gh: github_server.RunningServer, fork: CommitBuilder, series_root: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    cover = series_root / "demo" / "cover.md"
    cover.unlink(missing_ok=True)
    cover.symlink_to("/proc/self/environ")
    before = _bytes(series_root)
    for extra in (["--dry-run"], ["--dry-run", "--json"], []):
        r = run_carry("pr", "demo", "--repo", str(fork.path), *PR, *extra, env=env)
        assert r.code == 2, r.out + r.err
        line = _one_line(r.err)
        assert "cover.md: is a symbolic link" in line
        assert FORGE_TOKEN not in r.out + r.err and "GITHUB_API_URL" not in r.out
    assert gh.state.requests == []
    assert _bytes(series_root) == before
    r = run_carry("series", "show", "demo", env=env)
    assert r.code == 2 and "cover.md: is a symbolic link" in _one_line(r.err)


@pytest.mark.parametrize("what", ["patch", "dangling", "patches-dir", "series-dir",
                                  "manifest", "fifo"])
def test_links_and_odd_files_in_a_series_are_refused(
        what: str, fork: CommitBuilder, series_root: Path, tmp_path: Path) -> None:
    env = {"CARRY_SERIES_DIR": str(series_root)}
    assert run_carry("import", "demo", "--repo", str(fork.path), "--range", "main..feature",
                     env=env).code == 0
    demo = series_root / "demo"
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.patch"
    secret.write_text("not yours\n")
    first = sorted((demo / "patches").iterdir())[0]
    name = "demo"
    if what == "patch":
        first.unlink()
        first.symlink_to(secret)
    elif what == "dangling":
        first.unlink()
        first.symlink_to(tmp_path / "nowhere.patch")
    elif what == "patches-dir":
        os.rename(demo / "patches", outside / "patches")
        (demo / "patches").symlink_to(outside / "patches")
    elif what == "series-dir":
        os.rename(demo, outside / "demo")
        demo.symlink_to(outside / "demo")
    elif what == "manifest":
        os.rename(demo / "series.toml", outside / "series.toml")
        (demo / "series.toml").symlink_to(outside / "series.toml")
    else:
        (demo / "cover.md").unlink(missing_ok=True)
        os.mkfifo(demo / "cover.md")
    before = _bytes(series_root)
    for args in (["check", name], ["series", "show", name],
                 ["apply", name, "--repo", str(fork.path), "--onto", "main", "--branch", "x"]):
        r = run_carry(*args, env=env)
        assert r.code == 2, (args, r.out, r.err)
        line = _one_line(r.err)
        assert "symbolic link" in line or "not a regular file" in line, line
        if what in ("patch", "patches-dir"):  # the hint names what the link stands for
            kind = "file" if what == "patch" else "directory"
            assert f"replace the link with the {kind} itself" in line, line
    assert _bytes(series_root) == before
    assert git(fork.path, "branch", "--list", "x") == ""


def test_a_link_among_other_series_files_is_refused_on_rewrite(
        fork: CommitBuilder, series_root: Path, tmp_path: Path) -> None:
    env = {"CARRY_SERIES_DIR": str(series_root)}
    assert run_carry("import", "demo", "--repo", str(fork.path), "--range", "main..feature",
                     env=env).code == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "private.txt").write_text("private\n")
    (series_root / "demo" / "notes").symlink_to(outside)
    before = _bytes(series_root)
    fork.commit("one more", {"src/more.py": "Y = 2\n"})
    r = run_carry("import", "demo", "--repo", str(fork.path), "--range", "main..feature",
                  env=env)
    assert r.code == 2 and "notes: is a symbolic link" in _one_line(r.err)
    assert _bytes(series_root) == before
    assert not any("private" in k for k in _bytes(series_root))


def test_a_token_echoed_by_a_series_is_scrubbed_from_output_and_from_what_is_sent(
        gh: github_server.RunningServer, fork: CommitBuilder, series_root: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    (series_root / "demo" / "cover.md").write_text(
        f"# Demo\n\n## Purpose\n\nDebug: token={FORGE_TOKEN} and https://bot:{FORGE_TOKEN}@example.com/x\n")
    dry = run_carry("pr", "demo", "--repo", str(fork.path), *PR, "--dry-run", "--json",
                    env=env)
    assert dry.code == 0, dry.err
    assert FORGE_TOKEN not in dry.out and "token=***" in json.loads(dry.out)["body"]
    real = run_carry("pr", "demo", "--repo", str(fork.path), *PR, env=env)
    assert real.code == 0, real.err
    assert FORGE_TOKEN not in real.out + real.err
    (pull,) = gh.state.repos[FORK].pulls.values()
    assert FORGE_TOKEN not in pull.body and "token=***" in pull.body


@pytest.mark.parametrize("var", ["GH_TOKEN", "GITHUB_TOKEN"])
def test_credentials_in_urls_are_redacted_from_every_message(
        var: str, fork: CommitBuilder, series_root: Path) -> None:
    secret = "s3cr3t-T0KEN-value"
    env = {"CARRY_SERIES_DIR": str(series_root), var: secret}
    url = f"https://user:{secret}@127.0.0.1:9/org/repo.git"
    r = run_carry("import", "demo", "--repo", url, "--branch", "feature", env=env)
    assert r.code == 2
    line = _one_line(r.err)
    assert secret not in r.out + r.err and "user" not in line.split("127.0.0.1")[0][-12:]
    assert "https://***@127.0.0.1" in line
    r = run_carry("import", "demo", "--repo", f"https://x:{secret}@127.0.0.1:9/r.git",
                  "--branch", "feature", "--json", env={**env, var: ""})
    assert secret not in r.out + r.err


def test_api_url_with_credentials_is_redacted(
        gh: github_server.RunningServer, fork: CommitBuilder, series_root: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    env["GITHUB_API_URL"] = "http://robot:hunter2-api-secret@127.0.0.1:9/api"
    r = run_carry("supersede", "demo", "--by", "9", "--forge-repo", FORK, "--apply", env=env)
    assert r.code == 2
    _one_line(r.err)
    assert "hunter2-api-secret" not in r.out + r.err and FORGE_TOKEN not in r.out + r.err
