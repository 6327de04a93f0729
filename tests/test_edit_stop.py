"""carry edit NAME N: a stop at patch N in a worktree, as git rebase -i's edit; --continue
writes the amended patch as the next version with its author, author date and number, the
later patches replayed on it (a conflict stops as a rebase does); --abort puts everything
back. Real git, the CLI, a three-patch series by two authors."""

from __future__ import annotations

import json
from pathlib import Path

from carry.series import store as seriesmod
from tests.conftest import CommitBuilder, git, run_carry


def _series(fork: CommitBuilder, root: Path) -> tuple[str, ...]:
    args = ("--repo", str(fork.path), "--series-dir", str(root))
    assert run_carry("import", "demo", "--range", "main..feature", *args).code == 0
    return args


def _files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "demo" / "patches").iterdir())}


def _header(patch: bytes, key: bytes) -> bytes:
    return next(ln for ln in patch.splitlines() if ln.startswith(key + b": "))


def test_edit_amends_one_patch_and_keeps_its_author_date_and_number(
        fork: CommitBuilder, series_root: Path) -> None:
    args = _series(fork, series_root)
    before = _files(series_root)
    r = run_carry("edit", "demo", "2", "--json", *args)
    assert r.code == 0, r.err
    stop = json.loads(r.out)
    wt = Path(stop["worktree"])
    assert stop["patch"].startswith("0002-") and stop["author"] == "Toby Mao"
    assert git(wt, "rev-parse", "HEAD") == stop["commit"]
    assert git(wt, "log", "-1", "--format=%s", "HEAD") == "util: add h20"
    assert "carry rebase" in stop["next"] and "--continue" in stop["next"]
    # amend as a maintainer would: content and message, even resetting the author
    (wt / "src" / "util.py").write_text("def h20():\n    return 20\n\n\ndef h21():\n"
                                        "    return 21\n")
    git(wt, "commit", "-q", "-a", "--amend", "--reset-author", "-m",
        "util: add h20 and h21\n\nSigned-off-by: Toby Mao <toby@example.com>\n")
    done = run_carry("rebase", "--continue", "--json", cwd=wt,
                     env={"CARRY_SERIES_DIR": str(series_root)})
    assert done.code == 0, done.err
    [d] = json.loads(done.out)
    assert d["status"] == "applied" and d["refreshed"]["version"] == 2
    after = _files(series_root)
    assert sorted(after) == sorted(before)  # every number and file name kept
    name2 = next(n for n in after if n.startswith("0002-"))
    assert b"Subject: util: add h20 and h21" in after[name2]
    assert b"+def h21():" in after[name2]
    for key in (b"From", b"Date"):  # Toby's, as before, not the amending user's
        assert _header(after[name2], key) == _header(before[name2], key)
    name1 = next(n for n in after if n.startswith("0001-"))
    # the patch before it is the same patch: only its `From <sha>` line names a new commit,
    # as after any rebase --refresh
    assert after[name1].split(b"\n", 1)[1] == before[name1].split(b"\n", 1)[1]
    name3 = next(n for n in after if n.startswith("0003-"))
    assert _header(after[name3], b"Subject") == _header(before[name3], b"Subject")
    s = seriesmod.find(series_root, "demo")
    assert s.manifest.version == 2 and "edited 0002" in s.manifest.changelog[-1].summary
    branch = d["branch"].removeprefix("refs/heads/")
    assert git(fork.path, "log", "--format=%s", "-3", branch).splitlines() == [
        "core: follow-up", "util: add h20 and h21", "core: fix f"]
    assert not (fork.path / ".git/carry/rebase/demo").exists() or not list(
        (fork.path / ".git/carry/rebase/demo").glob("*.json"))


def test_a_later_conflict_stops_as_a_rebase_and_abort_puts_everything_back(
        fork: CommitBuilder, series_root: Path) -> None:
    args = _series(fork, series_root)
    before = _files(series_root)
    stop = json.loads(run_carry("edit", "demo", "1", "--json", *args).out)
    wt = Path(stop["worktree"])
    (wt / "src" / "extra.py").write_text("X = 0\n")  # patch 3 adds this file: a conflict
    git(wt, "add", "src/extra.py")
    r = run_carry("rebase", "--continue", "--json", *args)
    assert r.code == 1, r.err
    [d] = json.loads(r.out)
    assert d["status"] == "conflict" and d["conflict"]["file"].startswith("0003-")
    assert d["conflict"]["worktree"] == str(wt)  # the same worktree, moved to the conflict
    shown = run_carry("rebase", "--show-current-patch", *args)
    assert "core: follow-up" in shown.out
    aborted = run_carry("rebase", "--abort", *args)
    assert aborted.code == 0, aborted.err
    assert _files(series_root) == before and seriesmod.find(series_root, "demo").manifest \
        .version == 1
    assert not wt.exists()
    assert git(fork.path, "for-each-ref", "refs/heads/carry/") == ""


def test_edit_refuses_what_it_cannot_do_in_one_line(fork: CommitBuilder,
                                                    series_root: Path) -> None:
    args = _series(fork, series_root)
    r = run_carry("edit", "demo", "7", *args)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert "series demo has no patch 7 (its patches: 1, 2, 3)" in r.err
    stop = json.loads(run_carry("edit", "demo", "3", "--json", *args).out)
    wt = Path(stop["worktree"])
    git(wt, "commit", "-q", "--allow-empty", "-m", "a second commit")
    two = run_carry("rebase", "--continue", *args)
    assert two.code == 2 and "0003-" in two.err and "stays one patch" in two.err
    git(wt, "reset", "-q", "--hard", "HEAD~1")
    unchanged = run_carry("rebase", "--continue", "--json", *args)
    assert unchanged.code == 0, unchanged.err
    assert "is unchanged: no new version written" in json.loads(unchanged.out)[0]["message"]
    assert seriesmod.find(series_root, "demo").manifest.version == 1
