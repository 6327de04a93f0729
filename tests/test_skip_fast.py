"""F18: a mid-series `--skip` does less and checks as much. Its state is checked field by
field once a process (a damaged one is still refused, also when its bytes were checked
before), each reader that changes it gets its own copy, the keep ref is left as it is when
it keeps every commit the new state names (and written again when it does not), and the
resume forms of `carry rebase` are parsed without typer exactly as typer parses them. Real
git, the CLI."""

from __future__ import annotations

import dataclasses
import enum
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CommitBuilder, git, run_carry, util


@pytest.fixture
def two_stops(upstream: CommitBuilder, series_root: Path) -> dict[str, Any]:
    """Five patches onto a moved main: 0002 and 0004 conflict, 0003 applies between them, so
    a skip at 0002 takes 0003 from the trial and stops at 0004."""
    git(upstream.path, "checkout", "-q", "-b", "feature", "base")
    upstream.commit("One: h1", {"src/util.py": util(h1=10)})
    upstream.commit("Two: h10", {"src/util.py": util(h1=10, h10=100)})
    upstream.commit("Three", {"pkg/m3.py": "X = 3\n"})
    upstream.commit("Four: f", {"src/core.py": "def f():\n    return 4\n"})
    upstream.commit("Five", {"pkg/m5.py": "X = 5\n"})
    upstream.checkout("main")
    upstream.commit("Upstream h10", {"src/util.py": util(h10=101)})
    upstream.commit("Upstream f", {"src/core.py": "def f():\n    return 30\n"})
    args = ("--repo", str(upstream.path), "--series-dir", str(series_root))
    assert run_carry("import", "demo", "--range", "base..feature", *args).code == 0
    stop = run_carry("rebase", "demo", "--onto", "main", *args)
    assert stop.code == 1 and "CONFLICT in 0002" in stop.out, stop.err
    return {"up": upstream, "args": args,
            "state": upstream.path / ".git/carry/rebase/demo/main.json",
            "ref": "refs/carry/stops/demo/main"}


def _named(state: dict[str, Any]) -> set[str]:
    """Every commit a saved state names: what its keep ref must keep."""
    out = {state["head"], state["target"]["sha"]}
    out |= {p[k] for p in state["patches"] + state["trial"] for k in ("commit", "source")}
    return {c for c in out if c}


def _kept_after_gc(up: CommitBuilder, commits: set[str]) -> None:
    git(up.path, "gc", "-q", "--prune=now")
    for c in sorted(commits):
        git(up.path, "cat-file", "-e", f"{c}^{{commit}}")  # raises when gc took it


def test_a_skip_leaves_the_keep_ref_that_keeps_its_commits_already(
        two_stops: dict[str, Any]) -> None:
    up, ref = two_stops["up"], two_stops["ref"]
    kept = git(up.path, "rev-parse", ref)
    r = run_carry("rebase", "--skip", *two_stops["args"])
    assert r.code == 1 and "CONFLICT in 0004" in r.out, r.err
    assert git(up.path, "rev-parse", ref) == kept  # the trial's commits were kept already
    state = json.loads(two_stops["state"].read_text())
    assert state["position"] == 3
    _kept_after_gc(up, _named(state))
    done = run_carry("rebase", "--skip", *two_stops["args"])
    assert done.code == 0, done.err
    assert git(up.path, "for-each-ref", "refs/carry/stops") == ""


def test_a_skip_to_a_stop_without_a_hint_starts_only_the_git_it_needs(
        two_stops: dict[str, Any], tmp_path: Path) -> None:
    """No `update-ref` for a keep ref that keeps the commits already, and no history walk
    for a squash hint no upstream subject can give: the repository's discovery and the
    object reader are what a skip starts (one worked out ahead starts none:
    tests/test_skip_memo.py)."""
    trace = tmp_path / "git.trace"
    r = run_carry("rebase", "--skip", *two_stops["args"], env={"GIT_TRACE": str(trace)})
    assert r.code == 1 and "CONFLICT in 0004" in r.out, r.err
    ran = [line.split("trace: built-in: git ", 1)[1].split()[0]
           for line in trace.read_text().splitlines() if "trace: built-in: git " in line]
    assert sorted(ran) == ["cat-file", "rev-parse"], ran


@pytest.mark.parametrize("damage", ["deleted", "keeps too little"])
def test_a_skip_writes_the_keep_ref_again_when_it_lacks_a_commit(
        two_stops: dict[str, Any], damage: str) -> None:
    up, ref = two_stops["up"], two_stops["ref"]
    if damage == "deleted":
        git(up.path, "update-ref", "-d", ref)
    else:  # a commit whose parents are the target alone
        git(up.path, "update-ref", ref, git(up.path, "commit-tree", "-p", "main", "-m", "x",
                                            "main^{tree}"))
    r = run_carry("rebase", "--skip", *two_stops["args"])
    assert r.code == 1 and "CONFLICT in 0004" in r.out, r.err
    _kept_after_gc(up, _named(json.loads(two_stops["state"].read_text())))


def test_a_damaged_state_is_refused_on_the_quick_path(two_stops: dict[str, Any]) -> None:
    up, path = two_stops["up"], two_stops["state"]
    doc = json.loads(path.read_text())
    doc["patches"][0]["commit"] = "not-a-commit"
    path.write_text(json.dumps(doc))
    before = (path.read_bytes(), git(up.path, "rev-parse", two_stops["ref"]))
    for args in (("--skip",), ("demo", "--skip", "--target", "main")):
        r = run_carry("rebase", *args, *two_stops["args"])
        assert r.code == 2 and "is damaged" in r.err and "carry will not act" in r.err, r.err
    assert (path.read_bytes(), git(up.path, "rev-parse", two_stops["ref"])) == before


def _restore(up: CommitBuilder, saved: Path, ref: str, kept: str) -> None:
    folder = up.path / ".git/carry/rebase"
    shutil.rmtree(folder)
    shutil.copytree(saved, folder)
    git(up.path, "update-ref", ref, kept)


@pytest.mark.parametrize("verb", ["--skip", "--continue", "--show-current-patch", "--abort"])
def test_the_quick_parse_and_typer_act_the_same(two_stops: dict[str, Any], tmp_path: Path,
                                                verb: str) -> None:
    """`--repo PATH` is read without typer; `--repo=PATH` is typer's: the same rebase, the
    same output, the same state."""
    up, ref, path = two_stops["up"], two_stops["ref"], two_stops["state"]
    saved, kept = tmp_path / "saved", git(up.path, "rev-parse", ref)
    shutil.copytree(up.path / ".git/carry/rebase", saved)
    repo, series = str(up.path), two_stops["args"][3]
    seen = []
    for form in (("--repo", repo), (f"--repo={repo}",)):
        r = run_carry("rebase", verb, *form, "--series-dir", series, "--json")
        state = json.loads(path.read_text()) if path.exists() else {}
        state.pop("started", None)  # the time the stop was made
        seen.append((r.code, r.out, r.err, state,
                     git(up.path, "for-each-ref", "refs/carry/stops", "refs/heads")))
        _restore(up, saved, ref, kept)
    assert seen[0] == seen[1]
    assert seen[0][0] in (0, 1, 2)


# -- the state, in this process ----------------------------------------------------------------


def test_a_state_read_again_after_damage_is_refused(two_stops: dict[str, Any]) -> None:
    from carry.base.errors import CarryError
    from carry.rebase import state as st

    path = two_stops["state"]
    first = st.read(path, shared=True)
    assert st.read(path, shared=True) is first  # checked once, shared with lookers
    own = st.read(path)
    assert own == first and own is not first
    own.patches[1].forecast.append("mine")  # a reader's own copy: the kept one unchanged
    own.paths.append("mine")
    assert "mine" not in st.read(path, shared=True).paths
    assert st.read(path).patches[1].forecast == first.patches[1].forecast
    doc = json.loads(path.read_text())
    doc["position"] = 99
    path.write_text(json.dumps(doc))
    with pytest.raises(CarryError, match="is damaged"):
        st.read(path)


def test_a_state_this_process_wrote_reads_back_as_written_and_damage_is_refused(
        two_stops: dict[str, Any]) -> None:
    from carry.base.errors import CarryError
    from carry.git import Repo
    from carry.rebase import state as st

    path, repo = two_stops["state"], Repo.open(two_stops["up"].path)
    try:
        state = st.read(path)
        state.paths = ["src/other.py"]
        st.write(repo, path, state)
        back = st.read(path, shared=True)
        assert back == state and back is not state
        state.paths.append("after the write")  # the writer's object: not the kept one
        assert st.read(path, shared=True).paths == ["src/other.py"]
        assert st.RebaseState.from_json(json.loads(path.read_text())) == back
        doc = json.loads(path.read_text())
        doc["head"] = "0" * 39
        path.write_text(json.dumps(doc, indent=1) + "\n")
        with pytest.raises(CarryError, match="is damaged"):
            st.read(path, shared=True)
    finally:
        repo.close()


def _mutables(obj: Any) -> list[Any]:
    """Every list, dict and unfrozen dataclass instance reachable from `obj`."""
    out: list[Any] = []
    todo = [obj]
    while todo:
        o = todo.pop()
        if isinstance(o, (list, dict)):
            out.append(o)
            todo += list(o.values()) if isinstance(o, dict) else list(o)
        elif dataclasses.is_dataclass(o) and not isinstance(o, type):
            if not type(o).__dataclass_params__.frozen:  # type: ignore[attr-defined]
                out.append(o)
            todo += [getattr(o, f.name) for f in dataclasses.fields(o)]
    return out


def test_a_readers_copy_shares_nothing_it_could_change(two_stops: dict[str, Any]) -> None:
    from carry.rebase import state as st

    path = two_stops["state"]
    doc = json.loads(path.read_text())
    doc["patches"][1]["cause"] = {"sha": "a" * 40, "subject": "s", "pr": 1}
    doc["patches"][1]["resolutions"] = ["0002-abc"]
    doc["group"] = [{"branch": "refs/heads/x", "old": None, "head": doc["head"]}]
    path.write_text(json.dumps(doc))
    kept = st.read(path, shared=True)
    own = st.read(path)
    shared = {id(o) for o in _mutables(kept)}
    assert len(shared) > 30 and not [o for o in _mutables(own) if id(o) in shared]
    written = own.to_json()  # what `write` saves: asdict's document, sharing nothing
    assert written["patches"] == [dataclasses.asdict(p) for p in own.patches]
    assert list(written["patches"][1]) == list(dataclasses.asdict(own.patches[1]))
    assert not [o for o in _mutables(written) if id(o) in {id(x) for x in _mutables(own)}]


# -- the quick parse against typer's ----------------------------------------------------------

ACCEPTED = [
    ["rebase", "--skip"],
    ["rebase", "--skip", "--repo", "/r", "--series-dir", "/s"],
    ["rebase", "demo", "--continue", "--target", "a", "--target", "b", "--onto", "x"],
    ["rebase", "--abort", "demo", "--json", "-v"],
    ["rebase", "--show-current-patch", "--verbose", "--force"],
    ["rebase", "--resolve", "--repo", ""],
    ["rebase", "--quit", "--series-dir", "rel/dir", "--onto", "v1"],
    ["rebase", "--skip", "--target", "t", "demo"],
    ["rebase", "--skip", "--series-dir", "", "--target", "", "~/x"],
    ["rebase", "--continue", "--series-dir", "~/series", "--repo", "~/r", "--force"],
]
REFUSED = [
    [], ["--version"], ["edit", "--skip"], ["rebase"], ["rebase", "demo"],
    ["rebase", "--skip", "--continue"], ["rebase", "--skip", "--skip"],
    ["rebase", "--skip", "--repo=/r"], ["rebase", "--skip", "--repo"],
    ["rebase", "--skip", "--repo", "-x"], ["rebase", "--skip", "a", "b"],
    ["rebase", "--skip", "--branch", "b"], ["rebase", "--skip", "--dry-run"],
    ["rebase", "--skip", "--refresh"], ["rebase", "--skip", "--"], ["rebase", "--skip", "-h"],
    ["rebase", "--skip", "-v", "--verbose"], ["rebase", "--skip", "--target"],
    ["rebase", "--skip", "-"], ["rebase", "--skip", "--no-auto-resolve"],
]
ENVS = [{}, {"CARRY_REPO": "/env/repo"}, {"CARRY_REPO": ""},
        {"CARRY_SERIES_DIR": "/env/series", "CARRY_REPO": "/env/repo"}]


def _typer_reads(argv: list[str]) -> Any:
    """What typer gives `carry rebase` for `argv`, through typer's own click command and
    its own conversions (as its wrapper applies them before calling the command)."""
    import typer.main

    from carry.cli import main, rebasing
    from carry.cli.app import app
    from carry.cli.rebase import rebase

    main.register(["rebase"])
    group = typer.main.get_command(app)
    ctx = group.make_context("carry", list(argv))
    name, cmd, rest = group.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
    assert name == "rebase" and cmd is not None
    params = cmd.make_context(name, rest, parent=ctx).params
    _, convert, _ = typer.main.get_params_convertors_ctx_param_name_from_function(rebase)
    return rebasing.RebaseArgs(**{k: convert[k](v) if k in convert else v
                                  for k, v in params.items()})


@pytest.mark.parametrize("env", ENVS, ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()))
@pytest.mark.parametrize("argv", ACCEPTED, ids=" ".join)
def test_the_quick_parse_reads_what_typer_reads(argv: list[str], env: dict[str, str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from carry.cli import rebasing

    for var in ("CARRY_REPO", "CARRY_SERIES_DIR"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    quick = rebasing.quick(argv, os.environ)
    assert quick is not None
    assert quick == _typer_reads(argv)


@pytest.mark.parametrize("argv", REFUSED, ids=lambda a: " ".join(a) or "nothing")
def test_the_quick_parse_leaves_the_rest_to_typer(argv: list[str]) -> None:
    from carry.cli import rebasing

    assert rebasing.quick(argv, {}) is None
    assert rebasing.quick(["rebase", "--skip"], {"_CARRY_COMPLETE": "bash_source"}) is None


# -- the squash hint at a stop a skip reaches -------------------------------------------------


@pytest.mark.parametrize("kept", ["sound", "damaged", "gone"])
def test_a_skip_gives_the_squash_hint_as_the_first_call_does(
        upstream: CommitBuilder, series_root: Path, kept: str) -> None:
    sd = ("--series-dir", str(series_root))
    assert run_carry("init", "demo", "--upstream", "acme/widget", "--fork", "me/widget",
                     "--base", "base", *sd).code == 0
    git(upstream.path, "checkout", "-q", "-b", "feature", "base")
    upstream.commit("Fix the h10 boundary", {"src/util.py": util(h10=100)})
    upstream.commit("Three", {"pkg/m3.py": "X = 3\n"})
    upstream.commit("Tweak f", {"src/core.py": "def f():\n    return 4\n"})
    upstream.checkout("main")
    upstream.commit("Rework h10", {"src/util.py": util(h10=101)})
    upstream.commit("Tweak f (#7)", {"src/core.py": "def f():\n    return 30\n"})
    args = ("--repo", str(upstream.path), *sd)
    assert run_carry("import", "demo", "--range", "base..feature", *args).code == 0
    stop = run_carry("rebase", "demo", "--onto", "main", *args)
    assert stop.code == 1 and "CONFLICT in 0001" in stop.out and "hint:" not in stop.out
    folder = upstream.path / ".git/carry/squash"
    [answer] = list(folder.iterdir())
    if kept == "damaged":  # it says no upstream subject is the series', but not soundly
        answer.write_bytes(b"0" * 64 + b"\n[]")
    elif kept == "gone":
        shutil.rmtree(folder)
    r = run_carry("rebase", "--skip", *args)
    assert r.code == 1 and "CONFLICT in 0003" in r.out, r.err
    squash = upstream.rev("main")
    hint = next(ln for ln in r.out.splitlines() if "hint:" in ln)
    assert f'upstream {squash[:12]} "Tweak f (#7)"' in hint
    assert ('[[provenance]] pr = "acme/widget#7", role = "upstream-equivalent", '
            f'patches = [3], merged_as = "{squash[:12]}"') in hint


# -- the checks' shortcuts give what the full checks give ---------------------------------------


class _Maybe(enum.Enum):
    NOTHING = None
    SOMETHING = "something"


@dataclasses.dataclass
class _Shapes:
    s: str
    n: int
    b: bool
    o: str | None
    m: _Maybe | None
    a: Any | None = 0


@pytest.mark.parametrize(("field", "value", "wanted"), [
    ("s", "x", "x"), ("n", 3, 3), ("b", True, True), ("o", None, None), ("o", "y", "y"),
    ("m", None, _Maybe.NOTHING), ("m", "something", _Maybe.SOMETHING), ("a", None, None),
    ("n", True, "expected an integer"), ("b", 1, "expected true or false"),
    ("s", None, "expected a string"), ("o", 1, "expected a string or null"),
])
def test_a_checked_field_is_what_the_full_check_gives(field: str, value: Any,
                                                      wanted: Any) -> None:
    from carry.base import untrusted

    doc = {"s": "", "n": 0, "b": False, "o": None, "m": "something", field: value}
    if isinstance(wanted, str) and wanted.startswith("expected"):
        with pytest.raises(untrusted.BadData, match=wanted):
            untrusted.build(_Shapes, doc, "doc")
    else:
        got = getattr(untrusted.build(_Shapes, doc, "doc"), field)
        assert got == wanted and type(got) is type(wanted)


def test_the_states_a_process_keeps_are_the_newest_64(two_stops: dict[str, Any]) -> None:
    """A long run (the CI loop) writes many states: the ones it keeps checked are bounded."""
    from carry.git import Repo
    from carry.rebase import state as st

    path, repo = two_stops["state"], Repo.open(two_stops["up"].path)
    try:
        state = st.read(path)
        for i in range(70):
            state.paths = [f"src/file{i}.py"]
            st.write(repo, path, state)
        assert len(st._CHECKED) <= 64
        assert st.read(path, shared=True).paths == ["src/file69.py"]
    finally:
        repo.close()
