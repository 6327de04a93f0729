"""What carry hands the processes it starts: no value from a flag, a manifest or the forge
reaches git as an option; git's repository-locating variables (set in every git hook) never
steer carry's git to another repository; and the validated tree's own code (its conftest.py,
a `repo: local` pre-commit hook) never sees a token. All through real git, real pytest and
real pre-commit, the CLI in its own process and the GitHub double on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from carry.base import childenv
from carry.base.errors import CarryError
from carry.git import Repo, mailinfo
from carry.intake import importer
from carry.series import store as seriesmod
from carry.series.store import Hook, Repository, Target
from carry.validate import engines
from tests import git_http, github_server
from tests.conftest import FORK, CommitBuilder, forge_env, git, import_and_apply, run_carry
from tests.validate import synthetic

Server = github_server.RunningServer
GH_TOKEN = "ghp_hostile_exec_gh_token_1234567"
GITHUB_TOKEN = "ghs_hostile_exec_github_token_7654321"
OTHER_TOKEN = "ghp_hostile_exec_token_env_5555555"


def _one_clean_error(r: object) -> None:
    code, err = r.code, r.err  # type: ignore[attr-defined]
    lines = err.splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("carry: error: "), err
    assert "Traceback" not in err and "internal error" not in err, err


# -- option injection -------------------------------------------------------------------------

REMOTE_OPTIONS = ["--upload-pack=touch {mark}", "--exec=touch {mark}",
                  "--receive-pack=touch {mark}"]


@pytest.mark.parametrize("dry_run", [False, True], ids=["real", "dry-run"])
def test_a_remote_named_like_an_option_runs_nothing_on_pr(
        gh: Server, fork: CommitBuilder, series_root: Path, tmp_path: Path,
        dry_run: bool) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    refs = git(fork.path, "for-each-ref")
    for i, option in enumerate(REMOTE_OPTIONS):
        mark = tmp_path / f"ran-{i}"
        r = run_carry("pr", "demo", "--repo", str(fork.path), "--branch", "carry/demo",
                      "--forge-repo", FORK, "--base", "main", "--remote",
                      option.format(mark=mark), *(["--dry-run"] if dry_run else []), env=env)
        assert not mark.exists(), f"{option}: the command ran"
        _one_clean_error(r)
        assert "is not a git remote" in r.err
    assert gh.state.writes() == [] and git(fork.path, "for-each-ref") == refs


def test_a_remote_named_like_an_option_runs_nothing_on_supersede(
        gh: Server, fork: CommitBuilder, series_root: Path, tmp_path: Path) -> None:
    env = forge_env(gh, series_root)
    import_and_apply(fork, env)
    head = git(fork.path, "rev-parse", "carry/demo")
    gh.state.add_pull(FORK, 9, title="carry", body="<!-- carry:series=demo -->\nx",
                      head="carry/demo", head_sha=head, base="main", user="carry-bot",
                      draft=False)
    gh.state.add_pull(FORK, 1, title="older", body="<!-- carry:series=demo -->\nolder",
                      head="feature", head_sha=head, base="main", user="alice", draft=False)
    for i, option in enumerate(REMOTE_OPTIONS):
        mark = tmp_path / f"ran-{i}"
        for apply in ([], ["--apply"]):
            r = run_carry("supersede", "demo", "--by", "9", "--forge-repo", FORK, "--repo",
                          str(fork.path), "--remote", option.format(mark=mark), *apply,
                          env=env)
            assert not mark.exists(), f"{option} {apply}: the command ran"
            _one_clean_error(r)
    assert gh.state.writes() == []


@pytest.fixture
def cell(tmp_path: Path, series_root: Path) -> Iterator[tuple[CommitBuilder, Server, Path]]:
    """A CI cell that validated the series `good` cleanly on release v2 (its summary.json
    in the returned folder), with an `origin` fork remote and the GitHub double: what
    `carry ci loop --open-pr` acts on."""
    up = synthetic.upstream_project(tmp_path / "calc")
    git(tmp_path, "init", "-q", "--bare", "origin.git")
    git(up.path, "remote", "add", "origin", str(tmp_path / "origin.git"))
    git(up.path, "push", "-q", "origin", "main")
    synthetic.import_series(series_root, up.path, "good", "fix", sys.executable)
    s = seriesmod.find(series_root, "good")
    s.manifest.targets = [Target(name="release", tags="v*", kind="release")]
    s.manifest.fork = Repository(repo=FORK, remote="origin", branch="main")
    seriesmod.save_manifest(s)
    gh = github_server.start(GITHUB_TOKEN)
    gh.state.repo(FORK)
    gh.state.git[FORK] = tmp_path / "origin.git"
    out = tmp_path / "out"
    r = run_carry("ci", "run", "good", "release", "--ref", "v2", "--repo", str(up.path),
                  "--engine", "local", "--ledger", str(tmp_path / "ledger.json"), "--out",
                  str(out), env=_loop_env(gh, series_root))
    assert r.code == 0, r.err
    yield up, gh, out
    gh.stop()


def _loop_env(gh: Server, root: Path) -> dict[str, str]:
    return {"GITHUB_TOKEN": GITHUB_TOKEN, "GH_TOKEN": "", "GITHUB_API_URL": gh.url,
            "CARRY_SERIES_DIR": str(root), "GIT_TERMINAL_PROMPT": "0"}


def test_a_manifest_fork_remote_named_like_an_option_runs_nothing_in_the_loop(
        tmp_path: Path, series_root: Path, cell: tuple[CommitBuilder, Server, Path]) -> None:
    """The loop job holds the write token: a manifest whose [fork].remote is an option got
    as far as `git ls-remote` (via `carry pr`) and ran the command."""
    up, gh, out = cell
    env = _loop_env(gh, series_root)
    mark = tmp_path / "ran"
    manifest = series_root / "good" / "series.toml"
    text = manifest.read_text()
    manifest.write_text(text.replace('remote = "origin"',
                                     f'remote = "--upload-pack=touch {mark}"'))
    r = run_carry("ci", "loop", str(out / "summary.json"), "--repo", str(up.path),
                  "--open-pr", "--out", str(tmp_path / "loop-out"), env=env)
    assert not mark.exists(), "the manifest's remote ran a command"
    _one_clean_error(r)
    assert "remote" in r.err
    assert gh.state.writes() == []


def test_the_loop_pushes_with_its_token_over_http(
        tmp_path: Path, series_root: Path, cell: tuple[CommitBuilder, Server, Path]) -> None:
    """carry's git children get none of the environment's GIT_CONFIG_*: the loop hands its
    token to its own ls-remote and push (as ci/loop.sh once did through the environment), so
    a fork remote that wants it, as GitHub's does, is pushed to; nothing else sent it."""
    up, gh, out = cell
    served = git_http.start(tmp_path, GITHUB_TOKEN)
    try:
        git(up.path, "remote", "set-url", "origin", served.url("origin.git"))
        r = run_carry("ci", "loop", str(out / "summary.json"), "--repo", str(up.path),
                      "--open-pr", "--out", str(tmp_path / "loop-out"), "--json",
                      env=_loop_env(gh, series_root))
        assert r.code == 0, r.out + r.err
        (act,) = json.loads(r.out)["loop"]
        assert (act["kind"], act["action"]) == ("pr", "opened"), act
        assert git(tmp_path / "origin.git", "rev-parse", "refs/heads/carry/good/tip") == git(
            up.path, "rev-parse", "carry/good/tip")
        assert served.denied == 0  # every request of the push carried the token
        assert GITHUB_TOKEN not in r.out + r.err
    finally:
        served.stop()


def test_no_value_reaches_git_as_an_option(upstream: CommitBuilder, tmp_path: Path) -> None:
    """Every Repo method that takes a rev, a ref, a pattern, a remote or a path, given a value
    that git would take as an option which writes a file or runs a command: nothing is
    written or run (an error, or no answer, is fine)."""
    repo = Repo.open(upstream.path)
    head = upstream.rev("HEAD")
    base = upstream.rev("base")
    marks = tmp_path / "marks"
    marks.mkdir()
    out = f"--output={marks}/o"
    run = f"--upload-pack=touch {marks}/u"
    calls = {
        "rev_parse": lambda: repo.rev_parse(out),
        "ref_exists": lambda: repo.ref_exists(out),
        "merge_base": lambda: repo.merge_base(out, head),
        "is_ancestor": lambda: repo.is_ancestor(out, head),
        "rev_list": lambda: repo.rev_list(out, head),
        "for_each_ref": lambda: repo.for_each_ref(out),
        "version_tags": lambda: repo.version_tags(out),
        "fetch": lambda: repo.fetch(run),
        "fetch_refspec": lambda: repo.fetch_refspec(run, "refs/heads/main"),
        "remote_head": lambda: repo.remote_head(run, "main"),
        "push": lambda: repo.push(run, head, "x", None),
        "push branch": lambda: repo.push(str(upstream.path), head, "a:refs/heads/b", None),
        "remote_default": lambda: repo.remote_default(out),
        "reflog": lambda: repo.reflog(out),
        "create_tag": lambda: repo.create_tag(out, head),
        "first_parent_chain": lambda: repo.first_parent_chain(out, base),
        "format_patch": lambda: repo.format_patch(out, head, [head]),
        "log_patch_ids": lambda: repo.log_patch_ids([out]),
        "cherry_marked": lambda: repo.cherry_marked(out, head),
        "grep_log": lambda: repo.grep_log([out], ["x"]),
        "diff_check": lambda: repo.diff_check(out, head),
        "changed_files": lambda: repo.changed_files(out, head),
        "commits_touching": lambda: repo.commits_touching(out, head, ["src"]),
        "range_diff": lambda: repo.range_diff((out, head), (base, head)),
        "merge_tree": lambda: repo.merge_tree(out, head),
        "show_file": lambda: repo.show_file(out, "README"),
        "cherry_pick": lambda: repo.cherry_pick_no_commit(out),
        "worktree_add": lambda: repo.worktree_add(tmp_path / "wt", out),
        "claim_branch": lambda: repo.claim_branch(out),
    }
    for name, call in calls.items():
        with contextlib.suppress(CarryError):
            call()
        assert sorted(os.listdir(marks)) == [], f"{name}: git took a value as an option"
    assert git(upstream.path, "tag", "--list") == "base"


# -- git's locating variables -----------------------------------------------------------------


def _decoy(tmp_path: Path) -> CommitBuilder:
    """The user's own repository, with uncommitted and staged work: what a git hook's
    GIT_DIR, GIT_WORK_TREE and GIT_INDEX_FILE name."""
    u = CommitBuilder.init(tmp_path / "mine")
    u.commit("Mine", {"notes.txt": "committed\n", "README": "mine\n"})
    (u.path / "notes.txt").write_text("uncommitted work\n")
    (u.path / "staged.txt").write_text("staged work\n")
    git(u.path, "add", "staged.txt")
    return u


def _hook_env(u: CommitBuilder) -> dict[str, str]:
    g = u.path / ".git"
    return {"GIT_DIR": str(g), "GIT_WORK_TREE": str(u.path), "GIT_INDEX_FILE": str(g / "index"),
            "GIT_OBJECT_DIRECTORY": str(g / "objects"), "GIT_COMMON_DIR": str(g),
            "GIT_PREFIX": "", "GIT_NAMESPACE": "elsewhere",
            "GIT_CONFIG_PARAMETERS": "'core.bare'='true'"}


def _state(u: CommitBuilder) -> tuple[object, ...]:
    return ((u.path / "notes.txt").read_bytes(), (u.path / "staged.txt").read_bytes(),
            (u.path / ".git" / "index").read_bytes(), git(u.path, "for-each-ref"),
            git(u.path, "status", "--porcelain"), sorted(os.listdir(u.path)))


def test_carrys_git_children_never_see_the_locating_variables(
        fork: CommitBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each way carry starts git (one command, several at once, cat-file, log piped into
    patch-id, merge-tree, clone, mailinfo, a worktree), run with a hook's variables pointing
    at another repository, answers about --repo and leaves the other one alone. The
    variables are at least those git itself clears for its hooks."""
    listed = subprocess.run(["git", "rev-parse", "--local-env-vars"], capture_output=True,
                            text=True, check=True, cwd="/").stdout.split()
    assert "GIT_DIR" in listed and set(listed) <= childenv.LOCATING
    u = _decoy(tmp_path)
    before = _state(u)
    head = fork.rev("feature")
    expected = {
        "top": fork.path.resolve(), "head": head, "base": fork.rev("main"),
        "ids": git(fork.path, "log", "--format=%H", "main..feature").split(),
        "tree": git(fork.path, "rev-parse", "feature^{tree}"),
        "patch": git(fork.path, "format-patch", "-1", "--stdout", "feature"),
        "diff": git(fork.path, "diff", "main", "feature"),
    }
    with monkeypatch.context() as m:
        for key, value in _hook_env(u).items():
            m.setenv(key, value)
        _use_every_kind_of_child(fork, tmp_path, expected)
    assert _state(u) == before


def _use_every_kind_of_child(fork: CommitBuilder, tmp_path: Path,
                             expected: dict[str, object]) -> None:
    head, base = str(expected["head"]), str(expected["base"])
    repo = Repo.open(fork.path)
    assert repo.path == expected["top"]
    assert repo.rev_parse("feature") == head
    assert repo.read_commit(head).tree == expected["tree"]  # the cat-file process
    assert sorted(c for _, c in repo.log_patch_ids([f"{base}..{head}"])) == sorted(
        expected["ids"])
    assert repo.cherry_marked(base, head, jobs=2, min_split=1) == set()  # several at once
    assert repo.merge_tree(base, head).tree == expected["tree"]
    assert [c for c, _ in repo.format_patch(f"{head}~1", head)] == [head]
    clone = Repo.clone(f"file://{fork.path}", tmp_path / "clone.git")
    assert clone.rev_parse("feature") == head
    headers, _, _ = mailinfo(str(expected["patch"]).encode() + b"\n")
    assert headers["Subject"] == "[PATCH] core: follow-up"
    (applied,) = repo.apply_full(base, [str(expected["diff"]).encode() + b"\n"])
    assert applied == expected["tree"]  # carry's own private index still works
    wt = repo.worktree_add(tmp_path / "wt", head)
    assert (wt.path / "src" / "extra.py").read_text() == "X = 1\n"
    repo.worktree_remove(tmp_path / "wt")


def _spy_code(path: str) -> str:
    return (f"import json, os\n\nwith open({path!r}, 'a') as fh:\n"
            "    fh.write(json.dumps(dict(os.environ)) + '\\n')\n")


def _validated_project(tmp_path: Path, spy: Path) -> tuple[CommitBuilder, Path]:
    """A target whose conftest.py and `repo: local` hook write the environment they see to
    `spy`-pytest and `spy`-hook, with a one-patch series on it."""
    up = CommitBuilder.init(tmp_path / "target")
    up.commit("Target", {
        "calc.py": "def f():\n    return 1\n",
        "tests/__init__.py": "",
        "tests/conftest.py": _spy_code(f"{spy}-pytest"),
        "tests/test_calc.py": "from calc import f\n\n\ndef test_f():\n    assert f() == 2\n",
        "tools/spy.py": _spy_code(f"{spy}-hook"),
        ".pre-commit-config.yaml": "repos:\n  - repo: local\n    hooks:\n      - id: spy\n"
                                   "        name: spy\n        entry: python tools/spy.py\n"
                                   "        language: system\n        pass_filenames: false\n"
                                   "        always_run: true\n",
        "pyproject.toml": "[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
    })
    up.tag("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.commit("Fix f\n\nSigned-off-by: A U Thor <author@example.com>\n",
              {"calc.py": "def f():\n    return 2\n"})
    git(up.path, "checkout", "-q", "main")
    root = tmp_path / "series"
    importer.run(root, "demo", importer.Source(str(up.path), range="base..feature"), title="demo")
    s = seriesmod.find(root, "demo")
    s.manifest.test.python, s.manifest.test.suites = sys.executable, ["tests"]
    s.manifest.test.hooks = [Hook()]
    seriesmod.save_manifest(s)
    return up, root


def _seen(spy: Path, which: str) -> list[dict[str, str]]:
    path = Path(f"{spy}-{which}")
    assert path.exists(), f"the target's {which} code never ran"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _validate(up: CommitBuilder, root: Path, env: dict[str, str]) -> None:
    r = run_carry("validate", "demo", "--repo", str(up.path), "--onto", "base", "--engine",
                  "local", "--series-dir", str(root), "--json", env=env)
    assert r.code == 0, r.out + r.err
    assert json.loads(r.out)["status"] == "passed"


def test_validate_in_a_hook_environment_leaves_the_users_work_alone(tmp_path: Path) -> None:
    """With a hook's GIT_DIR/GIT_WORK_TREE/GIT_INDEX_FILE set, `validate --repo R` ran its
    `reset --hard` in the user's own work tree: uncommitted and staged work was lost."""
    spy = tmp_path / "spy"
    up, root = _validated_project(tmp_path, spy)
    u = _decoy(tmp_path)
    before = _state(u)
    _validate(up, root, _hook_env(u))
    assert _state(u) == before
    for which in ("pytest", "hook"):
        for seen in _seen(spy, which):
            assert not set(seen) & set(_hook_env(u)), which


def test_apply_in_a_hook_environment_writes_into_repo(fork: CommitBuilder, tmp_path: Path,
                                                      series_root: Path) -> None:
    """`apply --repo R` wrote its branch into the repository GIT_DIR named while saying R."""
    r = run_carry("import", "demo", "--repo", str(fork.path), "--range", "main..feature",
                  "--series-dir", str(series_root))
    assert r.code == 0, r.err
    u = _decoy(tmp_path)
    before = _state(u)
    r = run_carry("apply", "demo", "--repo", str(fork.path), "--onto", "main", "--branch",
                  "applied", "--series-dir", str(series_root), env=_hook_env(u))
    assert r.code == 0, r.err
    assert git(fork.path, "rev-parse", "--verify", "-q", "refs/heads/applied")
    assert _state(u) == before


# -- tokens and the target's code -------------------------------------------------------------


def test_the_validated_code_sees_no_token(tmp_path: Path) -> None:
    """A conftest.py and a `repo: local` hook that write out their environment find no
    token there, whichever variable carry read it from."""
    spy = tmp_path / "spy"
    up, root = _validated_project(tmp_path, spy)
    _validate(up, root, {"GH_TOKEN": GH_TOKEN, "GITHUB_TOKEN": GITHUB_TOKEN})
    for which in ("pytest", "hook"):
        for seen in _seen(spy, which):
            text = json.dumps(seen)
            assert GH_TOKEN not in text and GITHUB_TOKEN not in text, which
            assert "GH_TOKEN" not in seen and "GITHUB_TOKEN" not in seen, which


def test_the_token_env_variable_is_kept_from_the_validated_code(tmp_path: Path) -> None:
    """`carry ci --token-env NAME` reads its token from NAME: the cell's validation does not
    pass NAME (nor its value under another name) on."""
    spy = tmp_path / "spy"
    up, root = _validated_project(tmp_path, spy)
    r = run_carry("ci", "--repo", str(up.path), "--onto", "base", "--engine", "local",
                  "--token-env", "CARRY_TEST_TOKEN", "--out", str(tmp_path / "out"),
                  "--series-dir", str(root),
                  env={"CARRY_TEST_TOKEN": OTHER_TOKEN, "ALSO_THE_TOKEN": OTHER_TOKEN,
                       "GH_TOKEN": "", "GITHUB_TOKEN": ""})
    assert r.code == 0, r.out + r.err
    for which in ("pytest", "hook"):
        for seen in _seen(spy, which):
            assert OTHER_TOKEN not in json.dumps(seen), which
            assert "CARRY_TEST_TOKEN" not in seen, which


def test_container_steps_are_given_no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """podman and docker (not installed here) pass a step only what `-e` names, and the
    engine client itself runs without tokens: both environments, as carry builds them."""
    for name, value in (("GH_TOKEN", GH_TOKEN), ("GITHUB_TOKEN", GITHUB_TOKEN),
                        ("GIT_DIR", "/elsewhere/.git")):
        monkeypatch.setenv(name, value)
    from carry.base import redact

    redact.register_env()
    for kind in ("podman", "docker"):
        engine = engines.ContainerEngine(kind, "vllm@sha256:" + "a" * 64, "/opt/venv/bin/python")
        env = engine.step_env()
        assert set(env) <= {"PATH", "HOME", "PIP_DISABLE_PIP_VERSION_CHECK", "GIT_CONFIG_COUNT",
                            "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"}
        assert env["PATH"].startswith("/opt/venv/bin")
    local = engines.LocalEngine(sys.executable).step_env()
    for env in (childenv.untrusted_env(), local):
        assert not {"GH_TOKEN", "GITHUB_TOKEN", "GIT_DIR"} & set(env)
        assert GH_TOKEN not in json.dumps(env) and GITHUB_TOKEN not in json.dumps(env)
    assert childenv.git_env()["GH_TOKEN"] == GH_TOKEN  # git itself may need it to push
