"""Closing the loop after a CI cell (opt-in): a clean result on a release or dev target
refreshes the series, pushes it and opens or updates its one PR (through `carry pr`); a
conflict opens or updates one tracking issue per (series, target), and so do failing tests
(failing.py); a later clean run closes it with a comment. At most `open_limit` PRs and
issues are opened per run; the rest wait for a later one. Every GitHub request goes through
`publish/github.py`. Only the PRs and issues the token's own account opened are the loop's
(owned.py; issues.py for the issues).

`--dry-run` reads (to tell "open" from "update") and writes nothing: no series version, no
ref, no push, no request that writes.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from carry.base.errors import CarryError
from carry.git import Repo
from carry.job import failing, issues, tracking
from carry.job.shared import Action, Context, Did, Options, forge_repo
from carry.publish import github as forgemod
from carry.publish import remote as remotemod
from carry.series import store as seriesmod

if TYPE_CHECKING:
    from pathlib import Path

    from carry.job.shared import Row
    from carry.replay.engine import TargetResult


def check(s: seriesmod.Series, opts: Options) -> None:
    """Before any validation runs: a missing repository or token is bad input (exit 2), not
    a surprise after an hour of tests."""
    if opts.enabled:
        forge_repo(s, opts)
        forgemod.token_from_env(opts.token_env)


def run(root: Path, repo: Repo, rows: list[Row], opts: Options) -> list[Action]:
    ctx = Context(repo, opts)
    actions: list[Action] = []
    for row in rows:
        if row.rebase not in ("applied", "conflict"):
            continue  # skipped by the ledger, or the rebase itself failed: nothing to say
        s = seriesmod.find(root, row.series)
        name = row.target.split("@", 1)[0]
        target = next((t for t in s.manifest.targets if t.name == name), None)
        if target is None:
            continue  # an ad-hoc --onto ref: no PR or issue belongs to it
        clean = row.rebase == "applied" and row.passed
        # a branch target's furthest point; a release tag's is no release: not carried
        partway = row.rebase == "conflict" and _partway(row) and bool(target.ref)
        steps: list[partial[list[Action]]] = []
        if row.rebase == "conflict" and opts.track_issues:
            steps.append(partial(_track, ctx, s, name, row))
        if row.rebase == "applied" and row.failing and opts.track_issues:
            steps.append(partial(failing.track, ctx, s, name, row))
        if (clean or partway) and opts.open_pr:
            steps.append(partial(_refresh_and_pr, ctx, s, target, row))
        if clean and opts.track_issues:
            steps.append(partial(_close, ctx, s, target, row))
            steps.append(partial(failing.close, ctx, s, target, row))
        for step in steps:
            try:
                actions += step()
            except CarryError as exc:
                actions.append(Action(s.name, name, row.ref, "loop", Did.FAILED,
                                      note=exc.line()))
    return actions


# -- a clean result: refresh, push, one PR ----------------------------------------------------


def _refresh_and_pr(ctx: Context, s: seriesmod.Series, target: seriesmod.Target,
                    row: Row) -> list[Action]:
    from carry.publish import pr as prmod
    from carry.rebase import command as rebase
    from carry.series import locks

    act = Action(s.name, target.name, row.ref, "pr", Did.SKIPPED)
    if not (target.kind in ("release", "dev") or (not target.kind and target.tags)):
        act.note = f"target {target.name} is not a release or dev target"
        return [act]
    base, onto = s.manifest.base.commit, row.furthest_onto if _partway(row) else row.onto
    if base and base != onto and not ctx.repo.is_ancestor(base, onto):
        act.note = (f"the series is on {base[:12]}, which {row.ref} does not contain; "
                    "it is not moved back")
        return [act]
    branch = f"carry/{s.name}/tip"  # beside carry/NAME/TARGET: a ref cannot be both
    pr_base = ctx.opts.base or s.manifest.fork.branch or "main"
    full = forge_repo(s, ctx.opts)
    remote = remotemod.for_push(ctx.opts.remote, [s]).name  # as `carry pr` picks it
    found = [p for p in prmod.find_open(ctx.forge(), full, [s.name]) if p.base == pr_base] \
        if ctx.opts.dry_run or not ctx.room(s) else []
    if not found and not ctx.room(s):  # no PR to update, and no room to open one
        act.action, act.note = Did.WAITING, ctx.waiting_note("its PR")
        return [act]
    if ctx.opts.dry_run:  # the PR `carry pr` would update: carry's, for this series alone
        step = (f"refresh to version {s.manifest.version + 1} on {row.ref}"
                + (f" up to {onto[:12]}, " if _partway(row) else ", ") if base != onto else "")
        if not found:
            ctx.took(s)
        act.action = Did.WOULD_UPDATE if found else Did.WOULD_OPEN
        act.number, act.url = (found[0].number, found[0].url) if found else (0, "")
        act.note = f"would {step}push {branch} to {remote}, PR against {pr_base}"
        return [act]
    opts = rebase.Options(onto=[row.ref], branch=branch, refresh=base != onto,
                          furthest=_partway(row))  # as far as it goes: validated there
    with locks.for_rebase(s.root.parent, s.name, ctx.repo, dry_run=False):
        s = seriesmod.find(s.root.parent, s.name)  # as it is now that no one else writes it
        (result,) = rebase.run(s, ctx.repo, opts)
    if result.status != "applied":
        raise CarryError(f"refreshing {s.name} onto {row.ref}: {result.message or result.status}")
    _keep_published(ctx.repo, result, f"refs/remotes/{remote}/{branch}")
    fresh = seriesmod.find(s.root.parent, s.name)
    done = prmod.run([fresh], ctx.repo, prmod.Request(
        branch=branch, remote=remote, base=pr_base, forge_repo=full, access=ctx.opts.access,
        report_path=row.report or None, draft=True,
        push_token=forgemod.token_from_env(ctx.opts.token_env)))
    act.action, act.number, act.url = Did(done.action), done.number, done.url
    if act.action is Did.OPENED:
        ctx.took(s)
    version = result.refreshed.version if result.refreshed else None
    act.note = (f"series refreshed to version {version}; " if version else "") + \
        f"pushed {branch} ({done.commit[:12]}) to {remote}" + \
        (f"; {row.furthest}" if _partway(row) else "")
    return [act]


def _partway(row: Row) -> bool:
    """A conflicting cell whose furthest point (`rebase --furthest`) passed its tests: its PR
    carries the series that far."""
    return bool(row.furthest_head) and row.furthest_passed


def _keep_published(repo: Repo, result: TargetResult, published_ref: str) -> None:
    """A CI runner starts from a fresh clone, with no local `carry/NAME/tip` for the rebase to
    find up to date: when the branch the loop published last holds this replay, the local
    branch takes its commits, so nothing is pushed and the PR's head stays."""
    from carry.replay.reuse import keep_existing

    published, made = repo.try_rev_parse(published_ref), result.head
    if published and published != made and keep_existing(repo, result, published):
        repo.set_ref(result.branch, published, made,
                     message=f"carry loop: {published_ref} already holds this replay")


# -- tracking issues -------------------------------------------------------------------------


def _track(ctx: Context, s: seriesmod.Series, target: str, row: Row) -> list[Action]:
    stop = row.stop
    if stop is None:
        raise CarryError(f"{s.name} conflicted on {row.ref} without a conflict report")
    base = s.manifest.base.commit
    report = tracking.ConflictReport(
        s.name, target, row.ref, row.onto, base, stop.file, stop.subject, stop.author,
        list(stop.paths), ctx.repo.commits_touching(base, row.onto, stop.paths) if base else [],
        tracking.why_lines(row.why))
    return issues.keep(ctx, s, target, row, tracking.CONFLICT,
                       (tracking.title(report), tracking.body(report)))


def _close(ctx: Context, s: seriesmod.Series, target: seriesmod.Target,
           row: Row) -> list[Action]:
    """A clean result closes the conflict's issue, unless it tracks something newer."""
    return issues.close(ctx, s, target, row, tracking.CONFLICT,
                        tracking.closing_comment(s.name, row.ref, row.onto))
