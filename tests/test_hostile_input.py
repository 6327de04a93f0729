"""Untrusted input and secrets: what the code under test prints, a token in a remote's
URL, documents nested 3,000 deep or of the wrong types, links out of a series, and refs that
are not file names. Real CLI, real git, real pytest in the validated tree.

The bad-input walk (tests/test_bad_input_walk.py) feeds the same classes to every command
one input at a time; these are the cases that need more than one command to show.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tomllib
from pathlib import Path

import pytest

from carry.base import redact, untrusted
from carry.base.errors import CarryError
from carry.job.cells import artifact_name
from carry.series import store as seriesmod
from carry.series.store import Target
from carry.validate import cache
from tests import github_server
from tests.conftest import FORGE_TOKEN, FORK, TOBY, CommitBuilder, git, run_carry
from tests.validate import synthetic

# Built from two halves in the target's test, so only what it prints carries the whole token.
TOKEN = "ghp_hostileTargetPrint0123456789abcd"
LEAKY_TEST = '''

def test_prints_a_token():
    token = "ghp_" + "hostileTargetPrint0123456789abcd"
    print("token=" + token)
    print("url=https://bot:" + token + "@github.com/lab/fork.git")
    assert token == "", "the token is " + token
'''
DEEP = "[" * 3000 + "]" * 3000


def _files(*roots: Path) -> dict[Path, bytes]:
    out: dict[Path, bytes] = {}
    for root in roots:
        paths = [root] if root.is_file() else sorted(root.rglob("*"))
        for p in paths:
            if p.is_file() and not p.is_symlink():
                out[p] = p.read_bytes()
    return out


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    return lines[0]


# -- 1. one scrubber for every file and stream ---------------------------------------------


def test_a_token_the_target_prints_reaches_no_file_and_no_stream(tmp_path: Path,
                                                                  series_root: Path) -> None:
    up = synthetic.upstream_project(tmp_path / "calc")
    up.checkout("v1")
    up.commit("[BugFix] retained() keeps the state below the last boundary (leaky)",
              {"calc/core.py": synthetic.SPDX_LINE + synthetic.CORE.format(fix=synthetic.FIX)},
              author=TOBY)
    up.commit("Test that prints a token", {"tests/test_core.py": synthetic.TEST_CORE
                                           + LEAKY_TEST})
    up.branch("fork/leaky")
    up.checkout("main")
    synthetic.import_series(series_root, up.path, "leaky", "leaky", sys.executable)
    s = seriesmod.find(series_root, "leaky")
    s.manifest.targets = [Target(name="main", ref="main", kind="main")]
    seriesmod.save_manifest(s)
    out, ledger, step_summary = tmp_path / "out", tmp_path / "ledger.json", tmp_path / "step.md"
    env = {"GITHUB_TOKEN": TOKEN, "CARRY_SERIES_DIR": str(series_root),
           "GITHUB_STEP_SUMMARY": str(step_summary)}

    cell = run_carry("ci", "run", "leaky", "main", "--ref", "main", "--repo", str(up.path),
                     "--engine", "local", "--ledger", str(ledger), "--out", str(out), "--json",
                     env=env)
    assert cell.code == 1, cell.err  # the target's test fails, on purpose
    direct = run_carry("validate", "leaky", "--repo", str(up.path), "--onto", "main",
                       "--engine", "local", "--no-cache", "--json", env=env)
    assert direct.code == 1, direct.err
    cached = run_carry("validate", "leaky", "--repo", str(up.path), "--onto", "main",
                       "--engine", "local", "--json", env=env)
    assert cached.code == 1 and json.loads(cached.out)["cached"], cached.err
    for r in (cell, direct, cached):
        assert TOKEN not in r.out + r.err

    files = _files(out, ledger, step_summary, series_root, up.path / ".git" / "carry")
    leaked = [str(p) for p, data in files.items() if TOKEN.encode() in data]
    assert leaked == [], leaked
    logs = b"".join(data for p, data in files.items() if p.suffix == ".log")
    assert b"token=***" in logs and b"url=https://***@github.com" in logs  # it did print
    report = json.loads(direct.out)
    assert any("***" in f["message"] for f in report["tests"]["failures"])
    assert (out / artifact_name("leaky", "main")).is_file() and ledger.is_file()


def test_scrubbing_bytes_masks_tokens_and_url_credentials_in_any_form() -> None:
    redact.register("tok_registered_value_42")
    raw = (b"a tok_registered_value_42 b https://u:pw123456@h/x https:/u:pw123456@h/x "
           b"\xff not utf-8")
    clean = redact.scrub_bytes(raw)
    assert b"tok_registered" not in clean and b"pw123456" not in clean
    assert clean.endswith(b"\xff not utf-8")
    # A path normaliser turns scheme:// into scheme:/ (Path("https://x:T@h")): still masked.
    assert redact.scrub(str(Path("https://x:pathnormalisedtoken@h/r.git"))) == \
        "https:/***@h/r.git"


# -- 2. tokens in URLs ----------------------------------------------------------------------


def test_init_stores_remote_urls_without_their_credentials(tmp_path: Path,
                                                           upstream: CommitBuilder,
                                                           series_root: Path) -> None:
    secret = "ghs_cloneToken0123456789abcdefgh"
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", str(work))
    git(work, "remote", "add", "upstream", f"https://bot:{secret}@github.com/acme/widget.git")
    git(work, "remote", "add", "fork", f"https://{secret}@github.com/me/widget.git")
    git(work, "fetch", "-q", str(upstream.path), "+refs/heads/main:refs/remotes/upstream/main")
    r = run_carry("init", "fix", "--upstream", "acme/widget", "--fork", "me/widget", "--repo",
                  str(work), "--series-dir", str(series_root), "--json",
                  env={"GITHUB_TOKEN": "", "GH_TOKEN": ""})
    assert r.code == 0, r.err
    text = (series_root / "fix" / "series.toml").read_text()
    assert secret not in text + r.out + r.err
    m = tomllib.loads(text)
    assert m["upstream"]["url"] == "https://github.com/acme/widget.git"
    assert m["fork"]["url"] == "https://github.com/me/widget.git"


@pytest.mark.parametrize("cmd", [
    ["status", "demo", "--repo"], ["init", "other", "--upstream", "o/u", "--fork", "o/f",
                                   "--repo"],
    ["apply", "demo", "--onto", "base", "--branch", "x", "--repo"],
    ["check", "demo", "--against-repo"],
    ["supersede", "demo", "--by", "3", "--forge-repo", "lab/fork", "--repo"]])
def test_a_repo_url_with_a_token_is_never_printed(cmd: list[str], upstream: CommitBuilder,
                                                  series_root: Path) -> None:
    secret = "repoUrlSecret0123456789"
    env = {"CARRY_SERIES_DIR": str(series_root), "GITHUB_TOKEN": "", "GH_TOKEN": ""}
    assert run_carry("import", "demo", "--repo", str(upstream.path), "--range",
                     "base~1..base", env=env).code == 0
    for url in (f"https://x:{secret}@127.0.0.1:9/r.git", f"https://{secret}@127.0.0.1:9/r.git",
                f"ssh://git:{secret}@127.0.0.1:9/r.git"):
        r = run_carry(*cmd, url, env=env)
        assert r.code == 2, r.out + r.err
        line = _one_line(r.err)
        assert secret not in r.out + r.err, line
        assert "***@127.0.0.1" in line


# -- 3. one reader for untrusted documents ---------------------------------------------------


def test_series_list_shows_a_deep_manifest_as_a_row(upstream: CommitBuilder,
                                                    series_root: Path) -> None:
    env = {"CARRY_SERIES_DIR": str(series_root)}
    for name in ("good", "deep"):
        assert run_carry("import", name, "--repo", str(upstream.path), "--range",
                         "base~1..base", env=env).code == 0
    manifest = series_root / "deep" / "series.toml"
    manifest.write_text(manifest.read_text() + f"\nx = {DEEP}\n")
    r = run_carry("series", "list", "--json", env=env)
    assert r.code == 1 and "internal error" not in r.err, r.err
    rows = {row["name"]: row for row in json.loads(r.out)}
    assert set(rows) == {"good", "deep"}
    assert "nested more than 64 levels deep" in rows["deep"]["error"]


def test_a_damaged_last_report_and_cache_entry_are_treated_as_none(
        upstream: CommitBuilder, series_root: Path, tmp_path: Path) -> None:
    env = {"CARRY_SERIES_DIR": str(series_root)}
    assert run_carry("import", "demo", "--repo", str(upstream.path), "--range",
                     "base~1..base", env=env).code == 0
    last = upstream.path / ".git" / "carry" / "validate" / "last-demo.json"
    last.parent.mkdir(parents=True)
    for data in (DEEP, '{"status": ' + DEEP + "}"):
        last.write_text(data)
        r = run_carry("status", "demo", "--repo", str(upstream.path), "--json", env=env)
        assert r.code == 0, r.err
        assert json.loads(r.out)["series"][0]["validation"] is None
    store = tmp_path / "cache"
    k = cache.key({"x": 1})
    for data in (DEEP, json.dumps({"cache_key": k, "steps": "all"}),
                 json.dumps({"cache_key": k, "series": None})):
        store.mkdir(exist_ok=True)
        (store / (k.removeprefix("sha256:") + ".json")).write_text(data)
        assert cache.load(store, k) is None  # a miss: the validation runs again
    os.mkfifo(store / "early-x.json")
    assert cache.follow(store, "sha256:x") is None  # and a FIFO is never waited on


def test_a_summary_of_the_wrong_shape_is_refused_in_one_line(upstream: CommitBuilder,
                                                             series_root: Path,
                                                             tmp_path: Path) -> None:
    env = {"CARRY_SERIES_DIR": str(series_root), "GITHUB_TOKEN": "ghp_x_summaryshape_1234"}
    assert run_carry("import", "demo", "--repo", str(upstream.path), "--range",
                     "base~1..base", env=env).code == 0
    row = {"series": "demo", "target": "t", "onto": "base", "rebase": "applied"}
    summary = tmp_path / "summary.json"
    for bad in ({"series": None}, {"series": ["demo"]}, {"series": 5}, {"applied": "2"},
                {"stop": {"file": 1}}, {"dropped": [None]}, {"would_conflict": "x"}):
        summary.write_text(json.dumps({"rows": [{**row, **bad}]}))
        r = run_carry("ci", "loop", str(summary), "--repo", str(upstream.path), "--open-pr",
                      "--dry-run", "--forge-repo", "lab/fork", "--out", str(tmp_path / "o"),
                      env=env)
        assert r.code == 2, (bad, r.out, r.err)
        assert "is not a carry ci summary.json" in _one_line(r.err), bad


def test_a_kept_version_or_tag_whose_manifest_is_not_toml(upstream: CommitBuilder,
                                                          tmp_path: Path) -> None:
    """In a checkout the versions are tags: one whose manifest is not TOML (or nests too
    deep, or is not UTF-8) is refused in one line by range-diff."""
    toolkit = tmp_path / "toolkit"
    git(tmp_path, "init", "-q", str(toolkit))
    root = toolkit / "series"
    env = {"CARRY_SERIES_DIR": str(root)}
    assert run_carry("import", "demo", "--repo", str(upstream.path), "--range",
                     "base~1..base", env=env).code == 0
    for i, manifest in enumerate((b"name = [\n", f"x = {DEEP}\n".encode(), b"t = 'caf\xe9'\n")):
        blob = git(toolkit, "hash-object", "-w", "--stdin", input=manifest)
        tree = git(toolkit, "mktree", input=f"100644 blob {blob}\tseries.toml\n".encode())
        git(toolkit, "tag", "-f", f"series/demo/v{7 + i}", tree)
        r = run_carry("range-diff", "demo", f"v{7 + i}", "--repo", str(upstream.path), env=env)
        assert r.code == 2, r.out + r.err
        assert "series.toml" in _one_line(r.err)


def test_the_one_reader_refuses_fifos_links_and_oversized_files(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # nobody writes: a blocking open would wait forever
    with pytest.raises(CarryError, match="not a regular file .a FIFO."):
        untrusted.read_json(fifo)
    real = tmp_path / "real.json"
    real.write_text("{}")
    (tmp_path / "link.json").symlink_to(real)
    with pytest.raises(CarryError, match="symbolic link"):
        untrusted.read_json(tmp_path / "link.json")
    with pytest.raises(CarryError, match="more than carry reads"):
        untrusted.read_bytes(real, limit=1)
    with pytest.raises(untrusted.BadData, match="nested more than 64"):
        untrusted.loads_json(DEEP)
    with pytest.raises(untrusted.BadData, match="nested more than 64"):
        untrusted.loads_toml("a." * 3000 + "b = 1\n")  # dotted keys nest without recursing
    assert untrusted.loads_json('["[[[[", {"a": "]]]"}]') == ["[[[[", {"a": "]]]"}]
    for text in ("²", "1" * 5000, "", "-1", " 1", "1\n", "٣"):
        assert untrusted.ascii_int(text) is None, text
    assert untrusted.ascii_int("0042") == 42


def test_build_reads_an_enum_by_its_value_and_nothing_else() -> None:
    """A status saved as its value comes back as the enum member; another string, a number
    equal to a value, or a value of another type is bad data, not a member."""
    from carry.replay.engine import PatchResult, PatchStatus

    entry = {"number": 1, "file": "0001-a.patch", "subject": "a", "author": "A U Thor",
             "status": "would-conflict"}
    built = untrusted.build(PatchResult, entry, "patch")
    assert built.status is PatchStatus.WOULD_CONFLICT and built.status == "would-conflict"
    for bad in ("half", "", None, 1, True, ["applied"]):
        with pytest.raises(untrusted.BadData, match=r"patch\.status: expected one of applied"):
            untrusted.build(PatchResult, {**entry, "status": bad}, "patch")


# -- 5. cells whose ref is not a file name -------------------------------------------------


class _Reader:
    """A thread that reads a FIFO once a writer opens it: a carry that blocks on opening the
    FIFO for writing gets its reader (and goes on) instead of hanging the test."""

    def __init__(self, path: Path) -> None:
        import threading

        self.path, self.data = path, b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as fh:  # blocks until a writer opens the FIFO
            self.data = fh.read()

    def finish(self) -> bytes:
        # a writer: a reader still waiting in open() returns and reads an end (ENXIO: the
        # reader is done already)
        with contextlib.suppress(OSError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
        self.thread.join()
        return self.data


@pytest.mark.parametrize("ref", ["upstream/main", "rel/1.2.0"])
def test_a_cell_on_a_ref_with_a_slash_is_recorded_and_read_back(
        ref: str, tmp_path: Path, series_root: Path) -> None:
    up = synthetic.upstream_project(tmp_path / "calc")
    if ref.startswith("upstream/"):
        git(up.path, "update-ref", f"refs/remotes/{ref}", "main")
        target = Target(name="upstream-main", ref=ref, kind="main")
    else:
        up.tag(ref, "main")
        target = Target(name="release", tags="rel/*", kind="release")
    synthetic.import_series(series_root, up.path, "good", "fix", sys.executable)
    s = seriesmod.find(series_root, "good")
    s.manifest.targets = [target]
    seriesmod.save_manifest(s)
    step_summary = tmp_path / "step-summary"
    os.mkfifo(step_summary)  # $GITHUB_STEP_SUMMARY as a FIFO: never waited on
    reader = _Reader(step_summary)
    env = {"CARRY_SERIES_DIR": str(series_root), "GITHUB_STEP_SUMMARY": str(step_summary)}
    out, cell_ledger, ledger = tmp_path / "out", tmp_path / "cell.json", tmp_path / "ledger.json"

    def matrix() -> list[dict[str, str]]:
        r = run_carry("ci", "matrix", "--repo", str(up.path), "--ledger", str(ledger), env=env)
        assert r.code == 0, r.err
        cells: list[dict[str, str]] = json.loads(r.out)["include"]
        return cells

    (cell,) = matrix()
    assert cell["ref"] == ref
    r = run_carry("ci", "run", "good", cell["target"], "--ref", ref, "--repo", str(up.path),
                  "--engine", "local", "--ledger", str(cell_ledger), "--out", str(out),
                  "--json", env=env)
    assert r.code == 0, r.out + r.err
    assert reader.finish() == b"" and "GITHUB_STEP_SUMMARY not written" in r.err
    (row,) = json.loads(r.out)["rows"]
    assert row["validate"] == "passed"
    artifact = out / artifact_name("good", ref)
    assert Path(row["report"]) == artifact and artifact.parent == out
    assert json.loads(artifact.read_text())["status"] == "passed"
    summary = json.loads((out / "summary.json").read_text())
    assert (out / Path(summary["rows"][0]["report"]).name) == artifact  # what ci loop reads
    merged = run_carry("ci", "merge-ledger", str(cell_ledger), "--ledger", str(ledger))
    assert merged.code == 0 and "1 new record" in merged.out, merged.err
    assert matrix() == []  # recorded: the next scheduled run does not run it again


def test_artifact_names_are_file_names_and_never_shared() -> None:
    refs = ["upstream/main", "upstream%2Fmain", "upstream-main", "upstream_main", "rel/1.2.0",
            "rel%2F1.2.0", "a/../b", "..", ".", "v1", "ünï/cödé", "x" * 300, "x" * 301,
            "%sha256-" + "0" * 64, "sp ace", "new\nline"]
    names = [artifact_name("demo", r) for r in refs]
    assert len(set(names)) == len(names)
    for n in names:
        assert "/" not in n and "\n" not in n and len(n.encode()) <= 255
        assert n.startswith("demo--") and n.endswith(".json")
    assert artifact_name("demo", "upstream/main") == "demo--upstream%2Fmain.json"



# -- 4. numbers int() and the calendar refuse --------------------------------------------------


def test_scratch_names_with_odd_pids_are_left_alone(upstream: CommitBuilder,
                                                    series_root: Path) -> None:
    """Another user's file in /tmp or .git/carry named like carry's scratch, with a pid that
    is `²` or twenty digits, made int() or kill() raise in every later run."""
    env = {"CARRY_SERIES_DIR": str(series_root)}
    assert run_carry("import", "demo", "--repo", str(upstream.path), "--range",
                     "base~1..base", env=env).code == 0
    carry_dir = upstream.path / ".git" / "carry"
    carry_dir.mkdir(exist_ok=True)
    odd = [carry_dir / f"carry-index-{pid}-x" for pid in ("\u00b2", "9" * 20, "1" * 5000)]
    for p in odd[:2]:
        p.write_bytes(b"")
    r = run_carry("rebase", "demo", "--repo", str(upstream.path), "--onto", "main",
                  "--dry-run", env=env)
    assert r.code == 0, r.err
    assert all(p.exists() for p in odd[:2])  # not carry's: never removed
    from carry.base import scratch

    assert not any(scratch.maker_dead(p.name, "carry-index-") for p in odd)


def test_an_author_date_beyond_the_calendar_is_shown_as_it_is(upstream: CommitBuilder,
                                                              series_root: Path) -> None:
    import base64

    env = {"CARRY_SERIES_DIR": str(series_root)}
    assert run_carry("import", "demo", "--repo", str(upstream.path), "--range",
                     "base~1..base", env=env).code == 0
    (patch,) = (series_root / "demo" / "patches").iterdir()
    author = base64.b64encode(b"A U Thor <author@example.com> 99999999999999999999 +0000")
    patch.write_bytes(patch.read_bytes().replace(b"\n\n", b"\nX-Carry-Author: " + author
                                                 + b"\n\n", 1))
    r = run_carry("check", "demo", "-v", env=env)  # each patch's date: -v
    assert "internal error" not in r.err and r.code in (0, 1), r.err
    assert "date 99999999999999999999 +0000" in r.out


@pytest.mark.parametrize("reset", ["9" * 30, "-" + "9" * 30, "1e400", "nan"])
def test_a_rate_limit_reset_beyond_the_calendar_is_one_line(
        reset: str, gh: github_server.RunningServer, fork: CommitBuilder,
        series_root: Path) -> None:
    """X-RateLimit-Reset is the server's: carry shows it as it came when it is no time."""
    env = {"GITHUB_TOKEN": FORGE_TOKEN, "GITHUB_API_URL": gh.url,
           "CARRY_SERIES_DIR": str(series_root)}
    assert run_carry("import", "demo", "--repo", str(fork.path), "--range", "main..feature",
                     env=env).code == 0
    gh.state.rate_limited, gh.state.rate_reset = True, reset
    r = run_carry("supersede", "demo", "--by", "9", "--forge-repo", FORK, "--apply",
                  "--max-wait", "0", env=env)
    assert r.code == 2, r.err
    _one_line(r.err)  # PyGithub itself refuses 1e400 and nan; carry the two numbers


def test_a_manifest_with_a_5000_digit_number_is_one_line(upstream: CommitBuilder,
                                                         series_root: Path) -> None:
    """tomllib's int() refuses 5,000 digits with a ValueError that is no TOMLDecodeError."""
    env = {"CARRY_SERIES_DIR": str(series_root)}
    assert run_carry("import", "demo", "--repo", str(upstream.path), "--range",
                     "base~1..base", env=env).code == 0
    manifest = series_root / "demo" / "series.toml"
    manifest.write_text(manifest.read_text().replace("version = 1", "version = " + "1" * 5000))
    r = run_carry("status", "demo", env=env)
    assert r.code == 2 and "Traceback" not in r.err and "internal error" not in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1 and "4,300 digits" in r.err, r.err


def test_a_cache_entry_with_a_status_carry_never_writes_is_a_miss(tmp_path: Path) -> None:
    """A step's status is one of the words carry writes: an entry that says `passd` (or
    anything else) answered before as if it were a report of carry's."""
    from carry.base.data import to_data
    from carry.validate.results import Report, Status, StepResult

    k = cache.key({"x": 2})
    step = StepResult("pytest", "tests", "pytest -q", Status.PASSED)
    report = Report("demo", 1, "v1", "a" * 40, "b" * 40, "c" * 40, "local", "", "python3",
                    [], [step], None, [], "no tests", Status.PASSED, k, "", "", 0.0)
    store = tmp_path / "cache"
    store.mkdir()
    data = to_data(report)
    entry = store / (k.removeprefix("sha256:") + ".json")
    entry.write_text(json.dumps(data))
    assert cache.load(store, k) is not None
    for bad in ({"status": "passd"}, {"status": ["passed"]}, {"steps": [{**data["steps"][0],
                                                                          "status": "PASSED"}]}):
        entry.write_text(json.dumps({**data, **bad}))
        assert cache.load(store, k) is None, bad
