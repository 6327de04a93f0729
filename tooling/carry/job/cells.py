"""`carry ci`: the CI job. Every series against every target it names (upstream main, the
newest release tags, the fork's dev branch): rebase without writing a ref, then validate the
result. It writes `summary.json` and `summary.md` (also appended to `$GITHUB_STEP_SUMMARY`
when GitHub Actions sets it) and fails when any target conflicts or fails its tests.

Validation results are cached by tree, plan and image, so a nightly run against releases that
did not move starts no container.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from carry.base.data import to_data
from carry.base.errors import CarryError
from carry.git import Repo
from carry.job import tracking
from carry.job.loop import Options as LoopOptions
from carry.rebase import command as rebase
from carry.replay.engine import Conflict
from carry.series import store as seriesmod


@dataclass(frozen=True, kw_only=True)
class Options:
    """How a job validates and where it writes (the flags `carry ci` and `carry ci run`
    share)."""

    engine: str = "podman"
    python: str | None = None  # default: the plan's [test].python
    fetch: bool = False
    out: Path = Path("carry-out")


@dataclass
class Row:
    series: str
    target: str
    onto: str
    rebase: str  # applied | conflict | failed
    head: str = ""
    applied: int = 0
    dropped: list[str] = field(default_factory=list)
    conflict: str = ""
    validate: str = "not run"  # passed | failed | cached passed | error | not run
    summary: str = ""
    report: str = ""
    ref: str = ""  # the tag or branch `onto` resolved from
    stop: Conflict | None = None  # the patch, author and paths of a conflict
    would_conflict: list[str] = field(default_factory=list)  # later patches, with their paths
    resolved: list[str] = field(default_factory=list)  # "FILE: why", by recorded resolutions
    why: list[dict[str, Any]] = field(default_factory=list)  # replay.why.explain: roots first


@dataclass
class JobResult:
    status: str  # passed | failed
    rows: list[Row]
    out: str
    loop: list[Any] = field(default_factory=list)  # loop.Action: PRs and issues (opt-in)

    @property
    def exit_code(self) -> int:
        return 0 if self.status == "passed" else 1


def _validate(s: seriesmod.Series, repo: Repo, row: Row, onto: str, how: Options) -> None:
    from carry.validate import run as validate

    try:
        # The rebased head on its target, which may hold fewer commits than the series.
        report = validate.run(s, repo, None, f"{onto}..{row.head}", engine_name=how.engine,
                              python=how.python)
    except CarryError as exc:
        row.validate, row.summary = "error", exc.line()
        return
    path = how.out / f"{s.name}--{row.target}.json"
    path.write_text(json.dumps(to_data(report), indent=2) + "\n", encoding="utf-8")
    row.report = str(path)
    row.validate = ("cached " if report.cached else "") + report.status
    row.summary = report.summary


def run(root: Path, names: list[str], repo: Repo, targets: list[str], onto: list[str],
        how: Options, loop: LoopOptions | None = None) -> JobResult:
    """Every series onto every target; then the loop, if asked; then the summaries."""
    result = _rows(root, names, repo, targets, onto, how, loop)
    return finish(root, repo, result, loop)


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
    for s in chosen:
        wanted = [t for t in targets if any(t == x.name for x in s.manifest.targets)]
        if targets and not wanted:
            continue  # none of the requested targets is one of this series'
        opts = rebase.Options(onto=onto, targets=wanted, fetch=how.fetch, dry_run=True)
        for r in rebase.run(s, repo, opts):
            row = Row(s.name, r.target, r.onto, r.status, r.head,
                      applied=sum(p.status == "applied" for p in r.patches),
                      dropped=[f"{p.file}: {p.reason}" for p in r.patches
                               if p.status == "dropped"], ref=r.ref, stop=r.conflict,
                      resolved=[f"{p.file}: {p.reason}" for p in r.patches if p.resolutions])
            if r.conflict is not None:
                row.conflict = f"{r.conflict.file} ({', '.join(r.conflict.paths)})"
                row.would_conflict = [f"{p.file} ({', '.join(p.forecast)})" for p in r.patches
                                      if p.status == "would-conflict"]
                row.why = r.why
            if r.status == "applied":
                _validate(s, repo, row, r.onto, how)
            rows.append(row)
    if not rows:
        raise CarryError("no series has any of the targets " + ", ".join(targets))
    ok = all(r.rebase == "applied" and r.validate.endswith("passed") for r in rows)
    return JobResult("passed" if ok else "failed", rows, str(how.out))


def finish(root: Path, repo: Repo, result: JobResult, loop: LoopOptions | None) -> JobResult:
    from carry.job import loop as loopmod

    if loop is not None and loop.enabled:
        result.loop = loopmod.run(root, repo, result.rows, loop)
        if any(a.action == "failed" for a in result.loop):
            result.status = "failed"
    out = Path(result.out)
    (out / "summary.json").write_text(json.dumps(to_data(result), indent=2) + "\n",
                                      encoding="utf-8")
    md = markdown(result)
    (out / "summary.md").write_text(md, encoding="utf-8")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as fh:
            fh.write(md)
    return result


def markdown(result: JobResult) -> str:
    lines = [f"## carry: {result.status}", "",
             "| series | target | rebase | drops | validation |", "|---|---|---|---|---|"]
    for r in result.rows:
        rebase_cell = r.rebase if not r.conflict else f"conflict in {r.conflict}" + "".join(
            f"<br>would-conflict: {w}" for w in r.would_conflict) + "".join(
            f"<br>why: {w}" for w in tracking.why_lines(r.why))
        rebase_cell += "".join(f"<br>{x}" for x in r.resolved)
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


def matrix(root: Path, repo: Repo, ledger_path: Path, force: bool) -> tuple[
        list[dict[str, str]], list[str]]:
    """The cells (series, target, ref) the ledger does not hold yet, and one note per series
    that has nothing to run (no targets, or no patches)."""
    from carry.job import ledger, releases

    held = ledger.load(ledger_path)
    cells: list[dict[str, str]] = []
    notes: list[str] = []
    for s in seriesmod.list_series(root):
        if not s.manifest.targets:
            notes.append(f"{s.name}: no targets in its manifest")
            continue
        if not s.patches():
            notes.append(f"{s.name}: no patches imported")
            continue
        for r in releases.pending(s, repo, held, None):
            if r.status == "pending" or (force and r.status == "validated"):
                cells.append({"series": s.name, "target": r.target, "ref": r.ref})
            elif r.status == "missing":
                notes.append(f"{s.name}: target {r.target} ({r.ref}) is not in the repository")
    return cells, notes


def run_cell(root: Path, name: str, target: str, ref: str | None, repo: Repo,
             how: Options, ledger_path: Path, force: bool,
             loop: LoopOptions | None = None) -> JobResult:
    """One cell: rebase onto the target's ref, validate, close the loop if asked, and append
    the outcome to the ledger. A cell the ledger already holds is skipped (exit 0, nothing
    sent) unless forced. The ledger is written last and only when the loop did all it was
    asked, so a PR or issue that failed is tried again by the next run; a dry run records
    nothing."""
    from carry.job import ledger

    s = seriesmod.find(root, name)
    t = s.manifest.target(target)
    ref = ref or t.ref
    if not ref:
        raise CarryError(f"target {target} of {name} names tags; pass the tag with --ref",
                         hint=f"carry ci matrix lists the cells, e.g. --ref {t.tags}")
    upstream = repo.rev_parse(ref)
    held = ledger.load(ledger_path).holds(name, target, upstream)
    if held is not None and not force:
        row = Row(name, target, ref, "skipped", validate=f"ledger: {held.outcome}",
                  summary=f"validated at {held.time}; --force runs it again")
        return JobResult("passed", [row], str(how.out))
    result = _rows(root, [name], repo, [], [ref], how, loop)
    for row in result.rows:
        row.target = target
    finish(root, repo, result, loop)
    if (loop and loop.dry_run) or any(a.action == "failed" for a in result.loop):
        return result
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

    if loop is None or not loop.enabled:
        raise CarryError("carry ci loop has nothing to do", hint="pass --open-pr, "
                         "--track-issues or both")
    rows = [row for path in summaries for row in _read_rows(path)]
    for name in sorted({r.series for r in rows}):
        loopmod.check(seriesmod.find(root, name), loop)
    out.mkdir(parents=True, exist_ok=True)
    return finish(root, repo, JobResult("passed", rows, str(out)), loop)


def _read_rows(path: Path) -> list[Row]:
    """A cell's rows; its validation report sits beside its summary wherever the artifact
    was unpacked."""
    from dataclasses import fields

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = []
        for raw in data["rows"]:
            row = Row(**{f.name: raw[f.name] for f in fields(Row) if f.name in raw})
            row.stop = Conflict(**raw["stop"]) if raw.get("stop") else None
            if row.report:
                row.report = str(path.parent / Path(row.report).name)
            rows.append(row)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CarryError(f"{path} is not a carry ci summary.json: {exc}") from None
    return rows


def _outcome(row: Row) -> str:
    if row.rebase != "applied":
        return row.rebase
    return "passed" if row.validate.endswith("passed") else (
        "error" if row.validate == "error" else "failed")


def _plan_hash(s: seriesmod.Series) -> str:
    import hashlib
    from dataclasses import asdict

    plan = json.dumps(asdict(s.manifest.test), sort_keys=True).encode()
    return hashlib.sha256(plan).hexdigest()[:16]


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
