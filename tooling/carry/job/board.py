"""The dashboard issue's text: a table of every series on every target, one box per cell to
retry it and one per series to pause it, and carry's own record of the table in a hidden
line, all rendered and parsed here (nothing here talks to GitHub: steer.py does).

Everything is parsed by markers on lines of their own, never searched for in prose: the
issue by `<!-- carry:dashboard v=1 -->` on a line of its own (carry writes it first; a reader
may move it), each box by the marker that ends its line
(`<!-- carry:box retry series=S target=T -->`), and the record by
`<!-- carry:dashboard-data {...} -->`. A box line someone adds by hand is not one carry
rendered, and steer.py counts only those. The text holds nothing that changes between two
runs that found nothing new, so such a run sends no edit.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from urllib.parse import quote, unquote

from carry.publish.text import inert

MARK = "<!-- carry:dashboard "
TITLE = "carry: dashboard of the carried series"
_HEAD = re.compile(r"^<!-- carry:dashboard((?: [a-z]+=\S*)*) -->$", re.M)
_BOX = re.compile(
    r"^- \[([ xX])\] [^\n]*?<!-- carry:box (retry|pause)((?: [a-z]+=\S*)+) -->[ \t]*$", re.M)
_DATA = re.compile(r"^<!-- carry:dashboard-data (\{.*\}) -->$", re.M)
_SAFE = "@/._+-"
Key = tuple[str, str, str]  # ("retry", series, target) | ("pause", series, "")


@dataclass
class Cell:
    """One series on one target, as the CI job last saw it."""

    series: str
    target: str
    ref: str = ""  # the tag or branch validated last
    upstream: str = ""  # the commit it resolved to
    time: str = ""  # when it got this state (ISO 8601, UTC)
    state: str = "not run yet"  # validated | conflict | tests failing | error | ...
    details: list[str] = field(default_factory=list)  # root conflicts, failing tests
    issue: int = 0  # its open tracking issue (a conflict or failing tests)
    waiting: str = ""  # a PR or issue this run's limit held back to the next run
    pending: list[str] = field(default_factory=list)  # "0.35.0 waiting for the tag", "yanked"

    @property
    def key(self) -> tuple[str, str]:
        return self.series, self.target


@dataclass
class Board:
    repo: str  # owner/name the dashboard lives in
    cells: list[Cell] = field(default_factory=list)
    prs: dict[str, int] = field(default_factory=dict)  # series -> its open PR
    retry: set[tuple[str, str]] = field(default_factory=set)  # accepted, not yet run
    paused: set[str] = field(default_factory=set)
    last_run: str = ""  # the last run that changed anything here
    ignored: list[str] = field(default_factory=list)  # the latest edits that did not count
    open_limit: int = 0  # shown with the waiting cells

    def cell(self, series: str, target: str) -> Cell | None:
        return next((c for c in self.cells if c.key == (series, target)), None)

    def boxes(self) -> dict[Key, bool]:
        """Every box the dashboard renders, and whether it is ticked."""
        out: dict[Key, bool] = {}
        for c in self.cells:
            out[("retry", c.series, c.target)] = c.key in self.retry
        for name in sorted({c.series for c in self.cells}):
            out[("pause", name, "")] = name in self.paused
        return out


def is_dashboard(body: str) -> bool:
    """The marker on a line of its own, wherever a reader moved it (GitHub's web editor
    saves CRLF): carry opened the issue with it, and `owned` says whether carry did."""
    return _HEAD.search(body.replace("\r\n", "\n")) is not None


def boxes(body: str) -> dict[Key, bool]:
    """The boxes of a body, by their markers; a box line without a well-formed marker is
    not a box, and a marker on two lines names neither (which one would count?)."""
    out: dict[Key, bool] = {}
    twice: set[Key] = set()
    for m in _BOX.finditer(body.replace("\r\n", "\n")):
        f = dict(kv.split("=", 1) for kv in m.group(3).split())
        series, target = unquote(f.get("series", "")), unquote(f.get("target", ""))
        if series and (target or m.group(2) == "pause"):
            key = (m.group(2), series, target if m.group(2) == "retry" else "")
            if key in out:
                twice.add(key)
            out[key] = m.group(1) != " "
    return {k: v for k, v in out.items() if k not in twice}


def apply(board: Board, ticked: dict[Key, bool]) -> None:
    """Take box states as the board's retry and pause sets."""
    for (kind, series, target), on in ticked.items():
        if kind == "retry":
            (board.retry.add if on else board.retry.discard)((series, target))
        else:
            (board.paused.add if on else board.paused.discard)(series)


def parse(repo: str, body: str) -> Board:
    """The board carry wrote: its record, and its boxes. Anything malformed in the record is
    left out (the next run fills the cell again), never an error."""
    board = Board(repo)
    m = _DATA.search(body.replace("\r\n", "\n"))
    try:
        data = json.loads(m.group(1)) if m else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    names = {f.name: f.type for f in fields(Cell)}
    for raw in data.get("cells", []) if isinstance(data.get("cells"), list) else []:
        if isinstance(raw, dict) and all(k in names for k in raw):
            try:
                cell = Cell(**raw)
            except TypeError:
                continue
            if _typed(cell):
                board.cells.append(cell)
    prs = data.get("prs")
    if isinstance(prs, dict):
        board.prs = {k: v for k, v in prs.items() if isinstance(v, int) and v > 0}
    board.last_run = str(data.get("last_run", "") or "")
    ignored = data.get("ignored")
    board.ignored = [str(x) for x in ignored][-3:] if isinstance(ignored, list) else []
    apply(board, {k: v for k, v in boxes(body).items() if k in board.boxes()})
    return board


def _typed(c: Cell) -> bool:
    strs = (c.series, c.target, c.ref, c.upstream, c.time, c.state, c.waiting)
    return (all(isinstance(x, str) for x in strs) and isinstance(c.issue, int)
            and all(isinstance(x, list) and all(isinstance(s, str) for s in x)
                    for x in (c.details, c.pending)))


# -- rendering -------------------------------------------------------------------------------


def when(stamp: str) -> str:
    """An ISO 8601 stamp as the table shows it: `2026-11-16 12:02 UTC`."""
    return f"{stamp[:10]} {stamp[11:16]} UTC" if len(stamp) >= 16 else stamp or "-"


def _md(text: str) -> str:
    """Safe inside a table cell: no pipe ends it, no newline breaks the row, no `<` opens a
    tag or a comment, no `@` mentions (an upstream subject is anyone's text)."""
    return inert(text)


def _code(text: str) -> str:
    return f"`{text}`" if text and "`" not in text else _md(text)


def table(board: Board) -> list[str]:
    """The table the issue and the job summary share."""
    lines = ["| series | target | validated last | state | PR | issue |",
             "| --- | --- | --- | --- | --- | --- |"]
    for c in sorted(board.cells, key=lambda c: c.key):
        ref = f"{_code(c.ref)} (`{c.upstream[:12]}`)" if c.upstream else _code(c.ref)
        last = f"{ref}, {when(c.time)}" if c.ref else "-"
        state = [_md(c.state), *(_md(d) for d in c.details), *(_md(p) for p in c.pending)]
        if c.series in board.paused:
            state.insert(0, "**paused**")
        if c.waiting:
            state.append(_md(f"waiting: {c.waiting}"))
        pr = f"#{board.prs[c.series]}" if c.series in board.prs else "-"
        issue = f"#{c.issue}" if c.issue else "-"
        lines.append(f"| {_code(c.series)} | {_code(c.target)} | {last} | "
                     f"{'<br>'.join(state)} | {pr} | {issue} |")
    return lines


def _box(kind: str, on: bool, label: str, **f: str) -> str:
    marks = " ".join(f"{k}={quote(v, safe=_SAFE)}" for k, v in f.items())
    return f"- [{'x' if on else ' '}] {label} <!-- carry:box {kind} {marks} -->"


def render(board: Board) -> str:
    cells = sorted(board.cells, key=lambda c: c.key)
    lines = [
        "<!-- carry:dashboard v=1 -->",
        f"The carried series of `{board.repo}`, each on each of its targets, as carry's CI "
        "job last saw them. Tick a box to steer the next run: only an edit by someone with "
        "write access to this repository counts.", "",
        f"Last run with news: {when(board.last_run)} (a run that finds nothing new leaves "
        "this issue alone).", "", *table(board)]
    waiting = [c for c in cells if c.waiting]
    if waiting:
        limit = f" (at most {board.open_limit} new PRs and issues per run)" \
            if board.open_limit else ""
        lines += ["", f"### Waiting for the next run{limit}", ""]
        lines += [f"- {_code(c.series)} on {_code(c.target)} ({_code(c.ref)}): {c.waiting}"
                  for c in waiting]
    lines += ["", "### Retry a cell on the next run, whatever the ledger holds", ""]
    lines += [_box("retry", c.key in board.retry, f"{_code(c.series)} on {_code(c.target)}",
                   series=c.series, target=c.target) for c in cells]
    lines += ["", "### Pause a series: it is skipped, its PR and issues left alone, until "
              "unticked", ""]
    lines += [_box("pause", name in board.paused, _code(name), series=name)
              for name in sorted({c.series for c in cells})]
    if board.ignored:
        lines += ["", "### Edits that did not count", "", *(f"- {x}" for x in board.ignored)]
    data = {"schema": 1, "cells": [asdict(c) for c in cells], "prs": board.prs,
            "last_run": board.last_run, "ignored": board.ignored}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    # never ends the comment, never a mention
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("@", "\\u0040")
    return "\n".join([*lines, "", f"<!-- carry:dashboard-data {text} -->"]) + "\n"


def summary(board: Board) -> str:
    """The table for `$GITHUB_STEP_SUMMARY`: what the issue shows, without its boxes."""
    paused = ", ".join(_code(n) for n in sorted(board.paused))
    retry = ", ".join(f"{_code(s)} on {_code(t)}" for s, t in sorted(board.retry))
    return "\n".join(["", "### Dashboard", "", *table(board),
                      *(["", f"Paused: {paused}."] if paused else []),
                      *(["", f"To retry: {retry}."] if retry else [])]) + "\n"

