"""What a person reads fits the terminal: the everyday commands' default output, on a
realistic series (long subjects, deep vLLM-like paths, two patches merged upstream, a conflict
and a patch built on it), keeps every line within COLUMNS, and says what changed and what to do
next; the full forecast is behind -v and --json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from carry.series.manifest import Target
from tests.conftest import TOBY, CommitBuilder, git, run_carry

DEEP = "vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/"
PATHS = [f"{DEEP}coordinator_for_sparse_retention_module_{i:02d}.py" for i in range(16)]
SUBJECT = ("[Core][KV cache] mamba sparse retention: keep the fine-hit alignment for "
           "speculative decoding replay, part {i} of the series")


def realistic(tmp: Path, root: Path) -> dict[str, Any]:
    """16 patches on deep paths with long subjects; upstream main merged 0003 and 0007 as
    they are, and changed the lines of 0010, which 0012 builds on."""
    from carry.intake import importer
    from carry.series import store as seriesmod

    up = CommitBuilder.init(tmp / "upstream-with-a-rather-long-folder-name")
    up.commit("Initial import", {p: f"X = 0\nY = {i}\n" for i, p in enumerate(PATHS)})
    up.tag("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    body = {}
    for i in range(1, 17):
        path = PATHS[15 if i == 12 else i - 1]
        if i == 12:
            content = "X = 10\nY = 1000\n"
            path = PATHS[9]
        else:
            content = f"X = {i}\nY = {i - 1}\n"
        body[i] = (path, content)
        up.commit(SUBJECT.format(i=i) + "\n\nSigned-off-by: Toby Mao <toby@example.com>\n",
                  {path: content}, author=TOBY)
    git(up.path, "checkout", "-q", "main")
    for i in (3, 7):
        up.commit(SUBJECT.format(i=i) + " (#4242)", {body[i][0]: body[i][1]})
    up.commit("[Upstream] rewrite the coordinator's alignment for sparse retention (#9999)",
              {PATHS[9]: "X = -1\nY = 9\n"})
    importer.run(root, "mamba-sparse-retention",
        importer.Source(str(up.path), branch="feature", base="base"),
        title="Mamba sparse retention")
    s = seriesmod.find(root, "mamba-sparse-retention")
    s.manifest.targets = [Target("upstream-main", ref="main")]
    seriesmod.write_series(s.root, s.manifest, None)
    return {"up": up, "args": ("--repo", str(up.path), "--series-dir", str(root))}


COPY = ("carry ", "git ", "cd ")


def _fits(out: str, cols: int = 80) -> None:
    """Every line within `cols`, but a line that is only a command or path to copy, alone or
    after a short label (`commit it: git -C ...`, `resolve in /path`): those are never cut."""
    for line in out.splitlines():
        if len(line) <= cols:
            continue
        label, _, rest = line.strip().partition(": ")
        value = rest if rest and len(label) <= 30 else line.strip()
        if value.startswith("resolve in "):
            value = value.removeprefix("resolve in ")
        assert value.startswith(COPY) or " " not in value, f"{len(line)} > {cols}: {line!r}"


def _carry(ctx: dict[str, Any], *args: str) -> Any:
    res = run_carry(*args, *ctx["args"], env={"COLUMNS": "80"})
    assert "Traceback" not in res.err, res.err
    _fits(res.out)
    return res


def test_everyday_output_fits_80_columns_and_says_what_to_do(
        tmp_path: Path, series_root: Path) -> None:
    ctx = realistic(tmp_path, series_root)
    name = "mamba-sparse-retention"
    full = run_carry("rebase", name, "--dry-run", "-v", *ctx["args"])
    assert max(len(ln) for ln in full.out.splitlines()) > 80  # the old view was wider
    dry = _carry(ctx, "rebase", name, "--dry-run")
    assert dry.code == 1 and len(dry.out.splitlines()) <= len(full.out.splitlines())
    stop = _carry(ctx, "rebase", name)
    assert stop.code == 1, stop.err
    lines = stop.out.splitlines()
    assert lines[:3] == [f"rebase {name}", "upstream-main: 7 applied, 2 dropped, stopped at 0010",
                         "  beyond it: 1 more would conflict, 5 not reached"]
    assert [ln[:16] for ln in lines if " dropped: " in ln] == ["  0003 dropped: "] + \
        ["  0007 dropped: "]
    assert "  CONFLICT in 0010-Core-KV-cache-mamba-sparse-retention-keep-the-fine-h.patch" \
        in lines
    up = ctx["up"]
    cause = git(up.path, "rev-parse", "main")[:12]
    assert any(ln.startswith(f"    why: 0010 conflicts since upstream {cause} '[Upstream]")
               and ln.endswith("\u2026") for ln in lines)
    assert f"    paths: {PATHS[9]}" in lines
    assert "  0012 would conflict too: builds on 0010, which conflicts" in lines
    nxt = next(ln for ln in lines if ln.startswith("  next: "))
    assert nxt.split("next: ", 1)[1] == f"carry rebase --repo {up.path} --resolve " \
        f"--series-dir {series_root}"
    assert lines[-1] == "  or --skip to leave 0010 out, --abort to undo the rebase"
    assert len(lines) <= 16  # 16 patches: the applied ones are counted, not listed
    made = _carry(ctx, "rebase", "--resolve")  # makes the conflict worktree
    wt = next(ln for ln in made.out.splitlines() if ln.startswith("  resolve in "))[13:]
    (Path(wt) / PATHS[9]).write_text("X = 10\nY = 9\n")
    done = _carry(ctx, "rebase", "--continue")
    assert done.code == 0, done.err
    lines = done.out.splitlines()
    assert lines[1] == "upstream-main: 14 applied, 2 dropped"
    assert "  0010 applied: conflict resolved" in lines
    head = git(up.path, "rev-parse", f"carry/{name}/upstream-main")[:12]
    assert f"  carry/{name}/upstream-main -> {head}" in lines
    for cmd in (("status", name), ("check", name), ("range-diff", name, "v1", "v2", "-s"),
                ("range-diff", name, "v1", "v2")):
        res = _carry(ctx, *cmd) if cmd[0] != "check" else \
            run_carry(*cmd, "--series-dir", str(series_root), env={"COLUMNS": "80"})
        assert res.code == 0, res.err
        _fits(res.out)
    status = _carry(ctx, "status", name).out.splitlines()
    assert f"  carry/{name}/upstream-main at {head}" in status
    assert "  1 recorded resolution(s) still match (-v lists them)" in status
    wide = run_carry("status", name, *ctx["args"], env={"COLUMNS": "200"})
    assert max(len(ln) for ln in wide.out.splitlines()) > 80  # the width is the terminal's
    imported = _carry(ctx, "import", "again", "--branch", "feature", "--base", "base")
    assert imported.code == 0, imported.err
    lines = imported.out.splitlines()
    assert lines[1].startswith("  0001-Core-KV-cache") and lines[3].startswith("  0016-Core-")
    assert lines[2] == "  \u2026 (14 more; -v lists each)"
    edit = _carry(ctx, "edit", name, "2")
    assert edit.code == 0, edit.err
    lines = edit.out.splitlines()
    assert lines[:2] == [f"{name}: stopped on base to edit 0002",
                         "  0002-Core-KV-cache-mamba-sparse-retention-keep-the-fine-h.patch"]
    assert lines[2].startswith('  "[Core]') and lines[2].endswith('\u2026" by Toby Mao')
    assert any(ln.startswith("  then: carry rebase --repo ") for ln in lines)
    assert _carry(ctx, "rebase", "--abort").code == 0
