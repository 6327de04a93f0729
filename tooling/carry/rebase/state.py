"""The saved state of a stopped or finishing rebase: a versioned JSON file per (series,
target) under `.git/carry/rebase/`, written atomically, and read back only after it validates
field by field, so that a damaged or foreign file can never steer `--continue` into moving a
branch to a half-built head."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from carry.base import atomic, untrusted
from carry.base.errors import CarryError
from carry.git import ANY, Ident, Repo
from carry.replay.engine import PatchResult, TargetResult
from carry.replay.targets import ResolvedTarget
from carry.replay.why import valid_cause

VERSION = 2
PHASES = ("conflict", "edit", "replaying", "finishing")
STATUSES = ("applied", "dropped", "conflict", "skipped", "pending", "would-conflict")
_SHA = re.compile(r"[0-9a-f]{40}\Z")  # match() anchors the start; \Z, not $, the end
# patch fields a state written before them lacks
_NEWER = {"cause", "builds_on", "resolutions", "look"}


def state_dir(repo: Repo, series: str) -> Path:
    return repo.carry_dir() / "rebase" / series


def state_path(repo: Repo, series: str, slug: str) -> Path:
    return state_dir(repo, series) / f"{slug}.json"


def worktree_path(repo: Repo, series: str, slug: str) -> Path:
    """Beside the repository, where a user looks (`../vllm.carry/NAME/TARGET`), not under .git."""
    return repo.path.parent / f"{repo.path.name.removesuffix('.git')}.carry" / series / slug


def new(series_name: str, series_root: Path, result: TargetResult, target: ResolvedTarget,
        branch: str, old: str | None, refresh: int, phase: str, head: str, position: int,
        worktree: str = "", paths: Sequence[str] = (), ready: bool = False,
        trial: Sequence[PatchResult] = ()) -> dict[str, Any]:
    """`refresh` is the series version the refresh starts from, 0 for none: a refresh that
    a kill interrupted is finished (or undone) by comparing it with the series on disk.
    `worktree` is where the conflict worktree goes, and `ready` whether it holds this very
    stop: until then (none made yet, or one being moved here from the last stop) nothing in
    it is a resolution. `trial` is the forecast's replay with the stop left out, which a
    `--skip` takes instead of merging again (`rebase.trial`)."""
    return {
        "version": VERSION, "series": series_name, "series_root": str(series_root),
        "target": {"name": target.name, "ref": target.ref, "sha": target.sha},
        "branch": branch, "branch_old": old, "refresh": refresh, "phase": phase,
        "head": head, "position": position, "worktree": worktree, "paths": list(paths),
        "patches": [asdict(p) for p in result.patches],
        "ready": ready, "trial": [asdict(p) for p in trial],
        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


KEEP = "refs/carry/stops"  # one ref per state: its commits outlive a `git gc --prune=now`
_KEEPER = Ident("carry", "carry@localhost", "0 +0000")


def keep_ref(path: Path) -> str:
    """The ref that keeps the commits of the state at `path` (`.../SERIES/SLUG.json`)."""
    return f"{KEEP}/{path.parent.name}/{path.stem}"


def write(repo: Repo, path: Path, state: dict[str, Any]) -> None:
    """The state, after a ref to one commit whose parents are every commit it names (the
    head, the target, each patch's source and replay, the trial's): nothing else may
    reference them while the rebase is stopped, and a `gc --prune=now` then would leave
    `--continue` and `--skip` with "unknown object"."""
    named = [state["head"], state["target"]["sha"], state.get("branch_old") or ""]
    for entries in (state["patches"], state.get("trial") or []):
        named += [c for p in entries for c in (p.get("commit"), p.get("source")) if c]
    named += [g[k] or "" for g in state.get("group") or [] for k in ("head", "old")]
    parents = list(dict.fromkeys(c for c in named if _SHA.match(c)))
    tree = repo.read_commit(state["target"]["sha"]).tree
    kept = repo.write_commit(tree, parents, b"carry: the commits of a stopped rebase\n",
                             _KEEPER, _KEEPER)
    repo.set_ref(keep_ref(path), kept, ANY, reflog=False)
    atomic.write_json(path, state)


def remove(repo: Repo, path: Path) -> None:
    """The ref that kept the state's commits, then the state: a kill in between leaves a
    state that `--abort` (or the next write) still finds, never a ref nothing removes."""
    if repo.ref_exists(keep_ref(path)):
        repo.set_ref(keep_ref(path), None, ANY, reflog=False)
    path.unlink(missing_ok=True)


_CHECKED: set[bytes] = set()  # digests of the state files this process found sound


def read(path: Path) -> dict[str, Any]:
    """The state, its every field checked; a `--skip` reads the same file three times (the
    stop it resumes, the stops it lists, its own), so a content checked once is not checked
    again (a tenth of a second each on a 50-patch series)."""
    try:
        data = untrusted.read_bytes(path) or b""
        digest = hashlib.sha256(data).digest()
        state = untrusted.loads_json(data)
    except ValueError as exc:
        raise CarryError(f"cannot read rebase state {path}: {exc}") from None
    if digest in _CHECKED and isinstance(state, dict):
        return state
    if not isinstance(state, dict) or state.get("version") != VERSION:
        found = state.get("version") if isinstance(state, dict) else None
        raise CarryError(f"rebase state {path} has version {found!r}; this carry reads "
                         f"version {VERSION}", hint="finish it with the carry that started it, "
                         "or remove the file after checking the refs")
    why = _invalid(state)
    if why:
        raise CarryError(f"rebase state {path} is damaged: {why}; carry will not act on it",
                         hint="check the branch and the worktree it names, then remove the file")
    _CHECKED.add(digest)
    return state


def in_progress(repo: Repo, series: str) -> list[dict[str, Any]]:
    d = state_dir(repo, series)
    if not d.is_dir():
        return []
    return [read(p) for p in sorted(d.glob("*.json"))]


def steps(state: dict[str, Any]) -> list[PatchResult]:
    return [PatchResult(**p) for p in state["patches"]]


def trial(state: dict[str, Any]) -> list[PatchResult]:
    return [PatchResult(**p) for p in state.get("trial", [])]


def ready(state: dict[str, Any]) -> bool:
    """Whether the conflict worktree holds this stop (a state from before `ready` existed
    always made it at once)."""
    return bool(state.get("ready", True))


def _invalid(s: dict[str, Any]) -> str:
    """What is wrong with a state, or "" when every field has its type and the fields agree."""
    want: dict[str, type | tuple[type, ...]] = {
        "series": str, "series_root": str, "target": dict, "branch": str,
        "branch_old": (str, type(None)), "refresh": int, "phase": str, "head": str,
        "position": int, "worktree": str, "paths": list, "patches": list}
    for key, kind in want.items():
        if not isinstance(s.get(key), kind) or isinstance(s.get(key), bool) and kind is int:
            return f"field {key!r} is missing or not a {getattr(kind, '__name__', 'value')}"
    t = s["target"]
    if not all(isinstance(t.get(k), str) for k in ("name", "ref", "sha")) or not _SHA.match(
            t["sha"]):
        return "field 'target' is not a name, ref and commit"
    if s["phase"] not in PHASES:
        return f"unknown phase {s['phase']!r}"
    if not _SHA.match(s["head"]) or s["branch_old"] is not None and not _SHA.match(
            s["branch_old"]):
        return "a commit field is not a full object name"
    if not s["branch"].startswith("refs/heads/") or s["branch"].startswith("refs/heads/-"):
        return f"branch {s['branch']!r} is not a branch"
    for entries in (s["patches"], s.get("trial", [])):
        why = _invalid_patches(entries)
        if why:
            return why
    if not isinstance(s.get("ready", True), bool) or s.get("trial") not in (
            None, []) and len(s["trial"]) != len(s["patches"]):
        return "field 'ready' or 'trial' does not fit the patches"
    if not 0 <= s["position"] <= len(s["patches"]):
        return f"position {s['position']} is outside the series"
    if s["phase"] in ("conflict", "edit") and (
            s["position"] == len(s["patches"]) or not s["worktree"]
            or not Path(s["worktree"]).is_absolute()):
        return f"a stop ({s['phase']}) without its patch or worktree"
    if s["phase"] == "finishing" and any(p["status"] in ("pending", "conflict", "would-conflict")
                                         for p in s["patches"]):
        return "a finishing state with patches not yet replayed"
    if not all(isinstance(p, str) for p in s["paths"]):
        return "field 'paths' is not a list of paths"
    return _invalid_group(s.get("group", []))


def _invalid_patches(entries: Any) -> str:
    names = {f.name for f in fields(PatchResult)}
    if not isinstance(entries, list):
        return "field 'trial' is not a list"
    for p in entries:
        if not isinstance(p, dict) or not names - _NEWER <= set(p) <= names:
            return "a patch entry does not have the fields of a patch"
        try:
            untrusted.build(PatchResult, p, "a patch entry")
        except untrusted.BadData as exc:
            return str(exc)
        if not isinstance(p.get("builds_on", ""), str) or not valid_cause(p.get("cause")):
            return "a patch entry's cause or builds_on is not a commit and a patch file"
        if p["status"] not in STATUSES or not isinstance(p["number"], int):
            return f"a patch entry has status {p.get('status')!r}"
        if not isinstance(p["commit"], str) or p["commit"] and not _SHA.match(p["commit"]):
            return "a patch entry's commit is not a full object name"
    return ""


def _invalid_group(group: Any) -> str:
    """The branches of one finishing transaction, each with its old and new commit."""
    if not isinstance(group, list):
        return "field 'group' is not a list"
    for g in group:
        if not isinstance(g, dict) or set(g) != {"branch", "old", "head"} or not (
                isinstance(g["branch"], str) and g["branch"].startswith("refs/heads/")
                and not g["branch"].startswith("refs/heads/-")
                and isinstance(g["head"], str) and _SHA.match(g["head"])
                and (g["old"] is None or isinstance(g["old"], str) and _SHA.match(g["old"]))):
            return "a 'group' entry is not a branch with its old and new commit"
    return ""
