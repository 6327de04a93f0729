"""Applying recorded resolutions (`recorded` keys and stores them): the conflicts of one
replayed patch, every hunk put back as recorded, a hand resolution taken as a new recording,
and which recordings can still apply."""

from __future__ import annotations

from dataclasses import dataclass, field

from carry.base.errors import CarryError
from carry.git import Entry, RawCommit, Repo
from carry.replay.recorded import (
    REGULAR,
    Lines,
    Marked,
    Recorded,
    Resolution,
    align,
    find_block,
    load,
    parse,
    parse_marked,
    split_lines,
)

# Callers name the recorded resolutions through this module as well as what it defines.
__all__ = ["Recorded", "apply", "conflicts", "load", "parse", "take", "unmatched"]

# -- the conflicts of one replayed patch --------------------------------------------------------


REVIEW = " (resolved by carry: review)"  # how every view marks carry's own resolution


@dataclass(frozen=True)
class Conflicted:
    """One conflicted path of a patch: its hunks, or why it has none carry can key."""

    path: bytes
    mode: bytes
    marked: Marked | None
    why: str = ""

    @property
    def name(self) -> str:
        return self.path.decode("utf-8", "surrogateescape")


def conflicts(repo: Repo, commit: RawCommit, onto_tree: str) -> tuple[str, list[Conflicted]]:
    """The merge of `commit` onto `onto_tree` in diff3 style, and each conflicted path."""
    tree, stages = repo.conflicted_merge(commit, onto_tree)
    out = []
    for path, st in sorted(stages.items()):
        entry = repo.tree_lookup(tree, path)
        if 2 not in st or 3 not in st:
            out.append(Conflicted(path, b"", None, "one side deletes or renames it"))
        elif entry is None or entry[0] not in REGULAR:
            out.append(Conflicted(path, b"", None, "not a regular file on both sides"))
        else:
            data = repo.read_object(entry[1])[2]
            marked = parse_marked(data)
            why = "" if marked else ("a binary file" if b"\0" in data[:8000] else
                                     "no diff3 conflict markers carry can read in it")
            out.append(Conflicted(path, entry[0], marked, why))
    return tree, out


@dataclass(frozen=True)
class Applied:
    """A conflict the recorded resolutions resolved, or that resolved by itself: the tree,
    the resolutions used, and what each hunk that resolved by itself did ("both sides
    added entries to KERNELS in a.py")."""

    tree: str
    used: tuple[Resolution, ...]
    auto: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        versions = sorted({r.version for r in self.used})
        parts = [] if not self.used else [
            "conflict resolved by the resolution recorded on "
            + " and ".join(f"v{v}" for v in versions)]
        if self.auto:
            parts.append("conflict resolved by itself: " + "; ".join(self.auto) + REVIEW)
        return ", and ".join(parts)


def apply(repo: Repo, recorded: Recorded, patch: int, commit: RawCommit,
          onto_tree: str) -> Applied | None:
    """`commit` onto `onto_tree` with every conflicted hunk replaced by its recorded text,
    or (`recorded.auto`) by the text its three sides decide (`autoresolve`); None when one
    has neither (or a path conflicts in a way no hunk describes)."""
    if not recorded.has(patch) and not recorded.auto:
        return None  # the common case costs no second merge
    tree, found = conflicts(repo, commit, onto_tree)
    if not found:
        return None
    edits: dict[bytes, Entry | None] = {}
    used: dict[str, Resolution] = {}
    said: list[str] = []
    for c in found:
        if c.marked is None:
            return None
        filled = _filled(c, recorded, patch, used)
        if filled is None:
            return None
        edits[c.path] = (c.mode, repo.write_object("blob", filled[0]))
        said += [f"{line} in {c.name}" for line in filled[1]]
    resolved = repo.edit_tree(tree, edits) or repo.write_object("tree", b"")
    return Applied(resolved, tuple(used[k] for k in sorted(used)), tuple(said))


def _filled(c: Conflicted, recorded: Recorded, patch: int, used: dict[str, Resolution]
            ) -> tuple[bytes, list[str]] | None:
    """The path's text with each hunk resolved (its recorded text first), and what the
    hunks that resolved by themselves did; None when a hunk stays unresolved, or a Python
    file so resolved would not parse."""
    from carry.replay import autoresolve

    assert c.marked is not None
    python = c.name.endswith(autoresolve.PYTHON)
    texts: list[Lines] = []
    autos: dict[int, autoresolve.Candidate] = {}
    for i, hunk in enumerate(c.marked.hunks):
        hit = recorded.find(patch, hunk)
        cand = autoresolve.candidate(hunk, python) if hit is None and recorded.auto else None
        if hit is None and cand is None:
            return None
        if hit is not None:
            used[hit[0].name] = hit[0]
            texts.append(hit[1])
        elif cand is not None:
            autos[i] = cand
            texts.append(cand.text)
    data = c.marked.fill(texts)
    if not autos:
        return data, []
    if not python:
        return data, [autoresolve.describe(x) for _, x in sorted(autos.items())]
    said = autoresolve.confirm(data, c.marked, texts, autos)
    return None if said is None else (data, said)


@dataclass
class Taken:
    """What recording a maintainer's resolution found: the files, and the paths (or the
    whole resolution, path "") that could not be recorded, with why."""

    files: list[Resolution] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def take(repo: Repo, patch: int, commit: RawCommit, onto_tree: str, resolved_tree: str,
         version: int, note: str) -> Taken:
    """The resolutions of `commit`'s conflict onto `onto_tree` that the maintainer's
    `resolved_tree` holds. A path is recorded when its resolution only replaces hunks; and
    nothing is when the resolution also changed a path that did not conflict, since a
    replay that applied the rest would silently lack that change."""
    tree, found = conflicts(repo, commit, onto_tree)
    out = Taken()
    conflicted = {c.path for c in found}
    try:
        changed = repo.tree_changes(tree, resolved_tree)
    except CarryError as exc:  # a file became a folder, or the other way round
        out.skipped.append(("", f"the resolution {exc.line()}"))
        return out
    outside = sorted(p.decode("utf-8", "surrogateescape") for p in changed
                     if p not in conflicted)
    if outside:
        out.skipped.append(("", f"the resolution also changes {', '.join(outside[:3])}"
                                + (" ..." if len(outside) > 3 else "")
                                + ", which did not conflict"))
        return out
    for c in found:
        if c.marked is None:
            out.skipped.append((c.name, c.why))
            continue
        entry = repo.tree_lookup(resolved_tree, c.path)
        if entry is None or entry[0] not in REGULAR:
            out.skipped.append((c.name, "the resolution deletes it or changes its type"))
            continue
        texts = align(c.marked, split_lines(repo.read_object(entry[1])[2]))
        if texts is None:
            out.skipped.append((c.name, "the resolution changes lines outside the "
                                        "conflicted hunks too"))
            continue
        res = Resolution(patch, c.name, tuple(zip(c.marked.hunks, texts, strict=True)),
                         version, note)
        try:
            res.dump()
        except UnicodeDecodeError:
            out.skipped.append((c.name, "not UTF-8 text"))
            continue
        out.files.append(res)
    return out


# -- which resolutions can still apply ---------------------------------------------------------


def unmatched(recorded: Recorded, patches: dict[int, RawCommit | None], repo: Repo | None
              ) -> dict[str, str]:
    """The resolutions that no replay can use any more, by name, with why: those of a patch
    that left the series, and (given the repository) those whose conflict the patch can no
    longer make, because the patch, as a commit on the series base, no longer holds one side
    of a hunk or does not start from its base (a `--refresh` took the resolution into it, or
    a re-import changed it). `patches` maps the series' patch numbers to those commits (None
    without a repository)."""
    out = {}
    for res in recorded.files:
        if res.patch not in patches:
            out[res.name] = f"patch {res.patch:04d} is no longer in the series"
            continue
        commit = patches[res.patch]
        if repo is None or commit is None:
            continue
        if not _can_recur(repo, res, commit):
            out[res.name] = (f"patch {res.patch:04d} no longer holds the lines of this "
                             "conflict (it changed since, e.g. a --refresh took the "
                             "resolution into it)")
    return out


def _can_recur(repo: Repo, res: Resolution, commit: RawCommit) -> bool:
    """Whether some file the patch changes has, for every hunk, one side among its new
    lines and the base among its old ones (the conflict's own necessary condition)."""
    if not commit.parents:
        return False
    changes = repo.tree_changes(repo.read_commit(commit.parents[0]).tree, commit.tree)
    # a file the patch adds may be one it renames: its old lines are those of a file it
    # deletes, where the conflict's base then comes from
    sources = [split_lines(repo.read_object(old[1])[2]) for old, new in changes.values()
               if new is None and old is not None and old[0] in REGULAR]
    pairs = []
    for old, new in changes.values():
        if new is None or new[0] not in REGULAR:
            continue
        after = split_lines(repo.read_object(new[1])[2])
        if old is not None and old[0] in REGULAR:
            pairs.append((split_lines(repo.read_object(old[1])[2]), after))
        else:
            pairs += [(before, after) for before in sources or [[]]]
    return any(all((_within(list(h.ours), after) or _within(list(h.theirs), after))
                   and _within(list(h.base), before) for h, _ in res.hunks)
               for before, after in pairs)


def _within(block: list[bytes], lines: list[bytes]) -> bool:
    """`block` as consecutive lines of `lines` (a last line may have lost its newline)."""
    if not block:
        return True
    if block[-1].endswith(b"\n") and lines and not lines[-1].endswith(b"\n"):
        lines = [*lines[:-1], lines[-1] + b"\n"]  # git adds it before a marker
    return find_block(lines, block, 0, len(lines)) is not None
