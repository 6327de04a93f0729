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


def show_import(r: ImportResult, as_json: bool, verbose: bool = True) -> None:
    """What was imported; by default the first and last patch files (-v lists each)."""
    if as_json:
        return render.emit_json(r)
    state = f"v{r.version}" if r.changed else f"unchanged at v{r.version}"
    _lines(f"{r.series}: {len(r.patches)} patches from {r.source} (base {_short(r.base)}) -> "
           f"{state}", "")
    shown = r.patches if verbose or len(r.patches) <= 3 else [r.patches[0], r.patches[-1]]
    for i, p in enumerate(shown):
        if i == 1 and len(shown) < len(r.patches):
            render.say(f"  \u2026 ({len(r.patches) - 2} more; -v lists each)")
        render.say(f"  {p}")
    if r.linearized:
        _show_linearized(r.linearized)
    if r.commit:
        render.say(f"commit it: {r.commit}")
    if r.note:
        render.warn(r.note)
    return None


def _show_linearized(lin: LinearReport) -> None:
    """One line per merge of upstream, per part a patch took from it, per dropped commit."""
    for m in lin.merges:
        render.say(render.fit(f"  linearised merge {_short(m.merge)} of upstream "
                              f"{_short(m.upstream)} ({m.subject})"))
        for a in (a for a in lin.absorbed if a.merge == m.merge):
            paths = ", ".join(a.paths)
            what = {"tree": f"took its tree, absorbing {paths}",
                    "resolution": f"took its resolution of {paths}",
                    "deferred": f"took over {a.source}'s change to {paths}, which could not be "
                                "carried across it cleanly"}[a.part]
            _lines(f"{a.patch} {what}", "    ")
    said = {a.patch for a in lin.absorbed}
    for c in lin.changed:  # changed by the carrying alone: its diff is not the fork's
        if c.patch not in said:
            _lines(f"{c.patch} {c.why}", "    ")
    for d in lin.dropped:
        _lines(f"dropped {_short(d.commit)} ({d.subject}) at merge {_short(d.merge)}: {d.why}",
               "  ")
    for sha in lin.passed:
        _lines(f"passed over merge {_short(sha)}: it merges an upstream an earlier merge "
               "already brought in, and changes nothing", "  ")


def show_check(r: CheckReport, as_json: bool, verbose: bool = True) -> None:
    """Every patch's author, date and trailers with `verbose` (-v); by default only the patches
    with a finding, each line within the terminal's width."""
    if as_json:
        return render.emit_json(r)
    render.say(f"{r.series} v{r.version}: {r.status}")
    pol = r.policy
    render.say(render.fit(f"  policy: required {', '.join(pol['required']) or 'nothing'}"  # type: ignore[arg-type]
                          f"; AI attribution via {pol['ai_attribution']}"))
    for f in r.findings:
        _lines(f"{f.kind}: {f.message}", "  ")
    for e in r.expected:
        trail = ", ".join(e["trailers"]) or "no trailers"  # type: ignore[arg-type]
        render.say(render.fit(f"  expects patch {e['patch']}: {e['author']} ({trail})"))
    shown = r.patches if verbose else [p for p in r.patches if p.findings]
    if not verbose and r.patches:
        bad = sum(1 for p in r.patches if not p.ok)
        render.say(f"  {len(r.patches)} patches: {len(r.patches) - bad} ok, {bad} FAIL"
                   + ("; each patch's author, date and trailers with -v" if r.patches else ""))
    for p in shown:
        mark = "ok" if p.ok else "FAIL"
        render.say(render.fit(f"[{mark}] {p.file}  {p.subject}") if not verbose else
                   f"[{mark}] {p.file}  {p.subject}")
        if verbose:
            render.say(f"       author {p.author} <{p.email}>  date {render.human_date(p.date)}")
            for t in p.trailers:
                render.say(f"       {t['key']}: {t['value']}")
        for f in p.findings:
            _lines(f"{f.kind}: {f.message}", "       ")
    return None


def _lines(text: str, indent: str) -> None:
    for line in render.wrap(text, indent):
        render.say(line)


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

    for cmd in r.setup:  # the remotes the manifest names that the clone lacks
        render.say(f"next: {cmd}")
    render.say(f"{'then' if r.setup else 'next'}: carry import {r.series} --repo "
               f"{shlex.quote(r.repo or '.')} --range {r.base['ref']}..BRANCH   "
               "(BRANCH: the commits to carry)")


def show_status(r: Any, as_json: bool, verbose: bool = True) -> None:
    """Each series' stops, branches, last validation and resolutions; by default a recorded
    resolution that still matches is counted, not listed (-v lists each)."""
    if as_json:
        return render.emit_json(r)
    if not r.repo:
        render.warn("no --repo given: rebases and validations are recorded in the repository "
                    "they ran in; pass --repo PATH to see them")
    for s in r.series:
        _lines(f"{s.series} v{s.version}: {s.patches} patches on {s.base or '(no base)'}; "
               f"targets {', '.join(s.targets) or 'none'}", "")
        for st in s.stopped:
            render.say(render.fit(f"  STOPPED rebase onto {st.target} ({st.phase}) at {st.patch}"))
            if st.paths:
                render.say(f"    paths: {', '.join(st.paths)}")
            for line in st.why:
                render.say(render.fit(f"    why: {line}"))
            if st.worktree:
                render.say(f"    worktree: {st.worktree}")
            render.say(f"    next: {st.next}")
        for b in s.branches:
            _branch_line(b, verbose)
            for finding in s.audit.get(b.branch, []):  # news: folded, never cut
                for line in render.wrap(f"audit: {finding}", "    "):
                    render.say(line)
            if b.obsolete:
                fate = ("pruned" if b.pruned else f"kept: {b.kept}" if b.kept else
                        f"`carry status {s.series} --prune` removes it")
                _lines(f"obsolete: {b.obsolete}; {fate}", "    ")
        if r.repo and not s.branches and not s.stopped:
            render.say("  no rebase result in this repository yet")
        v = s.validation
        if v is not None:
            which = (f"current: {', '.join(v.for_branches)}" if v.current
                     else "not for any current branch")
            _lines(f"last validation {v.status} on {v.onto_ref} at {v.started} "
                   f"(tree {_short(v.head_tree)}, {which}): {v.summary}", "  ")
        elif r.repo:
            render.say("  no validation in this repository yet")
        _show_resolutions(s, r.repo, verbose)
    return None


def _branch_line(b: Any, verbose: bool) -> None:
    """`BRANCH at SHA (tree T, date) subject` when it fits; else the branch and its commit on
    one line (to copy) and the rest, cut to the width, below."""
    when = b.date.replace("T", " ")
    line = f"  {b.branch} at {_short(b.head)} (tree {_short(b.tree)}, {when}) {b.subject}"
    if verbose or len(line) <= render.width():
        render.say(line)
        return
    render.say(f"  {b.branch} at {_short(b.head)}")
    render.say(render.fit(f"    {when[:16]} {b.subject}"))


def _show_resolutions(s: Any, repo: str, verbose: bool) -> None:
    """Each recorded resolution that no longer matches (with -v, every one), and how to
    prune."""
    if s.pruned:
        _lines(f"pruned {len(s.pruned)} recorded resolution(s) that no longer matched "
               f"(now v{s.pruned_version}): {', '.join(s.pruned)}", "  ")
    kept = [x for x in s.resolutions if not x.unmatched]
    if kept and not verbose:
        render.say(f"  {len(kept)} recorded resolution(s) still match (-v lists them)")
    for x in s.resolutions if verbose else [x for x in s.resolutions if x.unmatched]:
        line = f"  resolution {x.file} ({x.patch}, {x.path}, recorded on v{x.version})"
        if not verbose and len(line) > render.width():
            render.say(f"  resolution {x.file}")
            render.say(f"    ({x.patch}, recorded on v{x.version}) for: {x.path}")
        else:
            render.say(line)
        if x.unmatched:
            _lines(f"NO LONGER MATCHES: {x.unmatched}", "    ")
    if s.resolutions_note:
        _lines(f"resolutions: {s.resolutions_note}", "  ")
    stale = sum(1 for x in s.resolutions if x.unmatched)
    if stale:
        import shlex

        cmd = shlex.join(["carry", "status", s.series, *(["--repo", repo] if repo else []),
                          "--prune"])
        render.say(f"  {stale} recorded resolution(s) no longer match; to remove them (a new "
                   "version):")
        render.say(f"    {cmd}")


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
