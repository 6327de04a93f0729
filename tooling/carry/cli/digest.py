"""The default, terse view of a rebase (`reports.show_rebase` keeps the full forecast for -v):
one summary line per target, then only the patches that did not simply apply, then what to do
next, each line within the terminal's width. Subjects are cut with an ellipsis; a path or a
command to copy is never cut and sits on a line of its own (after a short label)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from carry.cli import render
from carry.cli.views import _short

if TYPE_CHECKING:  # only annotated: importing the engine would slow every command
    from carry.git import Repo
    from carry.replay.engine import Conflict, TargetResult
    from carry.replay.furthest import Furthest

_COUNTED = (("applied", "applied"), ("dropped", "dropped"), ("skipped", "skipped"))


def summary(r: TargetResult) -> list[str]:
    """`upstream-main: 14 applied, 2 dropped, stopped at 0005`, and what lies beyond the stop
    (`1 more would conflict, 3 not reached`) on the same line when it fits, else below."""
    parts = [f"{r.count(s)} {label}" for s, label in _COUNTED if r.count(s) or s == "applied"]
    text = f"{r.target}: " + ", ".join(parts)
    if r.status == "failed":
        return [text + ", failed"]
    if r.conflict is None and r.status != "conflict":
        return [text]
    stop = next((p.file[:4] for p in r.patches if p.status == "conflict"), "?")
    text += f", stopped at {stop}"
    more = [f"{n} more would conflict" if (n := r.count("would-conflict")) else "",
            f"{n} not reached" if (n := r.count("pending")) else ""]
    rest = ", ".join(m for m in more if m)
    if not rest:
        return [text]
    if len(f"{text} ({rest})") <= render.width():
        return [f"{text} ({rest})"]
    return [text, f"  beyond it: {rest}"]


def show(rows: list[TargetResult], repo: Repo | None, series_root: str) -> None:
    from carry.rebase.resume import stopped as stopped_in

    several = len(stopped_in(repo)) > 1 if repo is not None else False
    dry = " (dry run: no ref written)" if rows[0].dry_run else ""
    render.say(render.fit(f"rebase {rows[0].series}{dry}"))
    for r in rows:
        for line in summary(r):
            render.say(render.fit(line))
        for line in furthest_lines(r.furthest, False):
            render.say(render.fit(line))
        _patches(r)
        if r.message:
            for line in render.wrap(r.message):
                render.say(line)
        _recorded(r, series_root)
        if r.updated or r.status == "applied" and not r.dry_run and r.branch:
            _branch(r)
        if r.conflict:
            _conflict(r, r.conflict)
        _foreseen(r)
        if r.conflict:
            _next(r, r.conflict, repo, series_root, several)
        if r.refreshed:
            tag = f" (tag {r.refreshed.tag})" if r.refreshed.tag else ""
            render.say(render.fit(f"  {r.series} is now v{r.refreshed.version}{tag}"))
            _commit_it(r, series_root, r.refreshed.version)


def furthest_lines(f: Furthest | None, verbose: bool) -> list[str]:
    """`--furthest`: how far the target went and what blocks it; with `verbose` the commits'
    shas and subjects, the paths and what the bisection cost."""
    if f is None:
        return []
    out = [f"  furthest: {f.line}"]
    if verbose:
        out.append(f"    onto {f.onto.sha[:12]} {f.onto.subject}")
        if f.blocker is not None:
            b = f.blocker
            out.append(f"    blocked by {b.commit.sha[:12]} {b.commit.subject}")
            out.append(f"    on {b.patch}" + (f" in {', '.join(b.paths)}" if b.paths else ""))
        out.append(f"    {f.probes} in-memory replays for {f.total} commits")
    return out


def _branch(r: TargetResult) -> None:
    """Where the result went: the branch on one line, or its name alone above when long."""
    short = r.branch.removeprefix("refs/heads/")
    what = f"-> {_short(r.head)}" if r.updated else f"is up to date at {_short(r.head)}"
    if len(f"  {short} {what}") <= render.width():
        render.say(f"  {short} {what}")
    else:
        render.say(f"  {short}")
        render.say(f"    {what}")


def _patches(r: TargetResult) -> None:
    """Each patch whose outcome is news: dropped, skipped, resolved or edited."""
    for p in r.patches:
        if p.status in ("dropped", "skipped") or (p.reason and p.status != "conflict"):
            render.say(render.fit(f"  {p.file[:4]} {p.status}: {p.reason}"))
    for f in r.audit:  # clean is not correct: each finding is news, never cut
        for line in render.wrap(f.line, "  "):
            render.say(line)


def _foreseen(r: TargetResult) -> None:
    """The patches foreseen to conflict once the stop is dealt with, root causes first, each
    with its why."""
    why = {w["file"]: w["text"] for w in r.why}
    later = [p for p in r.patches if p.status == "would-conflict"]
    order = [w["file"] for w in r.why]
    for p in sorted(later, key=lambda p: order.index(p.file) if p.file in order else 0):
        num = p.file[:4]
        text = why.get(p.file) or f"{num} would conflict too, in {', '.join(p.forecast)}"
        if not text.startswith(f"{num} would conflict"):
            text = f"{num} would conflict too: {text.removeprefix(num).lstrip()}"
        render.say(render.fit(f"  {text}"))


def _recorded(r: TargetResult, series_root: str) -> None:
    """What `--continue` recorded, and the command that keeps the resolved patch itself."""
    import shlex

    rec = r.recorded
    if not rec:
        return
    if rec.files:
        text = (f"recorded the resolution of {rec.patch} as v{rec.version} "
                f"({', '.join(rec.files)}): every replay that meets this conflict again "
                "applies it")
        for line in render.wrap(text):
            render.say(line)
        keep = shlex.join(["carry", "rebase", r.series, "--onto", r.ref, "--refresh"])
        render.say("  to keep the resolved patch itself in the series:")
        render.say(f"    {keep}")
        _commit_it(r, series_root, rec.version)
    elif rec.already:
        for line in render.wrap(f"the resolution of {rec.patch} was recorded already "
                                f"({', '.join(rec.already)})"):
            render.say(line)
    for n in rec.not_recorded:
        where = f" in {n.path}" if n.path else ""
        for line in render.wrap(f"the resolution of {rec.patch}{where} was not recorded: "
                                f"{n.why}"):
            render.say(line)


def _commit_it(r: TargetResult, series_root: str, version: int) -> None:
    from carry.series.versions import commit_command  # written, not committed

    if series_root and (cmd := commit_command(f"{series_root}/{r.series}", version)):
        render.say(f"  commit it: {cmd}")


def _conflict(r: TargetResult, c: Conflict) -> None:
    """The stop: which patch, by whom, why, and on which paths."""
    render.say(render.fit(f"  CONFLICT in {c.file}"))
    by = f" by {c.author}"
    cols = render.width() - len(by) - 1
    render.say(render.fit(f"    \"{c.subject}", cols) + '"' + by)
    for w in r.why:
        if w["status"] == "conflict":
            text = f"why: {w['text']}"
            # a `git log` to copy is folded whole, never cut; other causes fit one line
            for line in render.wrap(text, "    ") if "git " in text else [render.fit(
                    f"    {text}")]:
                render.say(line)
    paths = ", ".join(c.paths) or "(none reported)"
    if len(f"    paths: {paths}") <= render.width() or len(c.paths) < 2:
        render.say(f"    paths: {paths}")
    else:
        render.say("    paths:")
        for path in c.paths:
            render.say(f"      {path}")
    for h in c.squash_hints:  # whole: it holds the TOML to copy into series.toml
        render.say(f"    hint: {h}")


def _next(r: TargetResult, c: Conflict, repo: Repo | None, series_root: str,
          several: bool) -> None:
    """The exact command that goes on, and the other ways out."""
    if repo is None or not (c.worktree or r.status == "conflict" and not r.dry_run):
        return
    from carry.rebase.resume import command

    resume = command(repo, series_root, "--continue" if c.worktree else "--resolve",
                     r.series if several else "", r.target if several else "")
    if c.worktree:
        render.say(f"  resolve in {c.worktree}")
        render.say(f"  then: {resume}")
    else:
        render.say(f"  next: {resume}")
        render.say("  (it checks the conflict out in its worktree; resolve there, then --continue)")
    render.say(f"  or --skip to leave {c.file[:4]} out, --abort to undo the rebase")
