"""The saved state of a stopped or finishing rebase: a versioned JSON file per (series,
target) under `.git/carry/rebase/`, written atomically, and read back only after it validates
field by field, so that a damaged or foreign file can never steer `--continue` into moving a
branch to a half-built head."""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from carry.base import atomic, redact, untrusted
from carry.base.errors import CarryError
from carry.git import ANY, Ident, Repo
from carry.replay.causes import valid_cause
from carry.replay.runs import PatchResult, PatchStatus
from carry.replay.targets import ResolvedTarget

VERSION = 2
_SHA = re.compile(r"[0-9a-f]{40}\Z")  # match() anchors the start; \Z, not $, the end
# patch fields a state written before them lacks
_NEWER = {"cause", "builds_on", "resolutions", "look"}


class Phase(enum.StrEnum):
    """Where the rebase is: stopped at a conflict or for an edit, replaying the rest after a
    stop, or finishing (the branches' transaction and the new version are under way)."""

    CONFLICT = "conflict"
    EDIT = "edit"
    REPLAYING = "replaying"
    FINISHING = "finishing"

    @property
    def stopped(self) -> bool:
        """At a patch, with a worktree for it."""
        return self in (Phase.CONFLICT, Phase.EDIT)


@dataclass(frozen=True)
class StateTarget(ResolvedTarget):
    """The target as the state names it (name, ref and the commit it was pinned to)."""

    @classmethod
    def of(cls, target: ResolvedTarget) -> StateTarget:
        return cls(target.name, target.ref, target.sha)


@dataclass
class GroupEntry:
    """One branch of a finishing transaction: where it was (None: it did not exist) and
    where the transaction puts it."""

    branch: str
    old: str | None
    head: str


@dataclass
class RebaseState:
    """A stopped or finishing rebase as saved. `refresh_from` is the series version a
    `--refresh` starts from (None for none): a refresh that a kill interrupted is finished
    (or undone) by comparing it with the series on disk. `worktree` is where the conflict
    worktree goes, and `ready` whether it holds this very stop: until then (none made yet,
    or one being moved here from the last stop) nothing in it is a resolution. `trial` is
    the forecast's replay with the stop left out, which a `--skip` takes instead of merging
    again (`rebase.trial`). `group` names every branch of a finishing transaction."""

    series: str
    series_root: str
    target: StateTarget
    branch: str
    branch_old: str | None
    refresh_from: int | None
    phase: Phase
    head: str
    position: int
    worktree: str
    paths: list[str]
    patches: list[PatchResult]
    ready: bool = True  # a state from before `ready` existed always made it at once
    trial: list[PatchResult] = field(default_factory=list)
    started: str = field(
        default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    group: list[GroupEntry] = field(default_factory=list)
    auto_resolve: bool = True  # False: begun with --no-auto-resolve, and resumed so; a state
    # from before the field existed was begun with it on

    @property
    def stop(self) -> PatchResult:
        """The patch the rebase is stopped at (a conflict or an edit)."""
        return self.patches[self.position]

    @property
    def branches(self) -> list[GroupEntry]:
        """The branches the finishing transaction moves: the group, or this one alone (a
        state written before `group` existed)."""
        return self.group or [GroupEntry(self.branch, self.branch_old, self.head)]

    def to_json(self) -> dict[str, Any]:
        """VERSION 2's document, its keys in the order carry has always written them."""
        data: dict[str, Any] = {
            "version": VERSION, "series": self.series, "series_root": self.series_root,
            "target": asdict(self.target), "branch": self.branch,
            "branch_old": self.branch_old, "refresh": self.refresh_from or 0,
            "phase": self.phase.value, "head": self.head, "position": self.position,
            "worktree": self.worktree, "paths": list(self.paths),
            "patches": [_patch_doc(p) for p in self.patches], "ready": self.ready,
            "trial": [_patch_doc(p) for p in self.trial], "started": self.started,
            "auto_resolve": self.auto_resolve}
        if self.group:
            data["group"] = [asdict(g) for g in self.group]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RebaseState:
        """The state from its document, every field's type checked (`untrusted.build`) and
        the fields checked against each other; BadData says what is wrong."""
        why = _invalid_shape(data)
        if why:
            raise untrusted.BadData(why)
        named = {k: v for k, v in data.items() if k not in ("version", "refresh")}
        state = untrusted.build(cls, {**named, "refresh_from": data["refresh"] or None},
                                "state")
        why = _invalid(state)
        if why:
            raise untrusted.BadData(why)
        return state


def _patch_doc(p: PatchResult) -> dict[str, Any]:
    """`asdict(p)` made field by field (a state holds a hundred entries, and `asdict` copies
    each value through `deepcopy`): the same keys in the same order, no list or dict shared
    (their items are plain values)."""
    return {f: _plain(getattr(p, f)) for f in _PATCH_ORDER}


def _plain(v: Any) -> Any:
    return list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v


_PATCH_ORDER = [f.name for f in fields(PatchResult)]


def state_dir(repo: Repo, series: str) -> Path:
    return repo.carry_dir() / "rebase" / series


def state_path(repo: Repo, series: str, slug: str) -> Path:
    return state_dir(repo, series) / f"{slug}.json"


def worktree_path(repo: Repo, series: str, slug: str) -> Path:
    """Beside the repository, where a user looks (`../vllm.carry/NAME/TARGET`), not under .git."""
    return repo.path.parent / f"{repo.path.name.removesuffix('.git')}.carry" / series / slug


KEEP = "refs/carry/stops"  # one ref per state: its commits outlive a `git gc --prune=now`
_KEEPER = Ident("carry", "carry@localhost", "0 +0000")


def keep_ref(path: Path) -> str:
    """The ref that keeps the commits of the state at `path` (`.../SERIES/SLUG.json`)."""
    return f"{KEEP}/{path.parent.name}/{path.stem}"


def write(repo: Repo, path: Path, state: RebaseState) -> None:
    """The state, after a ref to one commit whose parents are every commit it names (the
    head, the target, each patch's source and replay, the trial's): nothing else may
    reference them while the rebase is stopped, and a `gc --prune=now` then would leave
    `--continue` and `--skip` with "unknown object". A skip names no commit the ref does not
    keep already (its head and patches come from the trial it keeps): the ref is then left
    as it is (`_keeps`)."""
    parents = _named(state)
    ref = keep_ref(path)
    if not _keeps(repo, ref, parents):
        tree = repo.read_commit(state.target.sha).tree
        kept = repo.write_commit(tree, parents, b"carry: the commits of a stopped rebase\n",
                                 _KEEPER, _KEEPER)
        repo.set_ref(ref, kept, ANY, reflog=False)
    data = encode(state)
    atomic.write_bytes(path, data)
    if redact.scrub_bytes(data) == data:  # the file holds these very bytes: no need to
        _remember(hashlib.sha256(data).digest(), _clone(state))  # check them when read


def encode(state: RebaseState) -> bytes:
    """The bytes `write` gives the state's file (before `atomic`'s scrub)."""
    return (json.dumps(state.to_json(), indent=1) + "\n").encode("utf-8")


def kept_as_is(repo: Repo, path: Path, state: RebaseState) -> bool:
    """Whether `write` would leave the keep ref of `path` as it is (it keeps every commit
    `state` names already)."""
    return _keeps(repo, keep_ref(path), _named(state))


def _named(state: RebaseState) -> list[str]:
    """Every commit the state names."""
    named = [state.head, state.target.sha, state.branch_old or ""]
    named += [c for p in (*state.patches, *state.trial) for c in (p.commit, p.source) if c]
    named += [c or "" for g in state.group for c in (g.head, g.old)]
    return list(dict.fromkeys(c for c in named if _SHA.match(c)))


def _keeps(repo: Repo, ref: str, commits: list[str]) -> bool:
    """Whether `ref` already keeps every one of `commits` (its commit's parents), as the
    repository has it now: read through the object reader a skip has running already (git
    resolves the ref afresh on each request), so no process of its own; a missing ref
    keeps nothing."""
    try:
        return set(repo.read_commit(ref).parents).issuperset(commits)
    except CarryError:
        return False


def remove(repo: Repo, path: Path) -> None:
    """The ref that kept the state's commits, then the state: a kill in between leaves a
    state that `--abort` (or the next write) still finds, never a ref nothing removes."""
    if repo.ref_exists(keep_ref(path)):
        repo.set_ref(keep_ref(path), None, ANY, reflog=False)
    path.unlink(missing_ok=True)
    # the skips worked out ahead of it (`skipmemo.memo_path`, which imports this module)
    path.with_suffix(".skip").unlink(missing_ok=True)


_CHECKED: dict[bytes, RebaseState] = {}  # the state files this process found sound (or wrote)


def read(path: Path, shared: bool = False) -> RebaseState:
    """The state, its every field checked; a `--skip` reads the same file twice (the stop
    it resumes, the stops it lists) and the one it wrote, so a content checked (or written)
    once is not checked again (a tenth of a second each on a 50-patch series). A reader
    that changes the state gets its own copy; one that only looks (`shared`) gets the one
    kept, which nobody may change."""
    try:
        data = untrusted.read_bytes(path) or b""
    except ValueError as exc:
        raise CarryError(f"cannot read rebase state {path}: {exc}") from None
    return parse(data, path, shared)


def parse(data: bytes, path: Path, shared: bool = False) -> RebaseState:
    """The state in `data`, the bytes of the file at `path` (`read`)."""
    try:
        digest = hashlib.sha256(data).digest()
        if digest in _CHECKED:
            return _CHECKED[digest] if shared else _clone(_CHECKED[digest])
        doc = untrusted.loads_json(data)
    except ValueError as exc:
        raise CarryError(f"cannot read rebase state {path}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        found = doc.get("version") if isinstance(doc, dict) else None
        raise CarryError(f"rebase state {path} has version {found!r}; this carry reads "
                         f"version {VERSION}", hint="finish it with the carry that started it, "
                         "or remove the file after checking the refs")
    try:
        state = RebaseState.from_json(doc)
    except untrusted.BadData as exc:
        raise CarryError(f"rebase state {path} is damaged: {exc}; carry will not act on it",
                         hint="check the branch and the worktree it names, then remove the "
                              "file") from None
    _remember(digest, state)
    return state if shared else _clone(state)


def _remember(digest: bytes, state: RebaseState) -> None:
    """The newest 64: a long run (the CI loop over many series) keeps no more."""
    _CHECKED[digest] = state
    while len(_CHECKED) > 64:
        del _CHECKED[next(iter(_CHECKED))]


def copy(s: RebaseState) -> RebaseState:
    """A copy sharing nothing a reader may change."""
    return _clone(s)


def _clone(s: RebaseState) -> RebaseState:
    """A copy sharing nothing a reader may change (lists, dicts, entries), made field by
    field: `copy.deepcopy` costs ten times as much on a 50-patch state."""
    return replace(s, paths=list(s.paths), patches=[_clone_patch(p) for p in s.patches],
                   trial=[_clone_patch(p) for p in s.trial],
                   group=[replace(g) for g in s.group])


def _clone_patch(p: PatchResult) -> PatchResult:
    return replace(p, forecast=list(p.forecast), resolutions=list(p.resolutions),
                   cause=dict(p.cause) if p.cause is not None else None)


def in_progress(repo: Repo, series: str, shared: bool = False) -> list[RebaseState]:
    """The series' saved states; `shared`: for a reader that does not change them (`read`)."""
    d = state_dir(repo, series)
    if not d.is_dir():
        return []
    return [read(p, shared) for p in sorted(d.glob("*.json"))]


def pick(repo: Repo, series: str, which: Sequence[str]) -> list[RebaseState]:
    """The series' rebases in progress that `which` names (target names, refs or their
    file names; none: every one); refused when there is none."""
    states = in_progress(repo, series)
    if not states:
        raise CarryError(f"no carry rebase of {series} is in progress in {repo.path}")
    if not which:
        return states
    chosen = [s for s in states if s.target.name in which or s.target.ref in which
              or s.target.slug in which]
    if not chosen:
        known = ", ".join(s.target.name for s in states)
        raise CarryError(f"no rebase of {series} onto {', '.join(which)} is in progress "
                         f"(in progress: {known})")
    return chosen


def only(repo: Repo, series: str, which: Sequence[str], doing: str) -> RebaseState:
    """The one rebase `which` names (or the series' only one): `doing` acts on one."""
    states = pick(repo, series, which)
    if len(states) > 1:
        names = ", ".join(s.target.name for s in states)
        raise CarryError(f"several rebases of {series} are in progress ({names}); "
                         f"{doing} acts on one", hint="name one with --target or --onto")
    return states[0]


_PATCH_FIELDS = {f.name for f in fields(PatchResult)}


def _invalid_shape(d: dict[str, Any]) -> str:
    """What `untrusted.build` cannot say: the `refresh` number, and entries of patches and
    branches with exactly their fields."""
    if type(d.get("refresh")) is not int:
        return "field 'refresh' is missing or not an int"
    for key in ("patches", "trial", "group"):
        if not isinstance(d.get(key, []), list):
            return f"field {key!r} is missing or not a list"
    for p in (*d.get("patches", []), *d.get("trial", [])):
        if not isinstance(p, dict) or not _PATCH_FIELDS - _NEWER <= set(p) <= _PATCH_FIELDS:
            return "a patch entry does not have the fields of a patch"
    if not all(isinstance(g, dict) and set(g) == {"branch", "old", "head"}
               for g in d.get("group", [])):
        return _BAD_GROUP
    return ""


_UNREPLAYED = (PatchStatus.PENDING, PatchStatus.CONFLICT, PatchStatus.WOULD_CONFLICT)
_BAD_GROUP = "a 'group' entry is not a branch with its old and new commit"


def _invalid(s: RebaseState) -> str:
    """What is wrong with a state whose fields have their types, or "" when the fields agree."""
    if not _SHA.match(s.target.sha):
        return "field 'target' is not a name, ref and commit"
    if not _SHA.match(s.head) or s.branch_old is not None and not _SHA.match(s.branch_old):
        return "a commit field is not a full object name"
    if not _is_branch(s.branch):
        return f"branch {s.branch!r} is not a branch"
    for p in (*s.patches, *s.trial):
        if not valid_cause(p.cause):
            return "a patch entry's cause or builds_on is not a commit and a patch file"
        if p.commit and not _SHA.match(p.commit):
            return "a patch entry's commit is not a full object name"
    if s.trial and len(s.trial) != len(s.patches):
        return "field 'ready' or 'trial' does not fit the patches"
    if not 0 <= s.position <= len(s.patches):
        return f"position {s.position} is outside the series"
    if s.phase.stopped and (s.position == len(s.patches) or not s.worktree
                            or not Path(s.worktree).is_absolute()):
        return f"a stop ({s.phase}) without its patch or worktree"
    if s.phase is Phase.FINISHING and any(p.status in _UNREPLAYED for p in s.patches):
        return "a finishing state with patches not yet replayed"
    if not all(_is_branch(g.branch) and _SHA.match(g.head)
               and (g.old is None or _SHA.match(g.old)) for g in s.group):
        return _BAD_GROUP
    return ""


def _is_branch(ref: str) -> bool:
    return ref.startswith("refs/heads/") and not ref.startswith("refs/heads/-")
