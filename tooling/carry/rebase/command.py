"""`carry rebase`: the command over the replay engine (`carry.replay`): which branches a
rebase may write, the stop saved to resume from (`--continue` and `--skip` are `onward`'s),
the finish, `--abort`, and `--refresh`.

Nothing a user sees moves until the end: every target's branch moves in one `update-ref`
transaction, bracketed by `finishing` states, and only when its patches all applied. With
`--refresh` the new series version is written inside that bracket too, so a `kill -9` at
any point leaves states that `--continue` finishes and `--abort` undoes, branch and series
together.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from carry.base import scratch
from carry.base.errors import CarryError
from carry.git import GitError, Ident, RefUpdate, Repo
from carry.rebase import state as st
from carry.rebase.checkout import remove as _remove_worktree
from carry.rebase.checkout import stop as _stop
from carry.rebase.flags import Aborted as Aborted
from carry.rebase.flags import Options as Options
from carry.replay import rerere
from carry.replay import targets as targetmod
from carry.replay.engine import (
    Conflict,
    PatchStatus,
    Refreshed,
    Replayed,
    TargetResult,
    TargetStatus,
    replay_target,
)
from carry.replay.reuse import keep_existing
from carry.replay.targets import ResolvedTarget
from carry.series.store import Series

if TYPE_CHECKING:
    from carry.replay.chain import Carried
    from carry.replay.furthest import Furthest


def in_progress(repo: Repo, series: str) -> list[st.RebaseState]:
    return st.in_progress(repo, series)


# -- a new rebase -------------------------------------------------------------------------------


def run(series: Series, repo: Repo, opts: Options) -> list[TargetResult]:
    if opts.fetch:
        targetmod.fetch(series, repo)
    tlist = targetmod.resolve(series, repo, opts.onto, opts.targets, opts.target_names)
    rerere.load(series.root)  # a damaged resolution is bad input, before any replay
    if opts.refresh and len(tlist) != 1:
        raise CarryError(f"--refresh writes one new version, but {len(tlist)} targets were "
                         "given", hint="pick one with --onto or --target")
    if opts.branch and len(tlist) != 1:
        raise CarryError("--branch names one branch, but several targets were given")
    for t in tlist:
        if st.state_path(repo, series.name, t.slug).exists():
            raise CarryError(f"a rebase of {series.name} onto {t.name} is already in progress "
                             f"in {repo.path}", hint="carry rebase --continue, --skip or --abort")
    branches = {t.slug: repo.claim_branch(opts.branch or f"carry/{series.name}/{t.slug}",
                                          opts.force, not opts.dry_run) for t in tlist}
    from carry.replay.chain import load_chain  # not on a resume's path

    base, carried = load_chain(series, repo)
    committer = repo.committer_ident()
    results: list[TargetResult] = []
    finishing: list[tuple[ResolvedTarget, TargetResult]] = []
    found: dict[str, Furthest] = {}  # --furthest: rebase.furthest.pin
    if opts.furthest:  # bisected in memory; then the rebase onto that commit, as --onto SHA
        from carry.rebase.furthest import pin

        tlist, results, found = pin(series, repo, base, carried, tlist, committer,
                                    opts.auto_resolve)
    for t, done in zip(tlist, _replay_all(series, repo, base, carried, tlist, committer,
                                          opts.auto_resolve),
                       strict=True):
        if isinstance(done, str):
            results.append(TargetResult(series.name, t.name, t.ref, t.sha,
                                        TargetStatus.FAILED, "", [], message=done))
            continue
        r = done.result
        r.branch, r.dry_run, r.furthest = branches[t.slug][0], opts.dry_run, found.get(t.slug)
        results.append(r)
        if done.stop is not None and opts.dry_run:
            s = r.patches[done.stop]
            r.conflict = Conflict(s.file, s.subject, s.author, done.paths, "")
        elif done.stop is not None:
            _stop(series, repo, r, t, branches[t.slug], opts.refresh, done)
        elif not opts.dry_run:
            keep_existing(repo, r, branches[t.slug][1])
            finishing.append((t, r))
    if finishing:
        finish(series, repo, finishing, branches, opts.refresh)
    return results


def _replay_all(series: Series, repo: Repo, base: str, carried: list[Carried],
                tlist: list[ResolvedTarget], committer: Ident, auto: bool
                ) -> list[Replayed | str]:
    """Each target's replay, in a process of its own up to the core count: the tree work is
    Python, and threads would share one core (a failure is its one-line message). The first
    target runs here, on this process's warm object cache, while workers take the rest."""
    jobs = [(series, repo.path, base, carried, t, committer, auto) for t in tlist]
    workers = min(len(tlist), os.cpu_count() or 1) - 1
    if workers < 1:
        return [_replay_one(job, repo) for job in jobs]
    import multiprocessing  # here: a resume, which replays one target, never loads them
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=scratch.tie_to_parent,
                             initargs=(os.getpid(),)) as pool:
        rest = [pool.submit(_replay_one, job) for job in jobs[1:]]  # forks before our threads
        return [_replay_one(jobs[0], repo), *(f.result() for f in rest)]


def _replay_one(job: tuple[Series, Path, str, list[Carried], ResolvedTarget, Ident, bool],
                own: Repo | None = None) -> Replayed | str:
    series, path, base, carried, target, committer, auto = job
    repo = own or Repo(path)
    try:
        return replay_target(series, repo, base, carried, target, committer, auto)
    except CarryError as exc:
        return exc.line()
    finally:
        if own is None:
            repo.close()


def finish(series: Series, repo: Repo, done: list[tuple[ResolvedTarget, TargetResult]],
           branches: dict[str, tuple[str, str | None]], refresh: bool) -> None:
    """Every applied target's branch in one transaction, bracketed by `finishing` states: a
    kill before the transaction leaves nothing moved, after it leaves states that `--abort`
    uses to put every branch back, and with `--refresh` the new version is written before
    the states go. Each state names every branch of the transaction (`group`): the states
    are removed one by one, and an `--abort` after a kill between two removals must still
    put back the branches whose state is already gone."""
    paths = []
    group = [st.GroupEntry(*branches[t.slug], r.head) for t, r in done]
    for t, r in done:
        ref, old = branches[t.slug]
        path = st.state_path(repo, series.name, t.slug)
        st.write(repo, path, st.RebaseState(
            series.name, str(series.root), st.StateTarget.of(t), ref, old,
            series.manifest.version if refresh else None, st.Phase.FINISHING, r.head,
            len(r.patches), "", [], list(r.patches), ready=False, group=group))
        paths.append(path)
    moved = [(t, r) for t, r in done if r.head != branches[t.slug][1]]
    updates = [RefUpdate(branches[t.slug][0], r.head, branches[t.slug][1]) for t, r in moved]
    try:
        if updates:
            repo.set_refs(updates, targetmod.reflog_message(series.name, [t for t, _ in moved]))
    except GitError as exc:
        for path in paths:
            st.remove(repo, path)
        for _, r in done:
            r.status, r.head = TargetStatus.FAILED, ""
            r.message = f"a branch moved while carry worked; no branch was written ({exc})"
        return
    from carry.replay import audit

    for (t, r), path in zip(done, paths, strict=True):
        r.updated = r.head != branches[t.slug][1]
        audit.record(repo, r.head, r.audit)  # for `carry status`
        if refresh:
            r.refreshed = refresh_series(series, repo, r, t)
        st.remove(repo, path)


# -- abort --------------------------------------------------------------------------------------


def abort(series: Series, repo: Repo, which: Sequence[str] = ()) -> list[Aborted]:
    """Put back what the rebase changed: the conflict worktree goes, and a branch (and a
    series version) that the finish already wrote return to their old values. Safe to repeat
    after any kill."""
    out = []
    states = st.pick(repo, series.name, which)
    put_back = _put_back(series, repo, [s for s in states if s.phase is st.Phase.FINISHING])
    for state in states:
        wt = Path(state.worktree) if state.worktree else None
        if wt is not None:
            _remove_worktree(repo, wt)
        restored, back = state.branch in put_back, False
        if state.phase is st.Phase.FINISHING and state.refresh_from is not None and \
                series.manifest.version > state.refresh_from:
            from carry.series import versions

            back = versions.restore(series, state.refresh_from)
        st.remove(repo, st.state_path(repo, series.name, state.target.slug))
        out.append(Aborted(series.name, state.target.name, state.branch, restored,
                           str(wt) if wt else "", back))
    return out


def _put_back(series: Series, repo: Repo, finishing: list[st.RebaseState]) -> set[str]:
    """Every branch the finishing transaction moved, still where it put it, back to its old
    value in one transaction (with those whose state a kill already removed); which ones."""
    updates: dict[str, RefUpdate] = {}
    for state in finishing:
        for g in state.branches:
            now = repo.try_rev_parse(g.branch) if repo.ref_exists(g.branch) else None
            if now == g.head and now != g.old:
                updates[g.branch] = RefUpdate(g.branch, g.old, now)
    if updates:
        repo.set_refs(list(updates.values()), f"carry rebase --abort {series.name}")
    return set(updates)


# -- refresh ------------------------------------------------------------------------------------


def refresh_series(series: Series, repo: Repo, result: TargetResult,
             target: ResolvedTarget) -> Refreshed:
    """Write the rebased series as the next version: each kept patch regenerated from its new
    commit under its old file name (numbers are identities), dropped ones gone."""
    from carry.series import patches as patchmod
    from carry.series import store as seriesmod
    from carry.series import versions

    formatted: dict[str, bytes] = {}
    if result.head != result.onto:
        formatted = dict(repo.format_patch(result.onto, result.head))
    files = {step.file: patchmod.render(repo.read_commit(step.commit), formatted[step.commit])
             for step in result.patches if step.status == PatchStatus.APPLIED}
    m = series.manifest
    m.base = seriesmod.Base(ref=target.ref, commit=result.onto)
    version, kept = versions.write_next(series.root, m, files, changelog_line(result))
    return Refreshed(version, kept, sorted(files))


def changelog_line(result: TargetResult) -> str:
    parts = [f"rebased onto {result.target} {result.onto[:12]}: "
             f"{result.count('applied')} applied"]
    drops = [f"{p.file[:4]} ({p.reason})" for p in result.patches
             if p.status == PatchStatus.DROPPED]
    if drops:
        parts.append("dropped " + ", ".join(drops))
    resolved = [p.file[:4] for p in result.patches if p.reason == "conflict resolved"]
    if resolved:
        parts.append("conflicts resolved in " + ", ".join(resolved))
    recorded = [p.file[:4] for p in result.patches if p.resolutions]
    if recorded:
        parts.append("recorded or automatic resolutions applied in " + ", ".join(recorded))
    for label, which in (("edited", [p.file[:4] for p in result.patches
                                     if p.reason == "edited"]),
                         ("skipped", [p.file[:4] for p in result.patches
                                      if p.status == PatchStatus.SKIPPED])):
        if which:
            parts.append(f"{label} " + ", ".join(which))
    return "; ".join(parts)
