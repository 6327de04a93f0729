"""Human and JSON views of each command's result, so the command modules stay free of
formatting: series, import, check, apply, init, status and releases here; what a replay led
to (rebase, validate, pr, supersede, the CI job) in `reports`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from carry.base.data import to_data
from carry.cli import render

if TYPE_CHECKING:  # results are only annotated here; importing them would slow every command
    from carry.intake.apply import ApplyResult
    from carry.intake.check import CheckReport
    from carry.intake.importer import ImportResult
    from carry.intake.linearize import Report as LinearReport
    from carry.series.store import Listing, Series


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
    if r.linearized:
        _show_linearized(r.linearized)
    if r.commit:
        render.say(f"commit it: {r.commit}")
    if r.note:
        render.warn(r.note)


def _show_linearized(lin: LinearReport) -> None:
    """One line per merge of upstream, per part a patch took from it, per dropped commit."""
    for m in lin.merges:
        render.say(f"  linearised merge {_short(m.merge)} of upstream {_short(m.upstream)} "
                   f"({m.subject})")
        for a in (a for a in lin.absorbed if a.merge == m.merge):
            paths = ", ".join(a.paths)
            what = {"tree": f"took its tree, absorbing {paths}",
                    "resolution": f"took its resolution of {paths}",
                    "deferred": f"took over {a.source}'s change to {paths}, which could not be "
                                "carried across it cleanly"}[a.part]
            render.say(f"    {a.patch} {what}")
    for d in lin.dropped:
        render.say(f"  dropped {_short(d.commit)} ({d.subject}) at merge {_short(d.merge)}: "
                   f"{d.why}")


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


def _base(ref: str, commit: str) -> str:
    """A base named by its commit alone is shown once."""
    return _short(commit) if ref in ("", commit) else f"{ref} {_short(commit)}"


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
    rows = [[b.name, "-", "-", f"ERROR: {b.error}", "-"] for b in bad]
    for s in items:
        d = _summary(s)
        count = str(d["patches"]) if d["patches"] or not d["expected"] else f"0/{d['expected']}"
        rows.append([d["name"], f"v{d['version']}", count,
                     _base(d["base"]["ref"], d["base"]["commit"]),
                     ", ".join(d["targets"])])
    # the title says where: one line above the columns, not a second heading
    render.table(f"series in {listing.root}", ["name", "version", "patches", "base", "targets"],
                 sorted(rows, key=lambda r: r[0]))
    return None


def show_series(s: Series, as_json: bool) -> None:
    m = s.manifest
    files = [{"number": p.number, "file": p.name} for p in s.patches()]
    if as_json:
        return render.emit_json({**to_data(m), "patch_files": files,
                                 "cover": s.cover})
    render.say(f"{m.name} v{m.version}: {m.title}")
    fork = f"{m.fork.repo} ({m.fork.branch})" if m.fork.branch else m.fork.repo
    render.say(f"  upstream {m.upstream.repo or '(not set)'}  fork {fork or '(not set)'}")
    render.say(f"  base {_base(m.base.ref, m.base.commit)}")
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
            for line in st.why:
                render.say(f"    why: {line}")
            if st.worktree:
                render.say(f"    worktree: {st.worktree}")
            render.say(f"    next: {st.next}")
        for b in s.branches:
            render.say(f"  {b.branch} at {_short(b.head)} (tree {_short(b.tree)}, "
                       f"{b.date.replace('T', ' ')}) {b.subject}")
            for line in s.audit.get(b.branch, []):
                render.say(f"    audit: {line}")
            if b.obsolete:
                fate = ("pruned" if b.pruned else f"kept: {b.kept}" if b.kept else
                        f"`carry status {s.series} --prune` removes it")
                render.say(f"    obsolete: {b.obsolete}; {fate}")
        if r.repo and not s.branches and not s.stopped:
            render.say("  no rebase result in this repository yet")
        v = s.validation
        if v is not None:
            which = (f"current: {', '.join(v.for_branches)}" if v.current
                     else "not for any current branch")
            render.say(f"  last validation {v.status} on {v.onto_ref} at {v.started} "
                       f"(tree {_short(v.head_tree)}, {which}): {v.summary}")
        elif r.repo:
            render.say("  no validation in this repository yet")
        _show_resolutions(s, r.repo)


def _show_resolutions(s: Any, repo: str) -> None:
    """Each recorded resolution, whether a replay can still use it, and how to prune."""
    if s.pruned:
        render.say(f"  pruned {len(s.pruned)} recorded resolution(s) that no longer matched "
                   f"(now v{s.pruned_version}): {', '.join(s.pruned)}")
    for r in s.resolutions:
        state = f": NO LONGER MATCHES: {r.unmatched}" if r.unmatched else ""
        render.say(f"  resolution {r.file} ({r.patch}, {r.path}, recorded on v{r.version})"
                   + state)
    if s.resolutions_note:
        render.say(f"  resolutions: {s.resolutions_note}")
    stale = sum(1 for r in s.resolutions if r.unmatched)
    if stale:
        import shlex

        cmd = shlex.join(["carry", "status", s.series, *(["--repo", repo] if repo else []),
                          "--prune"])
        render.say(f"  {stale} recorded resolution(s) no longer match; `{cmd}` removes them "
                   "(a new version)")


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
