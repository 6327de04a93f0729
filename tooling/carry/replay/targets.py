"""Targets: which upstream commits a series is replayed onto. Used by `rebase` (what to
replay onto) and `range-diff` (where a rebased branch starts), so both read a manifest's tag
patterns the same way."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from carry.base.errors import CarryError, MissingRef
from carry.base.redact import scrub
from carry.base.suggest import did_you_mean, join
from carry.git import GitError, Repo
from carry.series.store import Series, Target

_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_SHA = re.compile(r"\b[0-9a-f]{40}\b")
_PRERELEASE = re.compile(r"[0-9][.-]?(?:rc|dev|alpha|beta|pre|a|b)[.-]?[0-9]*$")


@dataclass(frozen=True)
class ResolvedTarget:
    """A target pinned to a commit: `name` is the manifest's (with `@tag` for tag patterns)
    or the ref exactly as the user gave it."""

    name: str
    ref: str
    sha: str

    @property
    def slug(self) -> str:
        return slug(self.name)


def fork_line(series: Series, name: str, ref: str) -> str:
    """"" when the target is upstream's line; the target's name when it is a fork branch (a
    `dev` target, or a ref of the fork's remote), whose commits are the fork's, not upstream's:
    what a root cause calls the commit it names."""
    m = series.manifest
    t = next((t for t in m.targets if t.name == name.split("@", 1)[0]), None)
    if t is not None and t.kind == "dev":
        return name
    fork = m.fork.remote
    ref = t.ref if t is not None and t.ref else ref
    return name if fork and ref.startswith((f"{fork}/", f"refs/remotes/{fork}/")) else ""


def slug(name: str) -> str:
    """A file and branch name for a target name."""
    return _SLUG.sub("-", name).strip("-.") or "target"


def resolve(series: Series, repo: Repo, onto: Sequence[str], names: Sequence[str],
            target_names: bool = False) -> list[ResolvedTarget]:
    """`--onto` refs and `--target` names; neither means every target of the manifest. Two
    targets that would share a state file and a branch are refused, never merged silently.
    `target_names`: an `--onto` release tag is named as its target names it (`onto_target`);
    the CI job keeps the ref it was given, by which it names its cells."""
    m = series.manifest
    if not onto and not names:
        names = [t.name for t in m.targets]
        if not names:
            raise CarryError(f"series {series.name} has no targets; pass --onto REF")
    out = [onto_target(m.targets, repo, ref) if target_names else
           ResolvedTarget(ref, ref, repo.rev_parse(ref)) for ref in onto]
    for name in names:
        out += _manifest_target(repo, m.target(name))
    seen: dict[str, ResolvedTarget] = {}
    unique = []
    for r in out:
        twin = seen.get(r.slug)
        if twin is None:
            seen[r.slug] = r
            unique.append(r)
        elif twin != r:  # the same target twice is harmless; two under one name are not
            raise CarryError(f"targets {twin.name!r} ({twin.ref}) and {r.name!r} ({r.ref}) "
                             f"would share the name {r.slug!r} for their branch and state",
                             hint="give one of them")
    return unique


def onto_target(targets: Sequence[Target], repo: Repo, ref: str) -> ResolvedTarget:
    """An `--onto` ref as given, except a release tag that a tag-pattern target follows:
    that one is named as the target names it (`upstream-release@v1.1.0`), so `--onto
    v1.1.0` and the target write one branch, `carry/NAME/upstream-release-v1.1.0`, and
    status --prune knows it by its pattern when a newer tag comes."""
    sha = repo.rev_parse(ref)
    tag = ref.removeprefix("refs/").removeprefix("tags/")
    for t in targets:
        if t.tags and tag in release_tags(repo, t.tags) and \
                repo.try_rev_parse(f"refs/tags/{tag}") == sha:
            return ResolvedTarget(f"{t.name}@{tag}", tag, sha)
    return ResolvedTarget(ref, ref, sha)


def _manifest_target(repo: Repo, t: Target) -> list[ResolvedTarget]:
    if t.ref:
        sha = repo.try_rev_parse(t.ref)
        if sha is None:
            raise MissingRef(f"target {t.name}: ref {t.ref!r} is not in {repo.path}",
                             str(repo.path), join(did_you_mean(t.ref, repo.ref_names()),
                                                  "pass --fetch, or add the remote"))
        return [ResolvedTarget(t.name, t.ref, sha)]
    tags = newest_tags(repo, t)
    if not tags:
        raise MissingRef(f"target {t.name}: no tag in {repo.path} matches {t.tags!r}",
                         str(repo.path), "pass --fetch to get the tags")
    return [ResolvedTarget(f"{t.name}@{tag}", tag, repo.rev_parse(f"refs/tags/{tag}"))
            for tag in reversed(tags)]


def newest_tags(repo: Repo, t: Target) -> list[str]:
    """The `latest` newest release tags a tag-pattern target follows, oldest first."""
    return release_tags(repo, t.tags)[-max(t.latest, 1):]


def target_refs(repo: Repo, t: Target) -> list[str]:
    return [t.ref] if t.ref else newest_tags(repo, t)


def release_tags(repo: Repo, pattern: str) -> list[str]:
    """Tags matching `pattern`, oldest version first, without release candidates and dev
    tags: a release target follows releases (`v0.34.0`, not `v0.35.0rc1`)."""
    return [t for t in repo.version_tags(pattern) if not _PRERELEASE.search(t)]


def fetch(series: Series, repo: Repo) -> list[str]:
    """Fetch the manifest's remotes that this repository defines; returns their names."""
    known = set(repo.remotes())
    wanted = [r.remote for r in (series.manifest.upstream, series.manifest.fork) if r.remote]
    fetched = []
    for remote in dict.fromkeys(wanted):
        if remote not in known:
            continue
        try:
            repo.fetch(remote)
        except GitError as exc:
            raise CarryError(scrub(str(exc))) from None  # git can quote a URL with a token
        fetched.append(remote)
    if wanted and not fetched:
        m = series.manifest
        add = "; ".join(f"git -C {shlex.quote(str(repo.path))} remote add "
                        f"{shlex.quote(r.remote)} {shlex.quote(r.url)}"
                        for r in (m.upstream, m.fork) if r.remote and r.url)
        raise MissingRef(f"none of the remotes {', '.join(wanted)} is defined in {repo.path}",
                         str(repo.path), f"if {repo.path} is not your clone of upstream, "
                         f"--repo PATH names it; else {add or 'git remote add NAME URL'}")
    return fetched


def reflog_message(series: str, onto: Sequence[ResolvedTarget]) -> str:
    """What a rebase writes in the reflog of the branches it moves: the targets and the
    commits they went onto, which `ontos` reads back for range-diff."""
    return f"carry rebase {series} onto " + ", ".join(f"{t.name} {t.sha}" for t in onto)


def ontos(message: str) -> list[str]:
    """The commits a `reflog_message` names, or none for any other message."""
    return _SHA.findall(message) if message.startswith("carry rebase ") else []
