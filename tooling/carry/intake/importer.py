"""`carry import`: bring a range, a branch or a PR head into `series/<name>/`.

Re-importing the same commits writes no byte; new content bumps the version and adds one
changelog line. The range is read with one `format-patch` process. A range that merged
upstream is made linear first (`linearize`), keeping what its merges resolved.
"""

from __future__ import annotations

import re
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from carry.base.errors import CarryError
from carry.git import ANY, RawCommit, Repo
from carry.intake import changes, guard
from carry.intake.linearize import Linear, Report, linearize
from carry.series import locks, versions
from carry.series import patches as patchmod
from carry.series import store as seriesmod
from carry.series.linearized import Linearized
from carry.series.store import Base, Manifest, Series


@dataclass(frozen=True)
class ImportResult:
    series: str
    version: int
    changed: bool
    base: str
    head: str
    patches: list[str]
    source: str
    note: str = ""
    linearized: Report | None = None  # the merges of upstream carried across, when any
    commit: str = ""  # the git command that commits the new version (written, not committed)


def open_source(spec: str, scratch: ExitStack) -> Repo:
    """A local path, or a URL cloned (bare) into a temporary directory that `scratch` removes."""
    if re.match(r"^[a-z+]+://", spec) or re.match(r"^[\w.-]+@[\w.-]+:", spec):
        tmp = scratch.enter_context(tempfile.TemporaryDirectory(prefix="carry-import-"))
        return Repo.clone(spec, Path(tmp) / "source.git")
    return Repo.open(spec)


def resolve_range(
    repo: Repo, rng: str | None, branch: str | None, pr: int | None, base_ref: str
) -> tuple[str, str, str]:
    """Return (base commit, head commit, a description of the source)."""
    given = [x for x in (rng, branch, pr) if x]
    if len(given) != 1:
        raise CarryError("give exactly one of --range, --branch or --pr")
    if rng:
        if ".." not in rng or "..." in rng:
            raise CarryError(f"--range must look like BASE..HEAD, got {rng!r}")
        # As `git format-patch A..B`: the commits apply to where B left A, so a branch cut
        # before upstream moved on is based on that fork point, not on A's tip.
        base_ref, head_ref = (end or "HEAD" for end in rng.split("..", 1))
        base_sha, head = repo.commit_ids([base_ref, head_ref])
        desc = rng
    elif not base_ref:
        raise CarryError("--branch and --pr need a base ref", hint="pass --base REF")
    else:
        base_sha = repo.rev_parse(base_ref)
    if branch:
        head, desc = repo.rev_parse(branch), f"branch {branch}"
    elif pr:
        local = f"refs/carry/pull/{pr}"
        if not repo.ref_exists(f"refs/pull/{pr}/head"):
            remotes = repo.remotes()
            # The PR lives where the base branch lives: `fork/dev/...` means remote `fork`.
            remote = next((r for r in remotes if base_ref.startswith(f"{r}/")),
                          "origin" if "origin" in remotes else next(iter(remotes), None))
            if remote is None:
                raise CarryError(f"no refs/pull/{pr}/head in {repo.path} and no remote to fetch")
            repo.fetch_refspec(remote, f"+refs/pull/{pr}/head:{local}")
        else:
            repo.set_ref(local, repo.rev_parse(f"refs/pull/{pr}/head"), ANY, reflog=False)
        head, desc = repo.rev_parse(local), f"pull request #{pr}"
    mb = repo.merge_base(base_sha, head)
    if mb is None and rng and repo.shallow_boundary():
        return base_sha, head, desc  # the cut hides the fork point: the import says so
    if mb is None:
        raise CarryError(f"{desc} shares no history with {base_ref}")
    return mb, head, desc


@dataclass(frozen=True)
class Source:
    """What to import: a repository (a path or a URL) and exactly one of a range, a branch or
    a PR head; `base` names the upstream point a branch or PR is cut from."""

    repo: str
    range: str | None = None
    branch: str | None = None
    pr: int | None = None
    base: str | None = None


@dataclass(frozen=True)
class _Read:
    """The patches of a source as files, with where they apply."""

    base: str
    head: str
    desc: str
    base_name: str
    files: dict[str, bytes]
    linear: Linear
    linearized: list[Linearized]


def run(root: Path, name: str, source: Source, title: str | None = None,
        today: str | None = None, force: bool = False) -> ImportResult:
    """`force` writes even what goes back to an older version (`guard`)."""
    seriesmod.check_name(name)
    with locks.series_lock(root, name):
        existing = seriesmod.find(root, name) if (root / name / seriesmod.MANIFEST).exists() \
            else None
        read = _read(source, existing)
        return _write(root, name, read, existing, title, today, force)


def _read(source: Source, existing: Series | None) -> _Read:
    """Every commit of the source as a patch file, merges of upstream linearized; refused
    when a commit changes nothing (its patch would be lost on the way back)."""
    with ExitStack() as scratch:
        repo = open_source(source.repo, scratch)
        try:
            ref = source.base or (existing.manifest.base.ref if existing else "")
            base, head, desc = resolve_range(repo, source.range, source.branch, source.pr, ref)
            commits = repo.rev_list(base, head, topo_order=True)
            _within_history(repo, commits, base, desc)
            if not commits:
                raise CarryError(f"{desc} has no commits on top of {base[:12]}")
            base_commit, *in_range = repo.read_commits([base, *commits])
            linear = linearize(repo, base_commit, dict(zip(commits, in_range, strict=True)), desc)
            base_commit, read = linear.base, linear.commits
            base, commits = base_commit.sha, list(read)
            tree = base_commit.tree
            for sha in commits:
                if read[sha].tree == tree:
                    raise _lost(sha, read[sha].subject, "it changes nothing")
                tree = read[sha].tree
            base_name = _base_name(repo, base, [source.base or "", range_base_name(source.range),
                                                existing.manifest.base.ref if existing else ""])
            formatted = linear.named(repo.format_patch(base, linear.head, commits))
            _same_commits(read, [sha for sha, _ in formatted])
            files, names = {}, {}
            for i, (sha, text) in enumerate(formatted, 1):
                commit = read[sha]
                names[sha] = patchmod.file_name(i, commit.subject)
                files[names[sha]] = patchmod.render(commit, text)
            linearized = changes.find(repo, linear, names)
            linear = changes.with_changes(linear, linearized)
        finally:
            repo.close()
    return _Read(base, head, desc, base_name, files, linear, linearized)


def _write(root: Path, name: str, read: _Read, existing: Series | None, title: str | None,
           today: str | None, force: bool) -> ImportResult:
    """The next version when anything changed (checked by `guard` unless `force`); the same
    commits again write no byte."""
    files, base = read.files, read.base
    manifest = existing.manifest if existing else Manifest(name=name, title="")
    manifest.title = title or manifest.title or repo_subject(files)
    old_files = {p.name: p.read() for p in existing.patches()} if existing else {}
    changed = old_files != files or manifest.base.commit != base
    if existing and changed and not force:
        guard.check(existing, files)
    manifest.base = Base(ref=read.base_name, commit=base)
    manifest.linearized = read.linearized  # check knows these patches are not the fork's
    if changed:
        summary = f"imported {len(files)} patches from {read.desc} onto {base[:12]}"
        if read.linear.report:
            summary += f"; {read.linear.report.summary()}"
        versions.write_next(root / name, manifest, files, summary, today)
    else:
        seriesmod.write_series(root / name, manifest, files)
    note = "" if existing else (
        f"series {name} did not exist: import wrote a bare manifest (no upstream, targets or "
        f"test plan); `carry init {name} --upstream OWNER/REPO --fork OWNER/REPO --repo PATH` "
        "makes a full one before the import")
    return ImportResult(name, manifest.version, changed, base, read.head, list(files),
                        read.desc, note, read.linear.report,
                        versions.commit_command(root / name, manifest.version) if changed else "")


def _base_name(repo: Repo, base: str, names: list[str]) -> str:
    """The manifest's base names the commit the patches apply to: the first of `names`
    (--base, the range's own base, the manifest's) that is that commit, else the commit.
    A --base or a manifest base the fork moved on from (`dev/...` whose merge-base with the
    range is older) would name another commit than the one recorded beside it."""
    for name in names:
        if name and not name.startswith("-") and repo.try_rev_parse(name) == base:
            return name
    return base


def _within_history(repo: Repo, commits: list[str], base: str, desc: str) -> None:
    """In a shallow clone a range whose base lies below the cut reaches a commit that looks
    parentless: its patch would add the whole tree."""
    boundary = repo.shallow_boundary()
    cut = [c for c in commits if c in boundary]
    if cut:
        raise CarryError(f"{desc}: the base {base[:12]} is beyond the shallow clone's history "
                         f"(it ends at {cut[0][:12]}), so a patch would add the whole tree",
                         hint=f"git -C {repo.path} fetch --unshallow")


def _same_commits(read: dict[str, RawCommit], patched: list[str]) -> None:
    """One patch per commit, each the commit it says it is, in order: the guard must not be
    fooled by a count that happens to match."""
    commits = list(read)
    if patched == commits:
        return
    missing = next((c for c in commits if c not in set(patched)), None)
    if missing is not None:
        raise _lost(missing, read[missing].subject, "git format-patch wrote none")
    raise CarryError(f"format-patch gave {len(patched)} patches for {len(commits)} commits, "
                     "not one per commit in order; refusing to lose any")


def _lost(sha: str, subject: str, why: str) -> CarryError:
    return CarryError(f"commit {sha[:12]} ({subject!r}) has no patch: {why}; refusing to lose "
                      "any", hint="drop the empty commit from the range, or give it a change")


def range_base_name(rng: str | None) -> str:
    """The base of `--range BASE..HEAD` as the user named it, so the manifest keeps
    `upstream/main` rather than the sha it resolved to today."""
    base = rng.split("..", 1)[0] if rng else ""
    return "" if re.fullmatch(r"[0-9a-fA-F]{7,64}", base) else base


def repo_subject(files: dict[str, bytes]) -> str:
    first = next(iter(files.values()))
    m = re.search(rb"^Subject: (.*)$", first, re.M)
    return m.group(1).decode("utf-8", "replace") if m else "carried series"

