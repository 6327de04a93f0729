"""`carry ci`: the CI job. Every series against every target it names (upstream main, the
newest release tags, the fork's dev branch): rebase without writing a ref, then validate the
result. It writes `summary.json` and `summary.md` (also appended to `$GITHUB_STEP_SUMMARY`
when GitHub Actions sets it) and fails when any target conflicts or fails its tests.

Validation results are cached by tree, plan and image, so a nightly run against releases that
did not move starts no container.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from carry.base import atomic, untrusted
from carry.base.data import to_data
from carry.base.errors import CarryError
from carry.git import Repo
from carry.job import tracking
from carry.job.shared import Action, Check, Did, Row, furthest_line
from carry.job.shared import Options as LoopOptions
from carry.rebase import command as rebase
from carry.series import store as seriesmod
from carry.validate.results import Status

if TYPE_CHECKING:
    from carry.job.steer import Steering


@dataclass(frozen=True, kw_only=True)
class Options:
    """How a job validates and where it writes (the flags `carry ci` and `carry ci run`
    share)."""

    engine: str = "podman"
    python: str | None = None  # default: the plan's [test].python
    fetch: bool = False
    out: Path = Path("carry-out")
    paused: frozenset[str] = frozenset()  # series the dashboard pauses: not run
    retry: frozenset[tuple[str, str]] = frozenset()  # (series, target): past every cache


@dataclass
class JobResult:
    status: Status  # PASSED | FAILED
    rows: list[Row]
    out: str
    loop: list[Action] = field(default_factory=list)  # PRs and issues (opt-in)
    dashboard: list[Action] = field(default_factory=list)  # the dashboard (opt-in)

    @property
    def exit_code(self) -> int:
        return 0 if self.status is Status.PASSED else 1


def _validate(s: seriesmod.Series, repo: Repo, row: Row, onto: str, how: Options) -> None:
    from carry.validate import run as validate

    try:
        # The rebased head on its target, which may hold fewer commits than the series.
        report = validate.run(s, repo, validate.Request(
            commit=f"{onto}..{row.head}", engine=how.engine, python=how.python,
            use_cache=(s.name, row.target.split("@", 1)[0]) not in how.retry))
    except CarryError as exc:
        row.check, row.summary = Check.ERROR, exc.line()
        return
    if report.status is Status.FAILED:  # which tests, and are they the series' or upstream's?
        from carry.job import verdict

        row.failing = verdict.triage(s, repo, onto, row.head, report, how.engine, how.python)
        row.tail = verdict.tail(report) if row.failing else ""
    report.audit = row.audit  # built from the rebase's head: the audit is the rebase's
    path = how.out / artifact_name(s.name, row.target)
    atomic.write_json(path, to_data(report), indent=2)
    row.report = str(path)
    row.check = Check.PASSED if report.status is Status.PASSED else Check.FAILED
    row.cached = report.cached
    row.summary = report.summary


def _furthest(s: seriesmod.Series, repo: Repo, row: Row, how: Options) -> None:
    """A conflicting cell: how far the series goes on the target's first-parent line (`carry
    rebase --furthest`), that point validated; the loop's PR carries it when it passes."""
    from dataclasses import replace

    try:
        (r,) = rebase.run(s, repo, rebase.Options(onto=[row.onto], furthest=True, dry_run=True))
    except CarryError as exc:
        row.furthest = f"furthest point not found: {exc.line()}"
        return
    row.furthest = r.furthest.line if r.furthest else r.message
    if r.status != "applied" or r.furthest is None or not r.furthest.steps:
        return
    there = replace(row, head=r.head, check=Check.NOT_RUN, cached=False, held="", summary="",
                    report="", failing=[])
    _validate(s, repo, there, r.onto, how)
    row.furthest_onto, row.furthest_head, row.furthest_validate = r.onto, r.head, there.validate
    row.furthest_passed = there.passed
    row.report = there.report


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
_MAX_NAME = 200  # bytes; file systems allow 255


def artifact_name(series: str, target: str) -> str:
    """The file of a cell's report: `NAME--TARGET.json`, the target (a ref such as
    `upstream/main` or `rel/1.2.0`) percent-encoded byte by byte outside [A-Za-z0-9._-], `%`
    included, so that two targets never share a file and no ref makes a folder. A name too
    long for a file system is `NAME--%sha256-HEX.json`: `%s` never starts an encoded byte."""
    encoded = "".join(chr(b) if chr(b) in _PLAIN else f"%{b:02X}"
                      for b in target.encode("utf-8", "surrogateescape"))
    name = f"{series}--{encoded}.json"
    if len(name) > _MAX_NAME:
        digest = hashlib.sha256(target.encode("utf-8", "surrogateescape")).hexdigest()
        name = f"{series}--%sha256-{digest}.json"
    return name


def run(root: Path, names: list[str], repo: Repo, targets: list[str], onto: list[str],
        how: Options, loop: LoopOptions | None = None) -> JobResult:
    """Every series onto every target; then the loop, if asked; then the summaries. With
    the dashboard, its boxes first: paused series are skipped, ticked cells retried."""
    from dataclasses import replace

    from carry.job import steer

    st = steer.read(root, loop) if loop is not None and loop.dashboard else None
    if st is not None:
        how = replace(how, paused=frozenset(st.paused), retry=frozenset(st.retry))
    result = _rows(root, names, repo, targets, onto, how, loop)
    return finish(root, repo, result, loop, st)


def _rows(root: Path, names: list[str], repo: Repo, targets: list[str], onto: list[str],
          how: Options, loop: LoopOptions | None) -> JobResult:
    from carry.job import loop as loopmod

    chosen = [seriesmod.find(root, n) for n in names] or seriesmod.list_series(root)
    chosen = [s for s in chosen if s.patches()]
    if not chosen:
        raise CarryError(f"no imported series in {root}", hint="run carry import first")
    for s in chosen:
        loopmod.check(s, loop or LoopOptions())
    how.out.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    for s in [s for s in chosen if s.name not in how.paused]:
        wanted = [t for t in targets if any(t == x.name for x in s.manifest.targets)]
        if targets and not wanted:
            continue  # none of the requested targets is one of this series'
        opts = rebase.Options(onto=onto, targets=wanted, fetch=how.fetch, dry_run=True)
        for r in rebase.run(s, repo, opts):
            row = Row(s.name, r.target, r.onto, r.status, r.head,
                      applied=sum(p.status == "applied" for p in r.patches),
                      dropped=[f"{p.file}: {p.reason}" for p in r.patches
                               if p.status == "dropped"], ref=r.ref, stop=r.conflict,
                      resolved=[f"{p.file}: {p.reason}" for p in r.patches if p.resolutions],
                      audit=[f.line for f in r.audit])
            if r.conflict is not None:
                row.conflict = f"{r.conflict.file} ({', '.join(r.conflict.paths)})"
                row.would_conflict = [f"{p.file} ({', '.join(p.forecast)})" for p in r.patches
                                      if p.status == "would-conflict"]
                row.why = r.why
                _furthest(s, repo, row, how)
            if r.status == "applied":
                _validate(s, repo, row, r.onto, how)  # a finding of the audit fails it too
            rows.append(row)
    stamp = _now()
    for row in rows:
        row.time = row.time or stamp
    if not rows and not how.paused:
        raise CarryError("no series has any of the targets " + ", ".join(targets))
    ok = all(r.rebase == "applied" and r.passed for r in rows)
    return JobResult(Status.PASSED if ok else Status.FAILED, rows, str(how.out))


def finish(root: Path, repo: Repo, result: JobResult, loop: LoopOptions | None,
           st: Steering | None = None) -> JobResult:
    """The loop (never on a paused series' rows), the dashboard (`st`), then the
    summaries."""
    from carry.job import loop as loopmod

    if loop is not None and loop.enabled:
        rows = [r for r in result.rows if st is None or r.series not in st.paused]
        result.loop = loopmod.run(root, repo, rows, loop)
        if any(a.action is Did.FAILED for a in result.loop):
            result.status = Status.FAILED
    extra = ""
    if st is not None and loop is not None:
        from carry.job import board, steer

        new = steer.update(st, root, repo, result.rows, result.loop, loop.open_limit, _now())
        result.dashboard = [steer.publish(st, new, loop.dry_run, _now())]
        extra = board.summary(new)
    out = Path(result.out)
    atomic.write_json(out / "summary.json", to_data(result), indent=2)
    md = markdown(result) + extra
    atomic.write_text(out / "summary.md", md)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        try:
            atomic.append_text(Path(step_summary), md)
        except (CarryError, OSError) as exc:  # the job's outcome stands; only the page is lost
            from carry.base.notes import warn

            warn(f"$GITHUB_STEP_SUMMARY not written: {exc}")
    return result


def markdown(result: JobResult) -> str:
    lines = [f"## carry: {result.status}", "",
             "| series | target | rebase | drops | validation |", "|---|---|---|---|---|"]
    for r in result.rows:
        rebase_cell = r.rebase if not r.conflict else f"conflict in {r.conflict}" + "".join(
            f"<br>would-conflict: {w}" for w in r.would_conflict) + "".join(
            f"<br>why: {w}" for w in tracking.why_lines(r.why))
        rebase_cell += f"<br>furthest: {furthest_line(r)}" if r.furthest else ""
        rebase_cell += "".join(f"<br>{x}" for x in r.resolved)
        rebase_cell += "".join(f"<br>audit: {x}" for x in r.audit)
        drops = "<br>".join(r.dropped) or "-"
        lines.append(f"| {r.series} | {r.target} | {rebase_cell} | {drops} | "
                     f"{r.validate}: {r.summary} |")
    if result.loop:
        lines += ["", "### Pull requests and tracking issues", ""]
        lines += [f"- {a.series} {a.target} ({a.ref}): {a.kind} {a.action}"
                  + (f" #{a.number}" if a.number else "") + (f": {a.note}" if a.note else "")
                  for a in result.loop]
    return "\n".join(lines) + "\n"


# -- one cell at a time: the matrix and its cells -------------------------------------------


@dataclass
class MatrixCell:
    """One cell of the matrix: a series on one of its targets, at a tag or branch."""

    series: str
    target: str  # the manifest target's name
    ref: str | None = None  # None: the target's own ref (a tag target needs one)
    flag: str = ""  # the dashboard's: --retry or --force, for `carry ci run`

    def data(self) -> dict[str, str]:
        """As the workflow's matrix holds it: `flag` only when there is one."""
        out = {"series": self.series, "target": self.target, "ref": self.ref or ""}
        return {**out, "flag": self.flag} if self.flag else out


def matrix(root: Path, repo: Repo, ledger_path: Path, force: bool,
           loop: LoopOptions | None = None) -> tuple[list[MatrixCell], list[str]]:
    """The cells (series, target, ref) the ledger does not hold yet, and one note per series
    that has nothing to run (no targets, or no patches). With the dashboard (read, never
    written here): a paused series has no cell, a ticked retry runs again past the ledger
    and the validation cache (`flag: --retry`), a cell whose PR or issue waits for room runs
    again past the ledger (`flag: --force`)."""
    from carry.job import ledger, releases, steer
    from carry.job.releases import Seen

    st = steer.read(root, loop) if loop is not None and loop.dashboard else None
    held = ledger.load(ledger_path)
    cells: list[MatrixCell] = []
    notes: list[str] = []
    for s in seriesmod.list_series(root):
        if not s.manifest.targets:
            notes.append(f"{s.name}: no targets in its manifest")
            continue
        if not s.patches():
            notes.append(f"{s.name}: no patches imported")
            continue
        if st is not None and s.name in st.paused:
            notes.append(f"{s.name}: paused on the dashboard")
            continue
        for r in releases.pending(s, repo, held, None):
            if r.status is Seen.PENDING or (force and r.status is Seen.VALIDATED):
                cells.append(MatrixCell(s.name, r.target, r.ref))
            elif r.status is Seen.MISSING:
                notes.append(f"{s.name}: target {r.target} ({r.ref}) is not in the repository")
    if st is not None:
        _steered(root, st, cells)
    return cells, notes


def _steered(root: Path, st: Steering, cells: list[MatrixCell]) -> None:
    """The dashboard's retries and waiting cells, on the ref it shows for them."""
    for c in sorted(st.board.cells, key=lambda c: c.key):
        flag = "--retry" if c.key in st.retry else "--force" if c.waiting else ""
        if not flag or c.series in st.paused:
            continue
        t = next((t for t in seriesmod.find(root, c.series).manifest.targets
                  if t.name == c.target), None)
        ref = c.ref or (t.ref if t else "")
        if not ref or ref.startswith("-"):
            continue  # a tag target never run: the plan lists its newest tag anyway
        same = [x for x in cells if (x.series, x.target, x.ref) == (*c.key, ref)]
        if not same:
            same = [MatrixCell(c.series, c.target, ref)]
            cells.extend(same)
        for x in same:
            x.flag = flag


def run_cell(root: Path, cell: MatrixCell, repo: Repo, how: Options, ledger_path: Path,
             force: bool, loop: LoopOptions | None = None) -> JobResult:
    """One cell: rebase onto the target's ref, validate, close the loop if asked, and append
    the outcome to the ledger. A cell the ledger already holds is skipped (exit 0, nothing
    sent) unless forced. The ledger is written last and only when the loop did all it was
    asked, so a PR or issue that failed is tried again by the next run; a dry run records
    nothing."""
    from carry.job import ledger

    name, target = cell.series, cell.target
    force = force or (name, target) in how.retry
    s = seriesmod.find(root, name)
    t = s.manifest.target(target)
    ref = cell.ref or t.ref
    if not ref:
        raise CarryError(f"target {target} of {name} names tags; pass the tag with --ref",
                         hint=f"carry ci matrix lists the cells, e.g. --ref {t.tags}")
    upstream = repo.rev_parse(ref)
    held = ledger.load(ledger_path).holds(name, target, upstream)
    if held is not None and not force:
        row = Row(name, target, ref, "skipped", held=held.outcome,
                  summary=f"validated at {held.time}; --force runs it again")
        return JobResult(Status.PASSED, [row], str(how.out))
    result = _rows(root, [name], repo, [], [ref], how, loop)
    for row in result.rows:
        row.target = target
    finish(root, repo, result, loop)
    if (loop and loop.dry_run) or any(a.action in (Did.FAILED, Did.WAITING) for a in result.loop):
        return result  # run again by the next run: its PR or issue is still to do
    for row in result.rows:
        tree = repo.rev_parse(row.head, "tree") if row.head else ""
        ledger.append(ledger_path, ledger.Record(
            name, s.manifest.version, target, ref, upstream, tree, _plan_hash(s),
            s.manifest.test.image.partition("@")[2], _outcome(row), _now()))
    return result


def loop_from(root: Path, repo: Repo, summaries: list[Path], out: Path,
              loop: LoopOptions | None) -> JobResult:
    """The loop over results the matrix cells wrote (their `summary.json`), for the one job
    that may write to GitHub: cells validate with read-only tokens, this job acts on them."""
    from carry.job import loop as loopmod
    from carry.job import steer

    if loop is None or not loop.enabled:
        raise CarryError("carry ci loop has nothing to do", hint="pass --open-pr, "
                         "--track-issues, --dashboard or several")
    if not summaries and not loop.dashboard:
        raise CarryError("carry ci loop needs the cells' summary.json files",
                         hint="only --dashboard runs without any")
    rows = [row for path in summaries for row in _read_rows(path)]
    for name in sorted({r.series for r in rows}):
        loopmod.check(seriesmod.find(root, name), loop)
    st = steer.read(root, loop) if loop.dashboard else None
    out.mkdir(parents=True, exist_ok=True)
    return finish(root, repo, JobResult(Status.PASSED, rows, str(out)), loop, st)


def _read_rows(path: Path) -> list[Row]:
    """A cell's rows; its validation report sits beside its summary wherever the artifact
    was unpacked."""
    try:
        data = untrusted.read_json(path, dict)  # a FIFO, a link, 3,000 nested lists: refused
        if not isinstance(data.get("rows"), list):
            raise untrusted.BadData("'rows' is not a list")
        rows = [Row.from_data(raw, f"rows[{i}]") for i, raw in enumerate(data["rows"])]
    except ValueError as exc:
        raise CarryError(f"{path} is not a carry ci summary.json: {exc}") from None
    for row in rows:
        if row.report:
            row.report = str(path.parent / Path(row.report).name)
    return rows


def _outcome(row: Row) -> str:
    if row.rebase != "applied":
        return row.rebase
    if row.passed:
        return Check.PASSED
    return Check.ERROR if row.check is Check.ERROR and not row.audit_failed else Check.FAILED


def _plan_hash(s: seriesmod.Series) -> str:
    from dataclasses import asdict

    plan = json.dumps(asdict(s.manifest.test), sort_keys=True).encode()
    return hashlib.sha256(plan).hexdigest()[:16]


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
