"""Human and JSON views of each command's result, so cli.py stays free of formatting."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from carry.cli import render

if TYPE_CHECKING:  # results are only annotated here; importing them would slow every command
    from carry.intake.apply import ApplyResult
    from carry.intake.check import CheckReport
    from carry.intake.importer import ImportResult
    from carry.series.store import Listing, Series
    from carry.validate.results import Report


R = TypeVar("R")


def _or_json(text: Callable[[R], None]) -> Callable[[R, bool], None]:
    """With --json the result itself is the one document on stdout; `text` is for people."""

    @functools.wraps(text)
    def show(r: R, as_json: bool) -> None:
        if as_json:
            render.emit_json(r)
        else:
            text(r)

    return show


def _short(sha: str) -> str:
    return sha[:12] if sha else "-"


@_or_json
def show_import(r: ImportResult) -> None:
    state = f"v{r.version}" if r.changed else f"unchanged at v{r.version}"
    render.say(f"{r.series}: {len(r.patches)} patches from {r.source} "
               f"(base {_short(r.base)}) -> {state}")
    for p in r.patches:
        render.say(f"  {p}")
    if r.note:
        render.warn(r.note)


@_or_json
def show_check(r: CheckReport) -> None:
    render.say(f"{r.series} v{r.version}: {r.status}")
    pol = r.policy
    render.say(f"  policy: required {', '.join(pol['required']) or 'nothing'}"  # type: ignore[arg-type]
               f"; AI attribution via {pol['ai_attribution']}")
    for f in r.findings:
        render.say(f"  {f.kind}: {f.message}")
    for e in r.expected:
        trail = ", ".join(e["trailers"]) or "no trailers"  # type: ignore[arg-type]
        render.say(f"  expects patch {e['patch']}: {e['author']} ({trail})")
    for p in r.patches:
        mark = "ok" if p.ok else "FAIL"
        render.say(f"[{mark}] {p.file}  {p.subject}")
        render.say(f"       author {p.author} <{p.email}>  date {render.human_date(p.date)}")
        for t in p.trailers:
            render.say(f"       {t['key']}: {t['value']}")
        for f in p.findings:
            render.say(f"       {f.kind}: {f.message}")


@_or_json
def show_apply(r: ApplyResult) -> None:
    render.say(f"{r.series}: {len(r.patches)} commits on {_short(r.onto)} -> {r.branch} "
               f"at {_short(r.head)}")
    for p in r.patches:
        render.say(f"  {_short(p.commit)} {p.subject} ({p.author})")


def _summary(s: Series) -> dict[str, Any]:
    m = s.manifest
    return {
        "name": m.name, "title": m.title, "version": m.version,
        "patches": len(s.patches()), "expected": len(m.expected),
        "base": {"ref": m.base.ref, "commit": m.base.commit},
        "targets": [t.name for t in m.targets],
    }


def show_series_list(listing: Listing, as_json: bool) -> None:
    items, bad = listing.series, listing.bad
    if as_json:
        docs = [_summary(s) for s in items] + [{"name": b.name, "error": b.error} for b in bad]
        return render.emit_json(sorted(docs, key=lambda d: str(d["name"])))
    if not items and not bad:
        render.say(f"no series in {listing.root}"
                   + ("" if listing.root.is_dir() else " (no such folder)")
                   + "; `carry init NAME` starts one, --series-dir looks elsewhere")
        return None
    render.say(f"series in {listing.root}")
    rows = [[b.name, "-", "-", f"ERROR: {b.error}", "-"] for b in bad]
    for s in items:
        d = _summary(s)
        count = str(d["patches"]) if d["patches"] or not d["expected"] else f"0/{d['expected']}"
        rows.append([d["name"], f"v{d['version']}", count,
                     f"{d['base']['ref']} {_short(d['base']['commit'])}",
                     ", ".join(d["targets"])])
    render.table("series", ["name", "version", "patches", "base", "targets"],
                 sorted(rows, key=lambda r: r[0]))
    return None


def show_series(s: Series, as_json: bool) -> None:
    m = s.manifest
    files = [{"number": p.number, "file": p.name} for p in s.patches()]
    if as_json:
        return render.emit_json({**render.to_data(m), "patch_files": files,
                                 "cover": s.cover})
    render.say(f"{m.name} v{m.version}: {m.title}")
    fork = f"{m.fork.repo} ({m.fork.branch})" if m.fork.branch else m.fork.repo
    render.say(f"  upstream {m.upstream.repo or '(not set)'}  fork {fork or '(not set)'}")
    render.say(f"  base {m.base.ref} {_short(m.base.commit)}")
    for t in m.targets:
        render.say(f"  target {t.name}: {t.ref or 'tags ' + t.tags}")
    for p in m.provenance:
        state = f"merged as {p.merged_as}" if p.merged_as else p.state
        render.say(f"  {p.role}: {p.pr} {state} {p.title}".replace("  ", " ").rstrip())
    for f in files:
        render.say(f"  {f['file']}")
    if not files and m.expected:
        render.say(f"  patches not imported yet: {len(m.expected)} expected")
    for c in m.changelog:
        render.say(f"  v{c.version} {c.date}: {c.summary}")


# -- rebase and range-diff (F2) ----------------------------------------------------------------
def show_rebase(results: list[Any], as_json: bool, repo: Any = None,
                series_root: str = "") -> None:
    from carry.rebase.command import Aborted
    from carry.replay.engine import TargetResult

    if as_json:
        return render.emit_json(results)
    for a in results:
        if not isinstance(a, Aborted):
            continue
        back = f"; {a.branch} put back" if a.restored else ""
        render.say(f"{a.series}: aborted the rebase onto {a.target}{back}")
    rows: list[TargetResult] = [r for r in results if isinstance(r, TargetResult)]
    if not rows:
        return None
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
        if r.message:
            render.say(f"  {r.target}: {r.message}")
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
            if c.worktree or r.status == "conflict" and not r.dry_run and repo is not None:
                from carry.rebase.resume import command

                several = len(stopped) > 1
                resume = command(repo, series_root, "--continue", r.series if several else "",
                                 r.target if several else "")
                render.say(f"    resolve in {c.worktree}, then: {resume} (or --skip, --abort)"
                           if c.worktree else f"    to resolve it: {resume} makes the conflict "
                           "worktree (or --skip, --abort)")
        if r.refreshed:
            render.say(f"  {r.series} is now v{r.refreshed['version']}"
                       f"{' (tag ' + r.refreshed['tag'] + ')' if r.refreshed['tag'] else ''}")
    return None


@_or_json
def show_range_diff(r: Any) -> None:
    import sys

    if not r.output:
        render.say(f"{r.series}: {r.old.label} and {r.new.label} both have no patches")
    sys.stdout.write(r.output)
# -- end rebase and range-diff (F2)


def show_validate(r: Report, as_json: bool) -> None:
    if as_json:
        return render.emit_json({**render.to_data(r), "exit_code": r.exit_code})
    where = f"{r.engine} {r.image}" if r.image else f"{r.engine} {r.python}"
    render.say(f"{r.series} v{r.version}: validate on {r.onto_ref} ({_short(r.onto)}), "
               f"result {_short(r.head)} (tree {_short(r.head_tree)}), {where}"
               + (" [cached]" if r.cached else ""))
    for s in r.steps:
        mark = "ok" if s.ok else s.status.upper()
        why = f": {s.note}" if s.note and not s.ok else ""
        render.say(f"  [{mark}] {s.name}{why} ({s.seconds:.1f}s)  {s.command}")
        if s.note and s.ok:
            render.say(f"       {s.note}")
        if s.kind == "pytest" and r.tests:
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
        if b.note:
            render.say(f"       FLAGGED: {b.note}" if b.flagged else f"       {b.note}")
    if r.summary:
        render.say(r.summary)
    state = "passed" if r.status == "passed" else "FAILED"
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
        render.say(f"dry run: would push {_short(r.commit)} to {r.head} and {what}")
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
    for line in r.provenance:
        render.say(f"  provenance: {line}")


@_or_json
def show_job(r: Any) -> None:
    rows = [[x.series, x.target, x.rebase + (f" ({x.conflict})" if x.conflict else ""),
             str(len(x.dropped)), _short(x.head), f"{x.validate}: {x.summary}"]
            for x in r.rows]
    render.table(f"carry ci: {r.status}", ["series", "target", "rebase", "drops", "head",
                                           "validation"], rows)
    render.say(f"summary: {r.out}/summary.md")
    for a in r.loop:
        number = f" #{a.number}" if a.number else ""
        render.say(f"{a.kind} {a.action}{number}: {a.series} {a.target} ({a.ref})"
                   + (f": {a.note}" if a.note else "") + (f" {a.url}" if a.url else ""))


@_or_json
def show_init(r: Any) -> None:
    render.say(f"{r.series}: wrote {r.path}/series.toml")
    render.say(f"  upstream {r.upstream['repo']} (remote {r.upstream['remote']}, "
               f"branch {r.upstream['branch']})")
    render.say(f"  fork     {r.fork['repo']} (remote {r.fork['remote']}"
               + (f", branch {r.fork['branch']})" if r.fork["branch"] else ")"))
    render.say(f"  base     {r.base['ref']} {_short(r.base['commit'])}")
    for t in r.targets:
        what = t["ref"] or f"newest {t['latest']} tag(s) matching {t['tags']}"
        render.say(f"  target   {t['name']}: {what}")
    render.say("  test plan: empty (see the comments in series.toml)")
    for n in r.notes:
        render.warn(n)
    import shlex

    render.say(f"next: carry import {r.series} --repo {shlex.quote(r.repo or '.')} "
               f"--range {r.base['ref']}..BRANCH   (BRANCH: the commits to carry)")


@_or_json
def show_status(r: Any) -> None:
    if not r.repo:
        render.warn("no --repo given: rebases and validations are recorded in the repository "
                    "they ran in; pass --repo PATH to see them")
    for s in r.series:
        render.say(f"{s.series} v{s.version}: {s.patches} patches on {s.base or '(no base)'}; "
                   f"targets {', '.join(s.targets) or 'none'}")
        for st in s.stopped:
            render.say(f"  STOPPED rebase onto {st.target} ({st.phase}) at {st.patch}")
            if st.paths:
                render.say(f"    paths: {', '.join(st.paths)}")
            if st.worktree:
                render.say(f"    worktree: {st.worktree}")
            render.say(f"    next: {st.next}")
        for b in s.branches:
            render.say(f"  {b.branch} at {_short(b.head)} ({b.date.replace('T', ' ')}) "
                       f"{b.subject}")
        if r.repo and not s.branches and not s.stopped:
            render.say("  no rebase result in this repository yet")
        v = s.validation
        if v is not None:
            which = f"current: {v.for_branch}" if v.current else "not for any current branch"
            render.say(f"  last validation {v.status} on {v.onto_ref} at {v.started} "
                       f"(tree {_short(v.head_tree)}, {which}): {v.summary}")
        elif r.repo:
            render.say("  no validation in this repository yet")


def show_releases(rows: list[Any], as_json: bool) -> None:
    if as_json:
        return render.emit_json({"releases": rows})
    render.table("releases, oldest first", ["series", "target", "version", "ref", "commit",
                                            "status"],
                 [[r.series, r.target, r.version or "-", r.ref or "-", _short(r.commit),
                   r.status] for r in rows])
    return None


def show_matrix(cells: list[dict[str, str]], notes: list[str]) -> None:
    """The matrix alone on stdout (GitHub reads every top-level key as a dimension), notes on
    stderr."""
    import json

    for n in notes:
        render.warn(n)
    print(json.dumps({"include": cells}, separators=(",", ":")))
