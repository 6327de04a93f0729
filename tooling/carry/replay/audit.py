"""The audit after a clean replay: git merging without a conflict does not make a patch
correct. For each applied patch, the Python files it touches are parsed at the result; each
must compile, and each project name the patch's own added lines use (`import a.b`,
`from a.b import c`, `envs.X` with `envs` a project module) must resolve in the result tree.

It reads blobs through the repository's long-lived cat-file and never imports anything. A
finding needs proof both ways: the name resolved where the patch was written (its commit on
the series base) and does not at the result, or the file compiled on both sides before the
merge and does not after it. Anything a parser cannot be sure of (star imports, `globals()`,
a `__getattr__` with no declared names, generated modules) says nothing."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from carry.base import atomic, untrusted
from carry.base.errors import CarryError
from carry.git import Repo
from carry.replay import pyblobs, pyfacts, pytext
from carry.replay.runs import Changes, PatchResult, commit_changes

ROOTS = ("", "src/")  # where a project's top-level packages live
LEFT_OUT = {"skipped": "skipped", "dropped": "dropped", "conflict": "stopped",
            "would-conflict": "stopped"}
_FILE_MODES = (b"100644", b"100755")
class Kind(StrEnum):
    SYNTAX = "syntax"  # the result does not compile, though both sides did
    NAME = "name"  # a name read from a project module that the result does not define
    MODULE = "module"  # a project module the result does not have
    UNAUDITED = "unaudited"  # too large, too deeply nested: not read


@dataclass(frozen=True)
class AuditFinding:
    """One thing a cleanly applied patch breaks at the result. `defined_by` is the patch,
    left out of this replay (`defined_as`: skipped, dropped or stopped), that alone defines
    the name; `detail` the module a missing name was read from, the parser's message, or
    why the file was not audited. `path` is the patch's file that uses the name."""

    patch: int
    path: str
    name: str
    kind: Kind
    defined_by: int | None = None
    defined_as: str = ""
    detail: str = ""
    resolved: bool = False  # the patch applied through a recorded resolution

    json_extra: ClassVar[tuple[str, ...]] = ("line",)

    @property
    def line(self) -> str:
        how = "applies through a recorded resolution" if self.resolved else "applies cleanly"
        head = f"{self.patch:04d} {how} but"
        if self.kind == Kind.SYNTAX:
            return f"{head} {self.path} does not compile: {self.detail}"
        if self.kind == Kind.UNAUDITED:
            return f"{self.patch:04d}: could not audit {self.path}: {self.detail}"
        what = "imports" if self.kind == Kind.MODULE else "uses"
        if self.defined_by is not None:
            verb = "adds" if self.kind == Kind.MODULE else "defines"
            return (f"{head} {what} {self.name}, which only the {self.defined_as} "
                    f"{self.defined_by:04d} {verb}")
        if self.kind == Kind.MODULE:
            return f"{head} {what} {self.name}, a module the target does not have"
        return f"{head} {what} {self.name}, which {self.detail} does not define at the target"


class _Tree:
    """One tree as a namespace of modules, looked up in the repository's parsed trees."""

    def __init__(self, repo: Repo, tree: str, parsed: pyblobs.Parsed) -> None:
        self.repo, self.sha, self.parsed = repo, tree, parsed

    def entry(self, path: str) -> tuple[bytes, str] | None:
        return self.repo.tree_lookup(self.sha, path.encode("utf-8", "surrogateescape"))

    def module(self, dotted: str) -> tuple[str, str] | None:
        """(path, blob) of the module `dotted`; blob "" for a package without `__init__`."""
        if not dotted or any(not p.isidentifier() for p in dotted.split(".")):
            return None
        rel = dotted.replace(".", "/")
        for root in ROOTS:
            for path in (f"{root}{rel}.py", f"{root}{rel}/__init__.py"):
                e = self.entry(path)
                if e is not None and e[0] in _FILE_MODES:
                    return path, e[1]
            e = self.entry(f"{root}{rel}")
            if e is not None and e[0] == b"40000":
                return f"{root}{rel}", ""
        return None

    def defines(self, dotted: str, name: str) -> bool | None:
        """Whether module `dotted` has `name`: a submodule, or a top-level name."""
        found = self.module(dotted)
        if found is None:
            return False
        if self.module(f"{dotted}.{name}") is not None:
            return True
        return self.parsed.defines(found[1], name) if found[1] else False


@dataclass(frozen=True)
class _File:
    """One Python file a patch leaves: its blob before and after the patch (where it was
    written) and at the result."""

    path: str
    before: str
    after: str
    now: str


def run(repo: Repo, steps: Sequence[PatchResult], head: str, onto: str) -> list[AuditFinding]:
    """Every finding of the applied patches in `steps`, replayed onto `onto` up to `head`."""
    parsed = pyblobs.Parsed(repo)
    result = _Tree(repo, repo.read_commit(head).tree, parsed)
    target = repo.read_commit(onto).tree
    applied = [s for s in steps if s.status == "applied" and s.source]
    # each patch's changes as the replay read them (runs keeps them in .git/carry/changes/)
    changes = commit_changes(repo, [s.source for s in steps if s.source])
    py = {sha: {p: e for p, e in ch.items() if p.endswith(b".py") and e[1] is not None}
          for sha, ch in changes.items()}
    paths = {p for s in applied for p in py.get(s.source, ())}
    repo.read_paths(result.sha, paths)  # the trees on the way, a few exchanges in all
    repo.read_paths(target, paths)
    repo.read_commits([s.source for s in applied])  # one exchange; kept parsed
    work = []
    known: dict[str, set[str]] = {}  # path -> the blobs the series had: they compiled there
    for step in applied:
        files = _files(result, py.get(step.source, {}))
        for f in files:
            known.setdefault(f.path, set()).add(f.after)
        work.append((step, _Tree(repo, repo.read_commit(step.source).tree, parsed), files))
    parsed.load([b for _, _, files in work for f in files for b in (f.before, f.after, f.now)])
    tops = _tops(repo, result.sha)
    out: list[AuditFinding] = []
    for step, source, files in work:
        found: dict[tuple[str, str], AuditFinding] = {}
        for f in files:
            for x in _file(parsed, step, f, source, result, target, known, tops):
                found.setdefault((x.path, x.name), x)
        out.extend(_blame(repo, parsed, x, steps) for x in found.values())
    return out


def _files(result: _Tree, changes: Changes) -> list[_File]:
    files = []
    for raw, (old, new) in changes.items():
        path = raw.decode("utf-8", "surrogateescape")
        if new is not None and new[0] in _FILE_MODES:
            at = result.entry(path)
            if at is not None and at[0] in _FILE_MODES:
                files.append(_File(path, old[1] if old else "", new[1], at[1]))
    return files


def _tops(repo: Repo, tree: str) -> set[bytes]:
    """The names a project import starts with: the result's top-level packages and modules."""
    out = set()
    for root in ROOTS:
        at = repo.tree_lookup(tree, root.rstrip("/").encode()) if root else (b"40000", tree)
        if at is not None and at[0] == b"40000":
            for name, (mode, _) in repo.tree_items(at[1]).items():
                out.add(name.removesuffix(b".py") if mode != b"40000" else name)
    return out


def _file(parsed: pyblobs.Parsed, step: PatchResult, f: _File, source: _Tree, result: _Tree,
          target: str, known: dict[str, set[str]], tops: set[bytes]) -> list[AuditFinding]:
    resolved = bool(step.resolutions)
    upstream = result.repo.tree_lookup(target, f.path.encode("utf-8", "surrogateescape"))
    merged = f.now not in known[f.path] and (upstream is None or upstream[1] != f.now)
    old = set(parsed.rows(f.before))
    added = {t for t in parsed.rows(f.after) if t not in old and t.strip()}
    rows = parsed.rows(f.now)
    lines = {i for i, t in enumerate(rows, 1) if t in added}
    found = parsed.imports(f.now, f.path, tops) if lines else pytext.Imports()
    at_imports = found.rows()
    lines = {n for n in lines
             if n in at_imports or found.mentions(rows[n - 1])}
    if not merged and not (lines and _unsure(rows, lines, found, result)):
        return []  # the file as the series had it, every name it adds resolves: no parse
    bad = parsed.error(f.now, parse=bool(lines))
    if bad is not None:
        if bad.startswith("unaudited: "):
            return [AuditFinding(step.number, f.path, "", Kind.UNAUDITED,
                                 detail=bad.removeprefix("unaudited: "), resolved=resolved)]
        if merged and parsed.error(f.after) is None and (
                upstream is None or parsed.error(upstream[1]) is None):
            return [AuditFinding(step.number, f.path, "", Kind.SYNTAX, detail=bad,
                                 resolved=resolved)]
        return []
    if not lines:
        return []
    tree = parsed.tree(f.now)
    assert isinstance(tree, ast.Module)  # error() parsed it: no error, so a module
    out = []
    for use in pyfacts.uses(tree, f.path, lines) if lines else ():
        finding = _check(use, step, f.path, source, result)
        if finding is not None:
            out.append(finding)
    return out


def _unsure(rows: list[bytes], lines: set[int], found: pytext.Imports,
            result: _Tree) -> bool:
    """Whether a name the added `lines` may use is possibly missing at the result, read
    from the text: when not, no finding is possible, and the file is not parsed."""
    for first, last, module, names in found.statements:
        if not any(first <= n <= last for n in lines):
            continue
        if module and (result.module(module) is None or any(
                result.defines(module, n) is False for n, _ in names if n != "*")):
            return True
        if not module and any(result.module(n) is None for n, _ in names):
            return True
    for n in lines:
        for parts in pytext.attributes(rows[n - 1], found.bound):
            if any(_missing(result, module, parts[1:]) for module in found.bound[parts[0]]):
                return True
    return False


def _missing(result: _Tree, module: str, parts: list[str]) -> bool:
    if result.module(module) is None:
        return False  # a class or a function, not a module: nothing to check
    for part in parts:
        if result.module(f"{module}.{part}") is None:
            return result.defines(module, part) is False
        module = f"{module}.{part}"
    return False


def _check(use: pyfacts.Use, step: PatchResult, path: str, source: _Tree,
           result: _Tree) -> AuditFinding | None:
    """A finding when `use` resolved where the patch was written and does not at the result;
    never when either side cannot tell."""
    resolved = bool(step.resolutions)
    if result.module(use.module) is None:
        if use.attribute or source.module(use.module) is None:
            return None
        return AuditFinding(step.number, path, use.module, Kind.MODULE, resolved=resolved)
    if not use.name or result.defines(use.module, use.name) is not False:
        return None
    if source.defines(use.module, use.name) is not True:
        return None
    return AuditFinding(step.number, path, use.shown, Kind.NAME, detail=use.module,
                        resolved=resolved)


def _blame(repo: Repo, parsed: pyblobs.Parsed, f: AuditFinding,
           steps: Sequence[PatchResult]) -> AuditFinding:
    """The finding with the left-out patch that alone adds what it misses: the latest one
    before the patch, or else the first after it."""
    if f.kind not in (Kind.NAME, Kind.MODULE):
        return f
    module, name = (f.detail, f.name.rpartition(".")[2]) if f.kind == Kind.NAME else \
        (f.name, "")
    before: list[PatchResult] = []
    after: list[PatchResult] = []
    for s in steps:
        if s.status in LEFT_OUT and s.source:
            (before if s.number < f.patch else after).append(s)
    for s in [*reversed(before), *after]:
        commit = repo.read_commit(s.source)
        if not commit.parents:
            continue
        new = _Tree(repo, commit.tree, parsed)
        old = _Tree(repo, repo.read_commit(commit.parents[0]).tree, parsed)
        adds = (new.defines(module, name) is True and old.defines(module, name) is False) \
            if name else (new.module(module) is not None and old.module(module) is None)
        if adds:
            from dataclasses import replace

            return replace(f, defined_by=s.number, defined_as=LEFT_OUT[s.status])
    return f


def record(repo: Repo, head: str, findings: Sequence[AuditFinding]) -> None:
    """Keep the findings of a result written to a branch, by its head commit, so that
    `carry status` says them later; a result with none leaves nothing."""
    if findings and re.fullmatch(r"[0-9a-f]{40,64}", head):
        atomic.write_json(repo.carry_dir() / "audit" / f"{head}.json",
                          [f.line for f in findings])


def recorded(repo: Repo, head: str) -> list[str]:
    """The findings `record` kept for `head`; none when there are none or the file is
    damaged (status shows what it can)."""
    if not re.fullmatch(r"[0-9a-f]{40,64}", head):
        return []
    try:
        data = untrusted.read_json(repo.carry_dir() / "audit" / f"{head}.json", list,
                                   missing_ok=True)
    except (CarryError, ValueError):
        return []
    return [x for x in data or [] if isinstance(x, str)]
