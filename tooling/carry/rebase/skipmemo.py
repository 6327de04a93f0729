"""`--skip`s worked out ahead of time. At a stop, the trial already holds every later stop a
run of `--skip`s reaches, and what each such skip does (the state file it writes, what it
prints) follows from the state it starts from, the series' manifest and commits that never
change. So a `--skip` or `--continue` that stops works out the next few (`build`: the skip's
own code, run on copies, nothing written) and keeps them beside the state (`SLUG.skip`); a
rebase's first call does not (it is what CI runs, and CI never skips). A later `carry rebase
--skip` whose inputs are the same, byte for byte, writes the kept state and prints the kept
output (`run`), importing none of the replay: Python's start and carry's imports were nine
tenths of a skip on a 50-patch vLLM series. Anything else (another state, manifest, patch
list or terminal width, a worktree at the next stop, a moved keep ref, a lock held, another
command line, a damaged memo) takes the full path, which writes and prints the same bytes
(tests/test_skip_memo.py runs both and compares them)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carry.base import atomic, redact, term, untrusted
from carry.base.errors import CarryError
from carry.base.flock import flocked
from carry.series.locate import MANIFEST

if TYPE_CHECKING:
    from carry.git import Repo
    from carry.replay.engine import TargetResult
    from carry.series.store import Series

VERSION = 1
AHEAD = 8  # skips worked out at a stop (about 13 ms each, paid by the skip that stops)
MAX_BYTES = 32 << 20  # a larger memo is not read
_STARTED = re.compile(rb'\n "started": "[0-9T:+-]*"')  # a top-level key: indent 1


def memo_path(state: Path) -> Path:
    return state.with_suffix(".skip")


# -- at a stop: the next skips, worked out -------------------------------------------------


def build(series: Series, repo: Repo, root: Path,
          render: Callable[[TargetResult], str]) -> None:
    """Keep the next `AHEAD` skips of the series' stopped rebase, when it is the only rebase
    stopped in the repository (the one a bare `--skip` takes); `render` gives what the CLI
    prints for a result. A memo that would hold none is removed."""
    from carry.rebase import onward
    from carry.rebase import state as st
    from carry.series import locks

    found = _states(str(repo.path))
    if found is None or found[0] != series.name:
        return
    path = Path(found[1])
    memo = memo_path(path)
    data = path.read_bytes()
    state = st.parse(data, path)
    data = _blank(data) or b""
    steps: list[dict[str, str]] = []
    for _ in range(AHEAD):
        if state.phase is not st.Phase.CONFLICT:
            break
        result = onward.result_of(series, state)
        said = io.StringIO()  # a note on stderr is a skip's own: one that says one is not kept
        with contextlib.redirect_stderr(said):
            new = onward.skip_to_next(series, repo, state, result)
            out = render(result) if new is not None else ""
        if new is None or said.getvalue() or os.path.lexists(new.worktree) or \
                not st.kept_as_is(repo, path, new):
            break  # the skip replays, moves a worktree or writes the keep ref: not kept
        after = _blank(redact.scrub_bytes(st.encode(new)))  # the file's bytes, as written
        if after is None:
            break
        steps.append({"after": _digest(data), "state": after.decode("utf-8"), "out": out,
                      "worktree": new.worktree})
        data, state = after, st.copy(new)  # what the next skip reads (from_json(to_json))
    ref = repo.common_dir / st.keep_ref(path)  # a loose ref; a packed one is not kept
    if not steps or not ref.is_file():
        memo.unlink(missing_ok=True)
        return
    doc = {"version": VERSION, "repo": os.path.realpath(repo.path), "name": series.name,
           "root": os.path.realpath(root), "manifest": _digest(_read(series.manifest_path)),
           "patches": _listing(series.root), "width": term.width(),
           "cwd": os.path.realpath(os.getcwd()),  # the output's commands depend on both
           "series_env": os.environ.get("CARRY_SERIES_DIR", ""),
           "locks": [str(locks.lock_path(root, series.name)),
                     str(repo.carry_dir() / "rebase.lock")],
           "ref": [str(ref), _read(ref).decode("ascii", "replace").strip()], "steps": steps}
    atomic.write_bytes(memo, json.dumps(doc).encode("utf-8"))


# -- a later `--skip`: the kept outcome, taken ------------------------------------------------


def run(args: Sequence[str], environ: Mapping[str, str]) -> int | None:
    """This `carry rebase --skip`'s kept outcome, written and printed: its exit code; None when
    none is kept for exactly these inputs (the full path runs, and says any error)."""
    words = _words(args, environ)
    if words is None:
        return None
    name, repo_arg, root_arg = words
    repo = os.path.realpath(repo_arg or os.getcwd())
    found = _states(repo)
    if found is None or name not in (None, found[0]):
        return None
    try:
        memo = json.loads(_read(memo_path(Path(found[1])), MAX_BYTES))
        if not isinstance(memo, dict) or memo.get("version") != VERSION or \
                memo.get("repo") != repo or memo.get("name") != found[0]:
            return None
        series_lock, repo_lock = (Path(p) for p in memo["locks"])
        path = Path(found[1])
        with flocked(series_lock, "series"), flocked(repo_lock, "repository"):
            step = _step(memo, path, root_arg, environ)
            if step is None:
                return None
            _write(path, _stamped(step["state"].encode("utf-8")))
    except (CarryError, OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # nothing was written: the full path runs from the same state
    sys.stdout.write(step["out"].translate(term.CONTROL))  # as `render.say` wrote it
    return 1


def _write(path: Path, data: bytes) -> None:
    """The new state, atomically; raises only when the file still holds the old one (a
    failure after the rename has written it: the full path must not skip a second time)."""
    try:
        atomic.write_bytes(path, data)
    except OSError:
        if _read(path, MAX_BYTES) != redact.scrub_bytes(data):
            raise


def _step(memo: dict[str, Any], path: Path, root_arg: str | None,
          environ: Mapping[str, str]) -> dict[str, str] | None:
    """The kept step that starts from the state as it is now, under the locks, when every
    other input is as it was."""
    data = _read(path, MAX_BYTES)
    blank = _blank(data)
    step = next((s for s in memo["steps"] if blank and s["after"] == _digest(blank)), None)
    if step is None:
        return None
    kept = json.loads(data).get("series_root") or ""
    given = root_arg or environ.get("CARRY_SERIES_DIR") or os.path.dirname(kept)
    root = os.path.realpath(os.path.expanduser(given)) if given else ""
    folder = Path(root) / memo["name"]
    if root != memo["root"] or folder.is_symlink() or \
            os.path.realpath(os.getcwd()) != memo["cwd"] or \
            environ.get("CARRY_SERIES_DIR", "") != memo["series_env"] or \
            _digest(_read(folder / MANIFEST)) != memo["manifest"] or \
            _listing(folder) != memo["patches"] or term.width(environ) != memo["width"] or \
            os.path.lexists(step["worktree"]) or \
            _read(Path(memo["ref"][0])).decode("ascii", "replace").strip() != memo["ref"][1]:
        return None
    return step  # type: ignore[no-any-return]


def _words(args: Sequence[str], environ: Mapping[str, str]
           ) -> tuple[str | None, str | None, str | None] | None:
    """(NAME, --repo, --series-dir) of `rebase [NAME] --skip [--repo R] [--series-dir D]`
    (each once, a value never starting with `-`, --repo from $CARRY_REPO as typer reads it);
    None for any other command line, or an environment that moves git's or typer's ground."""
    if not args or args[0] != "rebase" or any(
            k.endswith("_COMPLETE") or k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")
            for k in environ):
        return None
    got: dict[str, str] = {}
    words = iter(args[1:])
    for word in words:
        if word == "--skip" and "skip" not in got:
            got["skip"] = ""
        elif word in ("--repo", "--series-dir") and word not in got:
            value = next(words, "-")
            if value.startswith("-"):
                return None
            got[word] = value
        elif not word.startswith("-") and "name" not in got:
            got["name"] = word
        else:
            return None
    if "skip" not in got:
        return None
    return got.get("name"), got.get("--repo") or environ.get("CARRY_REPO"), \
        got.get("--series-dir")


def _states(repo: str) -> tuple[str, str] | None:
    """(series, state file) of the one rebase stopped in `repo` (a checkout's top: `.git` a
    folder there), or None when there is not exactly one."""
    top = os.path.join(repo, ".git", "carry", "rebase")
    if not os.path.isdir(os.path.join(repo, ".git")):
        return None
    try:
        found = [(d, os.path.join(top, d, f)) for d in os.listdir(top)
                 if os.path.isdir(os.path.join(top, d))
                 for f in os.listdir(os.path.join(top, d)) if f.endswith(".json")]
    except OSError:
        return None
    return found[0] if len(found) == 1 else None


def _listing(folder: Path) -> list[str]:
    """The names in the series' `patches/` (a skip loads the series, and refuses bad ones)."""
    try:
        return sorted(os.listdir(folder / "patches"))
    except OSError:
        return []


def _read(path: Path, limit: int = 1 << 20) -> bytes:
    """A regular file's bytes through the one reader of untrusted files (no link, no FIFO
    waited on, at most `limit`)."""
    return untrusted.read_bytes(path, limit=limit) or b""


def _blank(data: bytes) -> bytes | None:
    """The state's bytes with its `started` (the time its stop was reached: each stop's own)
    left empty, as its memo keeps and matches it; None when it is not there once."""
    found = _STARTED.findall(data)
    return _STARTED.sub(b'\n "started": ""', data) if len(found) == 1 else None


def _stamped(data: bytes) -> bytes:
    """A kept state, stamped with the time this skip reached its stop (as `state` writes it)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()).encode("ascii")
    return data.replace(b'\n "started": ""', b'\n "started": "' + now + b'"', 1)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
