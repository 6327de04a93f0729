"""`carry edit NAME N`: change one patch (its message, a trailer, its content) in place, as
`git rebase -i`'s `edit` does, instead of re-importing the series.

It is a rebase with a stop of its own kind: the series is replayed onto its base (or
`--onto`), and the rebase stops at patch N in a conflict worktree (`phase` "edit") that is
at N's commit. The maintainer amends there: edits files, `git commit --amend` for the
message. `carry rebase --continue` takes the worktree's HEAD message and its tracked files
as patch N, keeping N's author, author date and number, then replays the later patches on
it as a rebase does (a conflict stops as one), and writes the result as the series' next
version and the branch `carry/NAME/TARGET`, as `rebase --refresh` does. `--abort` puts
everything back: nothing is written before the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from carry.base.errors import CarryError
from carry.base.suggest import did_you_mean
from carry.git import Repo
from carry.rebase import state as st
from carry.rebase.checkout import claim, keep_untracked
from carry.rebase.checkout import remove as remove_worktree
from carry.replay import targets as targetmod
from carry.replay.engine import PatchResult, PatchStatus, TargetResult, TargetStatus
from carry.replay.targets import ResolvedTarget
from carry.series.store import Series


@dataclass
class EditStop:
    series: str
    target: str
    patch: str
    subject: str
    author: str
    commit: str  # patch N, replayed: the worktree's HEAD
    worktree: str
    branch: str  # written at the end


def _target(series: Series, repo: Repo, base: str, onto: str | None) -> ResolvedTarget:
    """`--onto` as a rebase names it, else the series base under the name it has."""
    if onto:
        return targetmod.onto_target(series.manifest.targets, repo, onto)
    ref = series.manifest.base.ref
    if ref and ref != base and repo.try_rev_parse(ref) == base:
        return ResolvedTarget(ref, ref, base)
    # a base known only by its commit: its worktree and branch are `base-<short>`, not
    # named by 40 hex digits
    return ResolvedTarget(f"base-{base[:12]}", base, base)


def start(series: Series, repo: Repo, number: int, onto: str | None = None) -> EditStop:
    from carry.replay.chain import load_chain
    from carry.replay.engine import replay_target

    base, carried = load_chain(series, repo)
    k = next((i for i, c in enumerate(carried) if c.number == number), None)
    if k is None:
        known = [str(c.number) for c in carried]
        raise CarryError(f"series {series.name} has no patch {number} (its patches: "
                         f"{', '.join(known) or 'none'})",
                         hint=did_you_mean(str(number), known))
    t = _target(series, repo, base, onto)
    path = st.state_path(repo, series.name, t.slug)
    if path.exists():
        raise CarryError(f"a rebase of {series.name} onto {t.name} is already in progress in "
                         f"{repo.path}", hint="carry rebase --continue, --skip or --abort")
    branch = repo.claim_branch(f"carry/{series.name}/{t.slug}")
    done = replay_target(series, repo, base, carried, t, repo.committer_ident())
    steps, step = done.result.patches, done.result.patches[k]
    if step.status == PatchStatus.DROPPED:
        raise CarryError(f"{step.file} is dropped on {t.name} ({step.reason}): nothing to edit")
    if done.stop is not None and done.stop <= k:
        raise CarryError(f"{steps[done.stop].file} conflicts on {t.name}, so the series does "
                         f"not reach {step.file} there",
                         hint=f"carry rebase {series.name} --onto {t.ref} --refresh resolves "
                              "it first; then carry edit")
    parent = next((s.commit for s in reversed(steps[:k]) if s.commit), t.sha)
    for i, later in enumerate(steps[k + 1:], k + 1):
        if later.status != PatchStatus.DROPPED:  # replayed again on the edited patch
            steps[i] = PatchResult(later.number, later.file, later.subject, later.author,
                                   source=later.source)
    wt = st.worktree_path(repo, series.name, t.slug)
    claim(repo, wt)  # before the state: a refusal changes nothing
    state = st.RebaseState(series.name, str(series.root), st.StateTarget.of(t), *branch,
                           series.manifest.version or None, st.Phase.EDIT, parent, k, str(wt), [],
                           list(done.result.patches), ready=False)
    st.write(repo, path, state)  # the state first, then the worktree it names
    _checkout(repo, wt, step.commit)
    state.ready = True
    st.write(repo, path, state)
    return EditStop(series.name, t.name, step.file, step.subject, step.author, step.commit,
                    str(wt), branch[0])


def _checkout(repo: Repo, wt: Path, commit: str) -> None:
    """`wt` at `commit`: a kept worktree moved in place, else a new one (in the emptied
    folder a shell may still be in); never in what carry did not make (`claim`)."""
    claim(repo, wt)
    work = repo.worktree_reset(wt, commit)
    if work is None:
        if wt.exists() and any(wt.iterdir()):
            remove_worktree(repo, wt, tidy=False)
        wt.parent.mkdir(parents=True, exist_ok=True)
        work = repo.worktree_add(wt, commit)
    work.close()


def at_edit(series: Series, repo: Repo, which: Sequence[str]) -> bool:
    """Whether the rebase `--continue` resumes is stopped for an edit."""
    states = st.pick(repo, series.name, which)
    return len(states) == 1 and states[0].phase is st.Phase.EDIT


def resume(series: Series, repo: Repo, which: Sequence[str]) -> list[TargetResult]:
    """Take the worktree's HEAD (message) and tracked files (content) as the edited patch,
    with the patch's own author and author date, then go on as `--continue` does."""
    from carry.rebase import onward
    from carry.rebase.flags import Action

    (state,) = st.pick(repo, series.name, which)
    wt, parent = Path(state.worktree), state.head
    steps, step = state.patches, state.stop
    keep_untracked(repo, wt)  # and that it is carry's own
    work = Repo(wt.resolve())
    try:
        tree = work.stage_tracked()  # edits not committed count too, as a resolution's do
        head = work.rev_parse("HEAD")
    finally:
        work.close()
    edited, original = repo.read_commit(head), repo.read_commit(step.commit)
    if edited.parents != (parent,):
        raise CarryError(f"HEAD of {wt} ({head[:12]}) is not one commit on {parent[:12]}: "
                         f"{step.file} stays one patch",
                         hint="git commit --amend there keeps it one; or carry rebase --abort")
    if tree == repo.read_commit(parent).tree:
        raise CarryError(f"{step.file} would change nothing: carry edit does not drop a patch",
                         hint="undo the change in the worktree, or carry rebase --abort")
    if (tree, edited.message, edited.encoding) == (original.tree, original.message,
                                                    original.encoding):
        t = state.target
        remove_worktree(repo, wt)
        st.remove(repo, st.state_path(repo, series.name, state.target.slug))
        return [TargetResult(series.name, t.name, t.ref, t.sha, TargetStatus.APPLIED, "", steps,
                             message=f"{step.file} is unchanged: no new version written")]
    step.commit = repo.write_commit(tree, [parent], edited.message, original.author,
                                    repo.committer_ident(), edited.encoding)
    step.status, step.reason = PatchStatus.APPLIED, "edited"
    state.phase, state.head = st.Phase.REPLAYING, step.commit
    state.ready, state.trial = False, []  # from here on, a rebase's replay; the worktree stays
    st.write(repo, st.state_path(repo, series.name, state.target.slug), state)
    return onward.resume(series, repo, Action.CONTINUE, [state.target.name])
