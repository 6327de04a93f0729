"""`carry range-diff NAME vA vB`: rebuild two versions of a series as commits and compare them
with `git range-diff`.

Each version is committed onto its own recorded base through the same cached chain the rebase
uses, so comparing versions that were rebased before costs no patch application. An empty side
(a version whose patches upstream absorbed) goes through the three-argument form, which git 2.39
accepts where `A..A B..C` fails with "need two commit ranges".

The output is git's: a line per pair of patches and, under a changed pair, the diff between
its two versions (the inner diff), unless `patch` is off (`--no-patch`). `--json` gives the
same as `pairs`, each with its inner diff. `creation_factor` is git's `--creation-factor`: a
patch that changed much reads as one patch removed and another added until it is raised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from carry.base.errors import CarryError
from carry.git import Repo
from carry.replay.chain import chain, resolve_base
from carry.replay.targets import ontos, target_refs
from carry.series import versions
from carry.series.store import MANIFEST, PATCH_NAME, Series, loads_manifest, parse_manifest


@dataclass(frozen=True)
class Side:
    label: str
    base: str
    head: str
    count: int


@dataclass(frozen=True)
class Pair:
    """One line of git's output: a patch of the old side, of the new, or one of each."""

    old: int | None  # position on its side, from 1; None when the patch is on one side only
    old_commit: str
    status: str  # same | changed | removed (old only) | added (new only)
    new: int | None
    new_commit: str
    subject: str
    diff: str = ""  # the inner diff of a changed pair, as git shows it


@dataclass(frozen=True)
class RangeDiff:
    series: str
    old: Side
    new: Side
    output: str
    resolutions: list[str] = field(default_factory=list)  # "+ NAME", "- NAME", "~ NAME"
    pairs: list[Pair] = field(default_factory=list)


@dataclass(frozen=True)
class Options:
    color: bool = False
    creation_factor: int | None = None  # git's --creation-factor, a percentage
    patch: bool = True  # the inner diff of each changed pair


_STATUS = {"=": "same", "!": "changed", "<": "removed", ">": "added"}
_PAIR = re.compile(r"^\s*(\d+|-):\s+([0-9a-f]+|-+) ([=!<>]) \s*(\d+|-):\s+([0-9a-f]+|-+) (.*)$",
                   re.ASCII)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def pairs(output: str) -> list[Pair]:
    """git range-diff's lines as pairs, each with the indented inner diff that follows it."""
    out: list[Pair] = []
    inner: list[str] = []

    def close() -> None:
        if out and inner:
            last = out.pop()
            out.append(Pair(last.old, last.old_commit, last.status, last.new, last.new_commit,
                            last.subject, "".join(inner)))
        inner.clear()

    for line in _ANSI.sub("", output).splitlines(keepends=True):
        m = _PAIR.match(line.rstrip("\n"))
        if m is None:
            inner.append(line)
            continue
        close()
        a, sha_a, mark, b, sha_b, subject = m.groups()
        out.append(Pair(int(a) if a != "-" else None, sha_a.strip("-"), _STATUS[mark],
                        int(b) if b != "-" else None, sha_b.strip("-"), subject))
    close()
    return out


def run(series: Series, repo: Repo, old: str, new: str | None = None,
        against: str | None = None, opts: Options | None = None) -> RangeDiff:
    if new and against:
        raise CarryError("give either a second version or --against, not both")
    for rev in (against.split("..", 1) if against else []):  # a typo fails before any write
        repo.rev_parse(rev or "HEAD")
    opts = opts or Options()
    if opts.creation_factor is not None and opts.creation_factor < 0:
        raise CarryError(f"--creation-factor {opts.creation_factor}: expected a percentage >= 0")
    a = version_side(series, repo, old)
    b = ref_side(series, repo, against, a) if against else version_side(series, repo,
                                                                        new or "current")
    moved = [] if against else resolutions_moved(series, old, new or "current")
    output = compare(repo, a, b, opts)
    return RangeDiff(series.name, a, b, output, resolutions=moved, pairs=pairs(output))


def resolutions_moved(series: Series, old: str, new: str) -> list[str]:
    """The recorded resolutions one version has and the other not (+ added, - removed, ~
    changed): they are part of a version, but no commit of range-diff shows them."""
    a, b = versions.read(series, old).resolutions, versions.read(series, new).resolutions
    return [f"{'+' if n not in a else '-' if n not in b else '~'} {n}"
            for n in sorted(a.keys() | b.keys()) if a.get(n) != b.get(n)]


def version_side(series: Series, repo: Repo, version: str) -> Side:
    snap = versions.read(series, version)
    label = version if version == "current" else f"v{version.lstrip('v')}"
    # A kept version's or a tag's manifest goes through the same reader as the current one.
    where = series.root / MANIFEST if version == "current" else Path(
        f"{series.name} {label}") / MANIFEST
    manifest = parse_manifest(where, loads_manifest(where, snap.manifest))
    if not snap.patches:
        rev = manifest.base.commit or manifest.base.ref
        empty = repo.try_rev_parse(rev) if rev else None
        return Side(label, empty or "", empty or "", 0)
    base = resolve_base(repo, manifest.base, f"{series.name} {label}", "fetch it into --repo")
    files = []
    for name, data in snap.patches.items():
        m = PATCH_NAME.match(name)
        assert m is not None  # versions.read only returns patch file names
        files.append((int(m.group(1)), name, data))
    carried = chain(repo, files, base)
    return Side(label, base, carried[-1].commit.sha, len(carried))


def ref_side(series: Series, repo: Repo, against: str, old: Side) -> Side:
    """`BASE..HEAD`, or a ref: for a branch that carry rebase wrote, its reflog names the
    commit it went onto; otherwise the nearest merge base with a manifest target (or with the
    old version's base) is taken for the start."""
    if ".." in against:
        base_rev, _, head_rev = against.partition("..")
        base, head = repo.rev_parse(base_rev or "HEAD"), repo.rev_parse(head_rev or "HEAD")
    else:
        head = repo.rev_parse(against)
        candidates = {old.base} if old.base else set()
        for _, message in repo.reflog(against):  # where carry rebase put the branch
            onto = [sha for sha in ontos(message) if repo.is_ancestor(sha, head)]
            if onto:
                candidates = set(onto[:1])
                break
        for t in series.manifest.targets:
            for ref in target_refs(repo, t):
                sha = repo.try_rev_parse(ref)
                mb = repo.merge_base(sha, head) if sha else None
                if mb:
                    candidates.add(mb)
        if not candidates:
            raise CarryError(f"cannot tell where {against} starts",
                             hint="pass --against BASE..HEAD")
        counted = [(len(repo.rev_list(c, head)), c) for c in sorted(candidates)]
        base = min(counted)[1]
    return Side(against, base, head, len(repo.rev_list(base, head)))


def compare(repo: Repo, a: Side, b: Side, opts: Options | None = None) -> str:
    o = opts or Options()

    def diff(old: tuple[str, str], new: tuple[str, str]) -> str:
        return repo.range_diff(old, new, color=o.color, creation_factor=o.creation_factor,
                               patch=o.patch)

    if a.count == 0 and b.count == 0:
        return ""
    if a.count == 0:  # an empty side is compared from the other's base
        return diff((b.base, b.base), (b.base, b.head))
    if b.count == 0:
        return diff((a.base, a.head), (a.base, a.base))
    return diff((a.base, a.head), (b.base, b.head))
