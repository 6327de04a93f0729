"""A conflict a maintainer resolved by hand becomes the patch's commit, and its resolution
is recorded in the series for every later replay (`record`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from carry.base.errors import CarryError
from carry.git import Ident, Repo
from carry.replay.engine import NotRecorded, PatchResult, PatchStatus, ResolutionRecord
from carry.series.store import Series

_MARKER = re.compile(rb"^(?:<{7}|>{7})(?: |$)", re.M)


def take_resolution(repo: Repo, wt: Path, step: PatchResult, head: str, paths: Sequence[str],
                    committer: Ident, force: bool = False) -> str:
    """The resolved worktree as the stopped patch's commit (its author and message kept), or
    a drop when the resolution leaves nothing; refused while conflict markers remain that
    neither side had, and (unless `force`) while a path taken whole from the patch's side
    undoes lines the target changed."""
    if not wt.is_dir():
        raise CarryError(f"the conflict worktree {wt} is gone", hint="carry rebase --abort")
    work = Repo(wt.resolve())
    try:
        tree = work.stage_tracked()
        source = repo.read_commit(step.source)
        for p in paths:
            data = (wt / p).read_bytes() if (wt / p).is_file() else b""
            known = max(len(_MARKER.findall(repo.show_file(rev, p) or b""))
                        for rev in (head, step.source))
            if len(_MARKER.findall(data)) > known:
                raise CarryError(f"{p} still has conflict markers in {wt}",
                                 hint="resolve them, or carry rebase --skip")
    finally:
        work.close()
    if not force:
        _refuse_undoing_the_target(repo, wt, step, head, paths)
    if tree == repo.read_commit(head).tree:
        step.status, step.reason = PatchStatus.DROPPED, "empty after the conflict was resolved"
        return head
    new = repo.write_commit(tree, [head], source.message, source.author, committer,
                            source.encoding)
    step.status, step.reason, step.commit = PatchStatus.APPLIED, "conflict resolved", new
    return new


def _refuse_undoing_the_target(repo: Repo, wt: Path, step: PatchResult, head: str,
                               paths: Sequence[str]) -> None:
    """`git checkout --theirs F` resolves a conflict by taking the patch's whole file, which
    also reverts every clean change the target made to F since the patch's base. That is
    rarely meant and invisible in the result, so it is named, line by line, and needs
    `--force`."""
    source = repo.read_commit(step.source)
    base_rev = source.parents[0] if source.parents else ""
    for p in paths:
        data = (wt / p).read_bytes() if (wt / p).is_file() and not (wt / p).is_symlink() else None
        theirs, ours = repo.show_file(step.source, p), repo.show_file(head, p)
        base = repo.show_file(base_rev, p) if base_rev else None
        if data is None or data != theirs or ours is None or base is None or ours == base:
            continue
        kept = set(data.splitlines())
        undone = [ln for ln in _clean_changes(base, ours, theirs) if ln not in kept]
        if undone:
            first = undone[0].decode("utf-8", "replace").strip()[:60]
            raise CarryError(
                f"{p}: the resolution is the patch's whole file, which undoes {len(undone)} "
                f"line(s) the target changed cleanly, outside the conflict (first: {first!r})",
                hint="keep the target's lines and the patch's change together, or "
                     "carry rebase --continue --force to leave them undone")


def _clean_changes(base: bytes, ours: bytes, theirs: bytes) -> list[bytes]:
    """The lines the target (`ours`) adds or rewrites relative to `base` in hunks that do not
    touch what the patch (`theirs`) changes: the changes git merged cleanly."""
    import difflib

    def ops(new: list[bytes]) -> list[tuple[str, int, int, int, int]]:
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        return [op for op in matcher.get_opcodes() if op[0] != "equal"]

    old, mine, patch = base.splitlines(), ours.splitlines(), theirs.splitlines()
    touched = [(i1, max(i2, i1 + 1)) for _t, i1, i2, _j1, _j2 in ops(patch)]
    out: list[bytes] = []
    for _tag, i1, i2, j1, j2 in ops(mine):
        lo, hi = i1 - 1, max(i2, i1 + 1) + 1  # an adjacent change conflicts too
        if not any(a < hi and lo < b for a, b in touched):
            out.extend(ln for ln in mine[j1:j2] if ln.strip())
    return out


def record(series: Series, repo: Repo, step: PatchResult, head: str, resolved: str,
           where: str) -> ResolutionRecord:
    """Keep the maintainer's resolution of `step`'s conflict (the patch went onto `head`
    and became `resolved`) in the series' `resolutions/`, as its next version, so that every
    later replay meeting the same conflict applies it (`rerere`). Recording again what is
    recorded already writes nothing: a `--continue` after a kill is not a new version.
    Returns what `--continue` reports: the version, the files and what was not recorded."""
    from carry.replay import rerere
    from carry.series import versions
    from carry.series.store import RESOLUTION_DIR, read_resolutions

    version = series.manifest.version + 1
    taken = rerere.take(repo, step.number, repo.read_commit(step.source),
                        repo.read_commit(head).tree, repo.read_commit(resolved).tree, version,
                        where)
    out = ResolutionRecord(step.file,
                           not_recorded=[NotRecorded(p, why) for p, why in taken.skipped])
    if not taken.files:
        return out
    existing = rerere.load(series.root).files
    names = {r.name for r in taken.files}
    keys = {h.key() for r in taken.files for h, _ in r.hunks}
    new = {}
    for res in taken.files:
        old = next((r for r in existing if r.name == res.name), None)
        if old is not None and old.same(res):
            out.already.append(f"{RESOLUTION_DIR}/{res.file_name} (v{old.version})")
        else:
            new[res.file_name] = res.dump(step.file)
    # an earlier record of part of this conflict is superseded by the whole one
    gone = {r.file_name for r in existing if r.patch == step.number and r.name not in names
            and {h.key() for h, _ in r.hunks} <= keys}
    if not new and not gone:
        return out
    files = {n: d for n, d in read_resolutions(series.root).items() if n not in gone}
    files.update(new)
    paths = ", ".join(r.path for r in taken.files)
    out.version, out.tag = versions.write_next(
        series.root, series.manifest, {p.name: p.read() for p in series.patches()},
        f"recorded the resolution of {step.file[:4]}'s conflict in {paths} ({where})",
        resolutions=files)
    out.files = [f"{RESOLUTION_DIR}/{n}" for n in sorted(new)]
    return out


def unmatched(series: Series, repo: Repo | None) -> tuple[list[Any], dict[str, str], str]:
    """The series' resolutions, those no replay can use any more (name: why), and a note
    on what could not be checked: without a repository (or its base) only whether each
    one's patch is still in the series."""
    from carry.replay import rerere
    from carry.replay.chain import load_chain

    recorded = rerere.load(series.root)
    commits: dict[int, Any] = {p.number: None for p in series.patches()}
    note = "" if repo is not None or not recorded.files else (
        "without --repo, only whether each resolution's patch is still in the series is "
        "checked")
    if repo is not None and recorded.files:
        try:
            commits = {c.number: c.commit for c in load_chain(series, repo)[1]}
        except CarryError as exc:
            note = f"whether each resolution still matches its patch was not checked: " \
                   f"{exc.line()}"
            repo = None
    return recorded.files, rerere.unmatched(recorded, commits, repo), note


def prune(series: Series, repo: Repo | None) -> tuple[dict[str, str], int, str]:
    """Remove the resolutions `unmatched` lists, as the series' next version; returns them
    (file: why), the version and its tag (0 and "" when none was removed)."""
    from carry.series import versions
    from carry.series.store import RESOLUTION_DIR, read_resolutions

    _, gone, _ = unmatched(series, repo)
    if not gone:
        return {}, 0, ""
    files = {n: d for n, d in read_resolutions(series.root).items()
             if n.removesuffix(".txt") not in gone}
    version, tag = versions.write_next(
        series.root, series.manifest, {p.name: p.read() for p in series.patches()},
        f"pruned {len(gone)} recorded resolution{'s' if len(gone) > 1 else ''} that no "
        f"longer match: {', '.join(sorted(gone))}", resolutions=files)
    return {f"{RESOLUTION_DIR}/{n}.txt": why for n, why in sorted(gone.items())}, version, tag


def take_recorded(series: Series, repo: Repo, step: PatchResult, head: str,
                  committer: Ident, auto: bool = True) -> str | None:
    """The stopped patch resolved by the series' recorded resolutions instead of by hand
    (`runs.resolved`, as a replay does): for a target that stopped at the same conflict
    before the resolution was recorded (two targets of one run), whose worktree still holds
    the markers; the hunks their three texts decide resolve by themselves unless the
    manifest's `policy.auto_resolve` is off or the rebase began with `--no-auto-resolve`
    (`auto`). None when they do not resolve it."""
    from carry.replay.engine import resolutions
    from carry.replay.runs import resolved

    source = repo.read_commit(step.source)
    fixed = resolved(repo, resolutions(series, auto), step, source, head, committer)
    return None if fixed is None else fixed[0]
