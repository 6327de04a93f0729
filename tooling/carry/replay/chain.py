"""The one way patches become commits, for every command: `apply`, `rebase`, `range-diff` and
`validate` all commit a series through `materialize`, and the series on its recorded base is
cached as a chain under `refs/carry/cache/`, so a daily rebase parses no patch file.

A patch is applied in-process when its hunks stand exactly where git would apply them
(`hunks`), or else through a small private index of only the entries it names; when its
preimage is not exactly what the tree holds (an offset, a patch cut for another base) the
whole series goes through one private index of the full tree instead, which is slower in a
wide tree and is the one that words the errors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from carry.base.errors import CarryError, MissingRef
from carry.git import ANY, FROM_LINE, ApplyError, Entry, Ident, RawCommit, Repo
from carry.replay import hunks
from carry.replay.preimage import preimage
from carry.series import patches as patchmod
from carry.series.store import Base, Series

CACHE_PREFIX = "refs/carry/cache/"
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Carried:
    """One patch of the series and the commit it is on its recorded base."""

    number: int
    file: str
    patch: patchmod.Patch
    commit: RawCommit


def resolve_base(repo: Repo, base: Base, what: str, hint: str) -> str:
    """The commit a series (or one of its versions, `what`) applies to, present in `repo`."""
    rev = base.commit or base.ref
    if not rev:
        raise CarryError(f"{what} records no base")
    sha = repo.try_rev_parse(rev)
    if sha is None:
        raise MissingRef(f"the base {rev} of {what} is not in {repo.path}", str(repo.path),
                         hint)
    return sha


def series_base(series: Series, repo: Repo) -> str:
    return resolve_base(repo, series.manifest.base, f"series {series.name}",
                        "pass --fetch, or fetch the fork")


def load_chain(series: Series, repo: Repo) -> tuple[str, list[Carried]]:
    base = series_base(series, repo)
    return base, chain(repo, [(f.number, f.name, f.read()) for f in series.patches()], base)


def chain_key(base: str, files: Sequence[tuple[int, str, bytes]]) -> str:
    """What names a series' content on its base: the cache ref, and the validation cache."""
    key = hashlib.sha256(b"carry-chain-1\0" + base.encode())
    for _, name, data in files:
        key.update(b"\0" + name.encode() + b"\0" + hashlib.sha256(data).digest())
    return key.hexdigest()[:40]


def chain(repo: Repo, files: Sequence[tuple[int, str, bytes]], base: str) -> list[Carried]:
    """The patches (number, file name, bytes) committed onto `base`, built once per base and
    patch bytes, then cached under a ref.

    On a cache hit no patch is parsed: each commit already holds its patch's exact author and
    message, which is all that drop detection and the replay read; the origin comes from the
    patch's `From <sha>` line."""
    if not files:
        return []
    ref = CACHE_PREFIX + chain_key(base, files)
    shas = _cached(repo, ref, base, len(files))
    if shas is not None:
        out = []
        for (number, name, data), commit in zip(files, repo.read_commits(shas), strict=True):
            m = FROM_LINE.match(data)
            patch = patchmod.Patch(number, name, m.group(1).decode() if m else "",
                                   commit.author, commit.message, b"", (), commit.encoding)
            out.append(Carried(number, name, patch, commit))
        return out
    plist = [patchmod.parse(number, name, data) for number, name, data in files]
    stamp = repo.read_commit(base).committer.date
    shas = materialize(repo, plist, base, Ident("carry", "carry@cache", stamp))
    repo.set_ref(ref, shas[-1], ANY, message="carry cache", reflog=False)
    return [Carried(p.number, p.file, p, repo.read_commit(s))
            for p, s in zip(plist, shas, strict=True)]


def _cached(repo: Repo, ref: str, base: str, n: int) -> list[str] | None:
    shas = repo.first_parent_chain(ref, base)
    if shas is None or len(shas) != n or repo.read_commit(shas[0]).parents[:1] != (base,):
        return None
    return shas


def materialize(repo: Repo, plist: Sequence[patchmod.Patch], base: str, committer: Ident,
                progress: Progress | None = None) -> list[str]:
    """Commit each patch on top of the last, exact author and message; returns the commits,
    oldest first. A fixed `committer` makes the result deterministic (the cache)."""
    done = _from_origins(repo, plist, base, committer, progress)
    try:
        return done + _sparse(repo, plist[len(done):], done[-1] if done else base, committer,
                              progress, len(done))
    except _NotExact:
        return _full(repo, plist, base, committer, progress)


def _from_origins(repo: Repo, plist: Sequence[patchmod.Patch], base: str, committer: Ident,
                  progress: Progress | None) -> list[str]:
    """The longest first run of patches that are exactly the commits they were made from
    (their `From <sha>` lines), committed with those commits' trees and nothing applied:
    a commit whose parent has the tree the series has there, and whose diff, as format-patch
    writes it, is the patch's diff byte for byte (the diffstat before it is only stat lines,
    which `git apply` skips), gives that commit's tree. One `diff-tree` for the whole series
    costs a fifth of applying it on vLLM's tree; CI's fresh clone has the fork's commits.
    An edited patch, or an origin this clone lacks, ends the run: the rest is applied."""
    origins = [p.origin for p in plist]
    origins = origins[:origins.index("")] if "" in origins else origins
    if not origins:
        return []
    try:
        commits = repo.read_commits(origins)
        parents = repo.read_commits([c.parents[0] if c.parents else base for c in commits])
    except CarryError:  # not in this clone (a PR's commits never fetched)
        return []
    trees, tree = [], repo.read_commit(base).tree  # each origin's tree, while parents chain
    for c, before in zip(commits, parents, strict=True):
        if len(c.parents) != 1 or before.tree != tree:
            break
        trees.append(tree := c.tree)
    try:  # only for those: a series put onto another base asks git for nothing
        diffs = repo.commit_diffs(origins[:len(trees)])
    except CarryError:  # a damaged object: applying says what is wrong, or works
        return []
    out, parent = [], base
    for i, (patch, tree) in enumerate(zip(plist, trees, strict=False), 1):
        if not _same_diff(patch.diff, diffs.get(patch.origin)):
            break
        if progress:
            progress(i, len(plist), patch.file)
        parent = repo.write_commit(tree, [parent], patch.message, patch.author, committer,
                                   patch.encoding)
        out.append(parent)
    return out


def _same_diff(diff: bytes, made: bytes | None) -> bool:
    """`diff` is `made` after whole lines that `git apply` skips: format-patch's `---`, its
    diffstat (each line starts with a space) and blank lines."""
    if made is None or not made.startswith(b"diff --git ") or not diff.endswith(made):
        return False
    before = diff[:len(diff) - len(made)]
    return (not before or before.endswith(b"\n")) and all(
        line in (b"---", b"") or line.startswith(b" ") for line in before.split(b"\n"))


def _full(repo: Repo, plist: Sequence[patchmod.Patch], base: str, committer: Ident,
          progress: Progress | None) -> list[str]:
    try:
        trees = repo.apply_full(repo.read_commit(base).tree, [p.diff for p in plist])
    except ApplyError as exc:
        bad = plist[exc.index]
        raise CarryError(f"{bad.file} does not apply onto {base[:12]}: {exc}",
                         hint="carry rebase replays with a three-way merge") from None
    out, parent = [], base
    for i, (patch, tree) in enumerate(zip(plist, trees, strict=True), 1):
        if progress:
            progress(i, len(plist), patch.file)
        parent = repo.write_commit(tree, [parent], patch.message, patch.author, committer,
                                   patch.encoding)
        out.append(parent)
    return out


class _NotExact(Exception):
    """A patch whose preimage is not the tree's: the full-index path takes the series."""


def _sparse(repo: Repo, plist: Sequence[patchmod.Patch], base: str, committer: Ident,
            progress: Progress | None, done: int = 0) -> list[str]:
    parent, tree = base, repo.read_commit(base).tree
    out = []
    for i, patch in enumerate(plist, done + 1):
        if progress:
            progress(i, done + len(plist), patch.file)
        try:
            before, after = _apply_one(repo, tree, patch.diff)
        except CarryError:
            raise _NotExact from None
        if any(repo.tree_lookup(tree, p) is not None for p in after.keys() - before.keys()):
            raise _NotExact
        changes: dict[bytes, Entry | None] = {p: None for p in before if p not in after}
        changes.update({p: e for p, e in after.items() if before.get(p) != e})
        if changes:
            try:
                tree = repo.edit_tree(tree, changes) or repo.write_object("tree", b"")
            except CarryError:
                raise _NotExact from None
        parent = repo.write_commit(tree, [parent], patch.message, patch.author, committer,
                                   patch.encoding)
        out.append(parent)
    return out


def _apply_one(repo: Repo, tree: str, diff: bytes) -> tuple[dict[bytes, Entry],
                                                             dict[bytes, Entry]]:
    """(before, after) of one patch on `tree`, for the paths it names. The entries it reads
    come from its own `index` lines, checked against the tree in-process. Hunks whose lines
    stand exactly where git would put them are applied in-process (no process at all);
    otherwise `git apply --cached` on a small index is the one process; a diff whose lines do
    not say for sure goes through `--build-fake-ancestor` (four processes)."""
    expect = preimage(diff)
    if expect is None:
        before, after = repo.apply_sparse(diff)
        if any(repo.tree_lookup(tree, p) != e for p, e in before.items()):
            raise _NotExact
        return before, after
    before = {}
    for path, (mode, sha) in expect.items():
        have = repo.tree_lookup(tree, path)
        if have is None or have[0] == b"40000" or mode not in (None, have[0]) or \
                sha not in (None, have[1]):
            raise _NotExact
        before[path] = have
    done = hunks.apply(diff, before, repo.read_object, repo.write_object)
    return before, repo.apply_entries(diff, before) if done is None else done
