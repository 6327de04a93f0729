"""A new user's first commands through the real CLI: --version, init, import into a missing
series, status, series list/show output and --json errors."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

from tests.conftest import CommitBuilder, git, run_carry, util


def _clone_with_remotes(tmp_path: Path, up: CommitBuilder) -> Path:
    """A working clone whose remotes point at upstream and the fork by their GitHub names."""
    up.tag("v1.0.0", "base")
    up.tag("v1.1.0")
    git(up.path, "branch", "dev/integration", "base")
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", str(work))
    git(work, "remote", "add", "upstream", "https://github.com/acme/widget.git")
    git(work, "remote", "add", "fork", "git@github.com:me/widget.git")
    git(work, "fetch", "-q", "--tags", str(up.path), "+refs/heads/main:refs/remotes/upstream/main",
        "+refs/heads/dev/integration:refs/remotes/fork/dev/integration")
    return work


def test_version() -> None:
    r = run_carry("--version")
    assert r.code == 0 and r.out.startswith("carry ") and r.out.split()[1][0].isdigit()


def test_init_reads_remotes_tags_and_dev_branch(tmp_path: Path, upstream: CommitBuilder,
                                                 series_root: Path) -> None:
    work = _clone_with_remotes(tmp_path, upstream)
    r = run_carry("init", "fix", "--upstream", "acme/widget", "--fork", "me/widget",
                  "--repo", str(work), "--series-dir", str(series_root))
    assert r.code == 0, r.err
    assert f"next: carry import fix --repo {work} --range fork/dev/integration..BRANCH" in r.out
    text = (series_root / "fix" / "series.toml").read_text()
    assert "# The test plan names no suites" in text
    m = tomllib.loads(text)
    assert m["upstream"] == {"repo": "acme/widget", "remote": "upstream", "branch": "main",
                             "url": "https://github.com/acme/widget.git"}
    assert m["fork"]["remote"] == "fork" and m["fork"]["branch"] == "dev/integration"
    assert m["base"] == {"ref": "fork/dev/integration", "commit": upstream.rev("base")}
    assert [(t["name"], t.get("ref", t.get("tags"))) for t in m["target"]] == [
        ("upstream-main", "upstream/main"), ("upstream-release", "v*"),
        ("fork-dev", "fork/dev/integration")]
    assert m["policy"]["required"] == ["Signed-off-by"]
    assert "suites" not in m["test"]
    # the manifest loads, and the series shows without empty placeholders
    show = run_carry("series", "show", "fix", "--series-dir", str(series_root))
    assert show.code == 0, show.err
    assert "fork me/widget (dev/integration)" in show.out
    again = run_carry("init", "fix", "--upstream", "acme/widget", "--fork", "me/widget",
                      "--series-dir", str(series_root))
    assert again.code == 2 and "already exists" in again.err
    bad = run_carry("init", "other", "--upstream", "widget", "--fork", "me/widget",
                    "--series-dir", str(series_root))
    assert bad.code == 2 and "OWNER/REPO" in bad.err
    for name, where, text in (("../evil", series_root, "not a series name"),
                              ("x", series_root / "fix" / "series.toml", "not a directory")):
        r = run_carry("init", name, "--upstream", "a/b", "--fork", "c/b", "--series-dir",
                      str(where))
        assert r.code == 2 and text in r.err and "Traceback" not in r.err, r.err


def test_import_after_init_keeps_manifest_and_base_name(tmp_path: Path, upstream: CommitBuilder,
                                                        series_root: Path) -> None:
    git(upstream.path, "checkout", "-q", "-b", "feature", "base")
    upstream.commit("One\n\nSigned-off-by: A U Thor <author@example.com>\n",
                    {"src/util.py": util(h1=11)})
    r = run_carry("import", "bare", "--repo", str(upstream.path), "--range", "base..feature",
                  "--series-dir", str(series_root))
    assert r.code == 0, r.err
    assert "carry init bare" in r.err  # says that init makes a full manifest
    m = tomllib.loads((series_root / "bare" / "series.toml").read_text())
    assert m["base"] == {"ref": "base", "commit": upstream.rev("base")}  # the name, not a sha
    assert run_carry("init", "full", "--upstream", "acme/widget", "--fork", "me/widget",
                     "--base", "base", "--series-dir", str(series_root)).code == 0
    r = run_carry("import", "full", "--repo", str(upstream.path), "--range", "base..feature",
                  "--series-dir", str(series_root))
    assert r.code == 0 and "carry init" not in r.err, r.err
    m = tomllib.loads((series_root / "full" / "series.toml").read_text())
    assert m["upstream"]["repo"] == "acme/widget" and len(m["target"]) == 2
    assert m["base"]["ref"] == "base" and m["version"] == 1


def test_status_shows_stopped_rebase_branches_and_validation(
        tmp_path: Path, upstream: CommitBuilder, series_root: Path) -> None:
    git(upstream.path, "checkout", "-q", "-b", "feature", "base")
    upstream.commit("Two: h10", {"src/util.py": util(h10=100)})
    upstream.checkout("main")
    upstream.commit("Upstream h10", {"src/util.py": util(h10=101)})
    sd = ("--series-dir", str(series_root))
    assert run_carry("import", "demo", "--repo", str(upstream.path), "--range", "base..feature",
                     *sd).code == 0
    stop = run_carry("rebase", "demo", "--repo", str(upstream.path), "--onto", "main", *sd)
    assert stop.code == 1, stop.err
    # the conflict worktree, asked for (a stop makes none)
    assert run_carry("rebase", "--repo", str(upstream.path), "--resolve", *sd).code == 1
    r = run_carry("status", "demo", "--repo", str(upstream.path), "--json", *sd)
    assert r.code == 0, r.err
    data = json.loads(r.out)["series"][0]
    assert data["series"] == "demo" and data["patches"] == 1
    [st] = data["stopped"]
    assert st["phase"] == "conflict" and st["paths"] == ["src/util.py"]
    assert Path(st["worktree"]).is_dir()
    assert st["next"] == (f"carry rebase --repo {upstream.path} --continue "
                          f"--series-dir {series_root}")
    assert data["validation"] is None
    human = run_carry("status", "--repo", str(upstream.path), *sd)
    assert "STOPPED rebase onto main" in human.out and st["worktree"] in human.out
    assert run_carry("rebase", "demo", "--repo", str(upstream.path), "--skip", *sd).code == 0
    data = json.loads(run_carry("status", "demo", "--repo", str(upstream.path), "--json",
                                *sd).out)["series"][0]
    assert data["stopped"] == []
    assert [b["branch"] for b in data["branches"]] == ["carry/demo/main"]
    no_repo = run_carry("status", *sd)
    assert no_repo.code == 0 and "--repo" in no_repo.err


def test_series_list_says_where_and_lists_bad_manifests(tmp_path: Path) -> None:
    empty = tmp_path / "nothing"
    r = run_carry("series", "list", "--series-dir", str(empty))
    assert r.code == 0 and f"no series in {empty}" in r.out
    root = tmp_path / "s"
    assert run_carry("init", "good", "--upstream", "a/b", "--fork", "c/b",
                     "--series-dir", str(root)).code == 0
    (root / "broken").mkdir()
    (root / "broken" / "series.toml").write_text('name = "broken"\nversoin = 1\n')
    r = run_carry("series", "list", "--series-dir", str(root))
    assert r.code == 1
    assert f"series in {root}" in r.out and "good" in r.out and "broken" in r.out
    assert "ERROR" in r.out and "│" not in r.out  # plain text when piped
    rows = json.loads(run_carry("series", "list", "--json", "--series-dir", str(root)).out)
    assert rows[0]["name"] == "broken" and "error" in rows[0] and rows[1]["name"] == "good"


def test_json_errors_are_json_on_stdout(tmp_path: Path) -> None:
    r = run_carry("check", "nope", "--json", "--series-dir", str(tmp_path))
    assert r.code == 2 and r.err.startswith("carry: error: unknown series 'nope'")
    data = json.loads(r.out)
    assert data["hint"].startswith("pass --series-dir DIR or set CARRY_SERIES_DIR")
    assert data == {"error": f"unknown series 'nope' in {tmp_path} (known: none)",
                    "hint": data["hint"], "exit": 2}
    plain = run_carry("check", "nope", "--series-dir", str(tmp_path))
    assert plain.out == ""


def test_every_command_has_an_example_and_an_uncut_summary() -> None:
    top = run_carry("--help")
    summaries = top.out.split("Commands:")[1]
    assert top.code == 0 and "..." not in summaries
    commands = _every_command()
    assert {"ci loop", "ci merge-ledger", "series show", "edit"} <= set(commands)
    for cmd in commands:
        r = run_carry(*cmd.split(), "--help")
        assert r.code == 0, (cmd, r.err)
        assert f"Example: carry {cmd}" in r.out, cmd


def test_init_in_a_clone_of_the_fork_alone_prints_what_makes_it_resolve(
        tmp_path: Path, upstream: CommitBuilder, series_root: Path) -> None:
    """F16 #11: in a clone whose only remote is `origin` (the fork), init wrote
    `upstream/main` targets that do not resolve and suggested an import that fails. It says
    the exact `git remote add … && git fetch …`; run as printed, every target resolves and
    the suggested import works."""
    git(upstream.path, "branch", "dev/integration", "base")
    fork = tmp_path / "me" / "widget.git"
    git(tmp_path, "clone", "-q", "--bare", str(upstream.path), str(fork))
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(fork), str(work))
    r = run_carry("init", "fix", "--upstream", "acme/widget", "--fork", "me/widget",
                  "--series-dir", str(series_root), cwd=work)
    assert r.code == 0, r.err
    m = tomllib.loads((series_root / "fix" / "series.toml").read_text())
    assert m["fork"]["remote"] == "origin" and m["upstream"]["remote"] == "upstream"
    setup = [ln.removeprefix("next: ") for ln in r.out.splitlines()
             if ln.startswith("next: git ")]
    assert setup == [f"git -C {work} remote add upstream https://github.com/acme/widget.git"
                     f" && git -C {work} fetch upstream"], r.out
    assert "then: carry import fix" in r.out
    # GitHub is the upstream's URL; here it is the local upstream (no traffic leaves)
    local = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"url.{upstream.path}.insteadOf",
             "GIT_CONFIG_VALUE_0": "https://github.com/acme/widget.git"}
    import subprocess

    subprocess.run(setup[0], shell=True, check=True, env=dict(os.environ, **local),
                   capture_output=True)
    for t in m["target"]:
        if "ref" in t:
            git(work, "rev-parse", "--verify", "-q", t["ref"])
    upstream.checkout("dev/integration")
    upstream.commit("One\n\nSigned-off-by: A U Thor <author@example.com>\n",
                    {"src/util.py": util(h1=11)})
    git(work, "fetch", "-q", "origin")
    git(work, "fetch", "-q", str(upstream.path), "dev/integration:refs/remotes/origin/feature")
    imp = run_carry("import", "fix", "--repo", str(work), "--range",
                    f"{m['base']['ref']}..origin/feature", "--series-dir", str(series_root))
    assert imp.code == 0, imp.err


def test_init_inside_the_clone_says_the_series_would_be_committed_there(
        tmp_path: Path, upstream: CommitBuilder) -> None:
    """Walk: init run in the vLLM clone with no series checkout anywhere wrote series/ into
    the clone and told the user to commit it there, without a word."""
    work = _clone_with_remotes(tmp_path, upstream)
    r = run_carry("init", "fix", "--upstream", "acme/widget", "--fork", "me/widget", cwd=work)
    assert r.code == 0, r.err
    assert f"the series folder {work / 'series'} is inside the clone {work}" in r.err
    assert "--series-dir" in r.err


def _every_command() -> list[str]:
    """Every command the app registers, read from the app itself, so a new one cannot be
    missed by a hand-kept list."""
    import typer.main

    from carry.cli.main import app

    def walk(group: typer.core.TyperGroup, prefix: str) -> list[str]:
        out = []
        for name, cmd in group.commands.items():
            full = f"{prefix}{name}"
            if isinstance(cmd, typer.core.TyperGroup):
                out += walk(cmd, f"{full} ")
                if cmd.invoke_without_command:
                    out.append(full)
            else:
                out.append(full)
        return out

    root = typer.main.get_command(app)
    assert isinstance(root, typer.core.TyperGroup)
    return sorted(walk(root, ""))


_REGISTERED = """
import importlib, json, sys
from typer.main import get_command_name
from carry.cli.app import app, series_app
importlib.import_module("carry.cli." + sys.argv[1])
names = [c.name or get_command_name(c.callback.__name__) for c in app.registered_commands]
names += [g.name for g in app.registered_groups
          if g.typer_instance is not series_app or series_app.registered_commands]
print(json.dumps(names))
"""


def test_a_run_imports_the_module_that_owns_its_command() -> None:
    """`carry CMD` imports only the command module `OWNER` names for CMD: every module
    registers exactly the commands the map gives it, so a run finds its command and
    `carry --help` (every module) lists the same commands as before."""
    import subprocess
    import sys

    from carry.cli.main import COMMAND_MODULES, OWNER

    for module in COMMAND_MODULES:
        out = subprocess.run([sys.executable, "-c", _REGISTERED, module], capture_output=True,
                             text=True, check=True, env=dict(os.environ)).stdout
        assert sorted(json.loads(out)) == sorted(k for k, v in OWNER.items() if v == module)
    assert set(OWNER.values()) == set(COMMAND_MODULES)
    assert set(OWNER) == {c.split()[0] for c in _every_command()}
