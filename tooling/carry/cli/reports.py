"""Human and JSON views of what a replay led to: rebase, range-diff, validate, pr, supersede
and the CI job (the other commands' views are in `views`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from carry.base.data import to_data
from carry.cli import render

if TYPE_CHECKING:  # results are only annotated here; importing them would slow every command
    from collections.abc import Sequence

    from carry.git import Repo
    from carry.replay.engine import TargetResult
    from carry.validate.results import Report


from carry.cli.views import _or_json, _short


def _furthest(r: TargetResult) -> list[str]:
    """`--furthest` in -v: where it went and what blocks it, shas and subjects in full."""
    from carry.cli.digest import furthest_lines

    return [line.strip() for line in furthest_lines(r.furthest, True)]


def show_rebase(results: Sequence[object], as_json: bool, repo: Repo | None = None,
                series_root: str = "", verbose: bool = True) -> None:
    """The rebase's results: the full forecast with `verbose` (-v), else `digest`'s terse
    view of what changed and what to do next."""
    from carry.rebase.flags import Aborted
    from carry.replay.engine import TargetResult

    if as_json:
        return render.emit_json(results)
    for a in results:
        if not isinstance(a, Aborted):
            continue
        back = f"; {a.branch.removeprefix('refs/heads/')} put back" if a.restored else ""
        for line in render.wrap(f"{a.series}: aborted the rebase onto {a.target}{back}", ""):
            render.say(line)
    rows: list[TargetResult] = [r for r in results if isinstance(r, TargetResult)]
    if not rows:
        return None
    if not verbose:
        from carry.cli import digest

        return digest.show(rows, repo, series_root)
    from carry.rebase.resume import stopped as stopped_in

    stopped = stopped_in(repo) if repo is not None else []
    render.table(f"rebase {rows[0].series}", ["target", "status", "clean", "conflicts",
                                              "would-conflict", "drops", "head"],
                 [[r.target, r.status + (" (dry run)" if r.dry_run else ""),
                   str(r.count("applied")), str(r.count("conflict")),
                   str(r.count("would-conflict")), str(r.count("dropped")), _short(r.head)]
                  for r in rows])
    for r in rows:
        for p in r.patches:
            if p.status in ("dropped", "skipped") or p.reason:
                render.say(f"  {r.target}: {p.file} {p.status}: {p.reason}")
            elif p.status == "would-conflict":
                render.say(f"  {r.target}: {p.file} would-conflict too, in "
                           f"{', '.join(p.forecast)} (by {p.author})")
        for f in r.audit:
            render.say(f"  {r.target}: {f.line}")
        for text in [*_furthest(r), *(w["text"] for w in r.why)]:
            render.say(f"  {r.target}: {text}")
        if r.message:
            render.say(f"  {r.target}: {r.message}")
        for line in _recorded(r):
            render.say(f"  {r.target}: {line}")
        if r.recorded and r.recorded.files and series_root:
            from carry.series.versions import commit_command  # written, not committed

            if cmd := commit_command(f"{series_root}/{r.series}", r.recorded.version):
                render.say(f"  commit it: {cmd}")
        if r.updated:
            render.say(f"  {r.target}: {r.branch} -> {_short(r.head)}")
        elif r.status == "applied" and not r.dry_run and r.branch:
            render.say(f"  {r.target}: {r.branch} is up to date at {_short(r.head)}")
        if r.conflict:
            c = r.conflict
            render.say(f"  {r.target}: CONFLICT in {c.file} \"{c.subject}\" by {c.author}")
            render.say(f"    paths: {', '.join(c.paths) or '(none reported)'}")
            for h in c.squash_hints:
                render.say(f"    hint: {h}")
            if repo is not None and (c.worktree or r.status == "conflict" and not r.dry_run):
                from carry.rebase.resume import command

                several = len(stopped) > 1
                resume = command(repo, series_root, "--continue" if c.worktree else
                                 "--resolve", r.series if several else "",
                                 r.target if several else "")
                render.say(f"    resolve in {c.worktree}, then: {resume} (or --skip, --abort)"
                           if c.worktree else f"    to resolve it: {resume} (or --skip, "
                           "--abort)")
        if r.refreshed:
            tag = f" (tag {r.refreshed.tag})" if r.refreshed.tag else ""
            render.say(f"  {r.series} is now v{r.refreshed.version}{tag}")
            from carry.series.versions import commit_command  # written, tagged, not committed

            if series_root and (cmd := commit_command(f"{series_root}/{r.series}",
                                                      r.refreshed.version)):
                render.say(f"  commit it: {cmd}")
    return None


def _recorded(r: TargetResult) -> list[str]:
    """What `--continue` recorded: one line for the resolution, one per path it could not
    keep."""
    import shlex

    rec = r.recorded
    if not rec:
        return []
    out = []
    keep = shlex.join(["carry", "rebase", r.series, "--onto", r.ref, "--refresh"])
    if rec.files:
        out.append(f"recorded the resolution of {rec.patch} in the series as "
                   f"v{rec.version} ({', '.join(rec.files)}): every replay that meets "
                   f"this conflict again applies it; `{keep}` keeps the resolved patch itself")
    elif rec.already:
        out.append(f"the resolution of {rec.patch} was recorded already "
                   f"({', '.join(rec.already)})")
    for n in rec.not_recorded:
        where = f" in {n.path}" if n.path else ""
        out.append(f"the resolution of {rec.patch}{where} was not recorded: {n.why}")
    return out


@_or_json
def show_range_diff(r: Any) -> None:
    import sys

    if not r.output:
        render.say(f"{r.series}: {r.old.label} and {r.new.label} both have no patches")
    sys.stdout.write("".join(_fit_pair(line) for line in r.output.splitlines(keepends=True)))
    for line in r.resolutions:
        render.say(f"resolutions: {line}")


_PAIR = r"^ *(\d+|-+): +([0-9a-f]+|-+) [=!<>] +(\d+|-+): +([0-9a-f]+|-+) "


def _fit_pair(line: str) -> str:
    """git range-diff's pair line (`1:  abc1234 ! 1:  def5678 subject`) with its subject cut
    to the terminal's width; the hashes come first and stay whole. Inner diff lines and
    coloured output are left as git wrote them."""
    import re

    body = line.rstrip("\n")
    if "\x1b" in body or len(body) <= render.width() or not re.match(_PAIR, body):
        return line
    return render.fit(body) + line[len(body):]


def show_validate(r: Report, as_json: bool) -> None:
    from carry.validate.results import Status, StepKind

    if as_json:
        return render.emit_json({**to_data(r), "exit_code": r.exit_code})
    where = f"{r.engine} {r.image}" if r.image else f"{r.engine} {r.python}"
    render.say(f"{r.series} v{r.version}: validate on {r.onto_ref} ({_short(r.onto)}), "
               f"result {_short(r.head)} (tree {_short(r.head_tree)}), {where}"
               + (" [cached]" if r.cached else ""))
    for line in [*r.resolved, *r.audit]:
        render.say(f"  {line}")
    for s in r.steps:
        mark = "ok" if s.ok else s.status.upper()
        why = f": {s.note}" if s.note and not s.ok else ""
        took = "" if r.cached else f" ({s.seconds:.1f}s)"  # a cache hit ran nothing now
        render.say(f"  [{mark}] {s.name}{why}{took}  {s.command}")
        if s.note and s.ok:
            render.say(f"       {s.note}")
        if s.kind is StepKind.PYTEST and r.tests:
            for c in r.tests.suites:
                render.say(f"       {c.suite}: {c.passed} passed, {c.failed} failed, "
                           f"{c.skipped} skipped, {c.errors} errors")
            for f in r.tests.failures:
                render.say(f"       {f.kind.upper()} {f.test} - {f.message}".rstrip(" -"))
    b = r.baseline
    if b is not None:
        render.say(f"  baseline: the series' test files on the unfixed {_short(r.onto)} "
                   f"({', '.join(b.files) or 'none'}): {b.summary or 'not run'}")
        for t in b.proven:
            render.say(f"       fails without the fix, passes with it: {t}")
        for t in b.passes_without_fix:
            render.say(f"       new test passes without the fix: {t}")
        for t in b.fails_with_fix:
            render.say(f"       fails with and without the fix: {t}")
        for line in b.import_errors:
            render.say(f"       {line}")
        if b.note:
            render.say(f"       FLAGGED: {b.note}" if b.flagged else f"       {b.note}")
    if r.summary:
        render.say(r.summary)
    state = "passed" if r.status is Status.PASSED else "FAILED"
    if r.cached:
        render.say(f"validation {state} (cached: {_short(r.cached_for)} has the tree "
                   f"{_short(r.head_tree)} that ran with this plan and "
                   f"{'image' if r.image else 'interpreter'} at {r.started}; nothing ran, "
                   "--no-cache runs again)")
    else:
        render.say(f"validation {state} in {r.seconds:.1f}s")
    render.say(f"logs: {r.run_dir}")


@_or_json
def show_pr(r: Any) -> None:
    if r.dry_run:
        what = (f"update {r.repo}#{r.number}" if r.action == "would-update" else
                f"open a {'draft ' if r.draft else ''}PR in {r.repo} against {r.base}")
        render.say(f"dry run: would push {_short(r.commit)} to {r.head} on {r.remote} and {what}")
        if not r.looked_up:
            render.say("  (no GitHub token, so whether a PR for this series set is open already "
                       "was not checked)")
        render.say(f"title: {r.title}")
        render.say(r.body)
    else:
        render.say(f"{r.action} {r.repo}#{r.number}: {r.title} {r.url}".rstrip())
    for m in r.missing:
        render.say(f"  warning: the branch does not carry {m}")


@_or_json
def show_supersede(r: Any) -> None:
    mode = "dry run: " if r.dry_run else ""
    render.say(f"{mode}#{r.by} ({r.by_state}, base {r.base}) carries {r.series}; "
               f"{len(r.pulls)} other open PR(s) in {r.repo} looked at, "
               f"{len(r.closing)} to close")
    if r.waiting:
        render.say(f"  waiting: {r.waiting}")
    for x in r.pulls:
        tied = f" [{'; '.join(x.matched)}]" if x.matched else ""
        done = f" -> {', '.join(x.actions)}" if x.actions else ""
        render.say(f"  #{x.number} {x.title} ({x.author}): {x.verdict}: {x.why}{tied}{done}")
    for x in r.unrecorded:
        render.say(f"  #{x.number} {x.title} ({x.author}): closed, with carry's comment for "
                   f"#{r.by}, by an earlier run that never recorded it -> "
                   f"{', '.join(x.actions)}")
    for line in r.provenance:
        render.say(f"  provenance: {line}")


@_or_json
def show_job(r: Any) -> None:
    rows = [[x.series, x.target, x.rebase + (f" ({x.conflict})" if x.conflict else ""),
             str(len(x.dropped)), _short(x.head), f"{x.validate}: {x.summary}"]
            for x in r.rows]
    render.table(f"carry ci: {r.status}", ["series", "target", "rebase", "drops", "head",
                                           "validation"], rows)
    for x in r.rows:
        for line in [*x.resolved, *x.audit]:
            render.say(f"  {x.series} {x.target}: {line}")
    render.say(f"summary: {r.out}/summary.md")
    for a in r.loop:
        number = f" #{a.number}" if a.number else ""
        render.say(f"{a.kind} {a.action}{number}: {a.series} {a.target} ({a.ref})"
                   + (f": {a.note}" if a.note else "") + (f" {a.url}" if a.url else ""))
    for x in r.rows:
        for f in x.failing:
            render.say(f"  {x.series} {x.target}: {f.get('test', '')} {f.get('verdict', '')}")
    for a in r.dashboard:
        render.say(f"dashboard {a.action}" + (f" #{a.number}" if a.number else "")
                   + (f" {a.url}" if a.url else ""))
