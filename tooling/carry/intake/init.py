"""`carry init`: a manifest a new series can rebase, validate and open a PR from.

It reads what it can from a local clone: which remote is upstream and which the fork (by
their URLs), upstream's default branch, the newest release tag pattern and the fork's dev
branch. What it cannot learn it leaves as a comment, never as a guess that looks like a fact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from carry.base import redact
from carry.base.errors import CarryError
from carry.git import Repo
from carry.series import locks
from carry.series import store as seriesmod
from carry.series.store import Base, Manifest, Repository, Target


@dataclass
class InitResult:
    series: str
    path: str
    upstream: dict[str, str]
    fork: dict[str, str]
    base: dict[str, str]
    targets: list[dict[str, object]]
    notes: list[str] = field(default_factory=list)
    repo: str = ""
    setup: list[str] = field(default_factory=list)  # git commands that make the refs resolve


def remote_for(repo: Repo | None, slug: str) -> tuple[str, str]:
    """(remote name, url) of the remote whose URL names OWNER/REPO, if --repo has one."""
    if repo is None:
        return "", ""
    want = slug.lower()
    for name, url in repo.remote_urls().items():
        path = re.sub(r"\.git/?$", "", url.rstrip("/")).lower()
        if path.endswith("/" + want) or path.endswith(":" + want):
            return name, url
    return "", ""


def _default_branch(repo: Repo | None, remote: str) -> str:
    if repo is None or not remote:
        return "main"
    name = repo.remote_default(remote)
    if name:
        return name
    for cand in ("main", "master"):
        if repo.ref_exists(f"refs/remotes/{remote}/{cand}"):
            return cand
    return "main"


def _dev_branch(repo: Repo | None, remote: str, given: str) -> str:
    """The fork's integration branch: --dev-branch, else its most recently committed `dev/*`."""
    if given or repo is None or not remote:
        return given
    refs = repo.for_each_ref(f"refs/remotes/{remote}/dev/", "%(committerdate:unix) %(refname)")
    newest = sorted(refs, key=lambda line: int(line.split()[0]), reverse=True)
    return newest[0].split()[1].removeprefix(f"refs/remotes/{remote}/") if newest else ""


def _missing(repo: Repo | None, slug: str, remote: str, notes: list[str]) -> None:
    """Note the remote the manifest names for `slug` when no URL of the clone names it: an
    existing remote of the usual name is taken as it (a mirror, a local path); else it is one
    to add (`setup_commands` says how)."""
    if repo is None:
        return
    url = repo.remote_urls().get(remote)
    notes.append(f"no remote of {repo.path} points at {slug}; assumed remote {remote!r} "
                 f"({redact.strip_url(url)}) is it" if url else
                 f"no remote of {repo.path} points at {slug}: the manifest names it remote "
                 f"{remote!r}, whose refs resolve once it is added and fetched")


def setup_commands(repo: Repo, manifest: Manifest) -> list[str]:
    """The exact git commands after which every ref the manifest names resolves in `repo`:
    the remotes it lacks, added and fetched (tags too, for a release target)."""
    import shlex

    have, out = set(repo.remotes()), []
    for r in (manifest.upstream, manifest.fork):
        if r.remote and r.remote not in have:
            where = f"git -C {shlex.quote(str(repo.path))}"
            out.append(f"{where} remote add {shlex.quote(r.remote)} {shlex.quote(r.url)} && "
                       f"{where} fetch {shlex.quote(r.remote)}")
            have.add(r.remote)
    return out


def build(name: str, upstream: str, fork: str, repo: Repo | None, dev_branch: str = "",
          base_ref: str = "", title: str = "", releases: int = 1) -> tuple[Manifest, list[str]]:
    for flag, slug in (("--upstream", upstream), ("--fork", fork)):
        seriesmod.check_repo(slug, flag)
    notes: list[str] = []
    up_remote, up_url = remote_for(repo, upstream)
    fork_remote, fork_url = remote_for(repo, fork)
    up_url, fork_url = redact.strip_url(up_url), redact.strip_url(fork_url)
    if not up_remote:
        up_remote = "upstream"
        _missing(repo, upstream, up_remote, notes)
    if not fork_remote:
        fork_remote = "fork"
        _missing(repo, fork, fork_remote, notes)
    main = _default_branch(repo, up_remote)
    dev = _dev_branch(repo, fork_remote, dev_branch)
    targets = [Target(name="upstream-main", ref=f"{up_remote}/{main}", kind="main")]
    tags = repo.version_tags("v*") if repo is not None else []
    if tags or repo is None:
        targets.append(Target(name="upstream-release", tags="v*", latest=releases, kind="release"))
    else:
        notes.append(f"no v* tags in {repo.path}; no release target (fetch tags, then add one)")
    if dev:
        targets.append(Target(name="fork-dev", ref=f"{fork_remote}/{dev}", kind="dev"))
    else:
        notes.append("no dev/* branch found on the fork; pass --dev-branch to target one")
    base = base_ref or (f"{fork_remote}/{dev}" if dev else f"{up_remote}/{main}")
    commit = (repo.try_rev_parse(base) or "") if repo is not None else ""
    if repo is not None and not commit:
        notes.append(f"base {base} does not resolve in {repo.path} yet; `import` records it")
    manifest = Manifest(
        name=name, title=title or name,
        upstream=Repository(repo=upstream, url=up_url or f"https://github.com/{upstream}.git",
                            remote=up_remote, branch=main),
        fork=Repository(repo=fork, url=fork_url or f"https://github.com/{fork}.git",
                        remote=fork_remote, branch=dev),
        base=Base(ref=base, commit=commit), targets=targets)
    return manifest, notes


def run(root: Path, name: str, upstream: str, fork: str, repo_path: str | None,
        dev_branch: str = "", base_ref: str = "", title: str = "") -> InitResult:
    seriesmod.check_name(name)
    if root.exists() and not root.is_dir():
        raise CarryError(f"--series-dir {root} is not a directory")
    with locks.series_lock(root, name):
        if (root / name / seriesmod.MANIFEST).exists():
            raise CarryError(f"series {name!r} already exists in {root}",
                             hint=f"edit {root / name / seriesmod.MANIFEST}, or pick another name")
        repo = Repo.open(repo_path) if repo_path else None
        try:
            manifest, notes = build(name, upstream, fork, repo, dev_branch, base_ref, title)
            setup = setup_commands(repo, manifest) if repo is not None else []
            if repo is not None and root.resolve().is_relative_to(repo.path.resolve()):
                notes.append(f"the series folder {root} is inside the clone {repo.path}: its "
                             "versions would be committed into your vLLM clone; keep series in "
                             "a checkout of their own beside it (--series-dir DIR)")
        finally:
            if repo is not None:
                repo.close()
        seriesmod.write_series(root / name, manifest, {})
    return InitResult(name, str(root / name), vars(manifest.upstream), vars(manifest.fork),
                      vars(manifest.base), [vars(t) for t in manifest.targets], notes,
                      str(repo.path) if repo is not None else "", setup)
