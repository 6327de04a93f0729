"""The dashboard on GitHub: found, its boxes read back with who ticked them, and edited only
when its text changed.

Who may steer. A box counts only when someone with write access to the repository ticked
it. GitHub's REST API does not say who edited an issue's body (its events and timeline have
no such event), so carry reads the body's history from GraphQL (`userContentEdits`: each
revision, its editor and its text) and asks REST for each editor's permission
(`GET /repos/{owner}/{repo}/collaborators/{user}/permission`). It starts from its own last
revision (what it rendered, so only boxes it rendered count) and walks the later ones in
order: a box that one of them changed counts when that revision's editor can push, and is
put back otherwise. So a tick by someone without write access never counts, even when a
maintainer edits the issue after it, and the record of the table is only ever read from
carry's own revision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carry.base import notes
from carry.base.errors import CarryError
from carry.job import board as boardmod
from carry.job.board import Board, Cell
from carry.job.shared import Action, Did, forge_repo, furthest_line
from carry.publish import github as forgemod
from carry.publish import owned, repository
from carry.replay.rerere import REVIEW
from carry.series import store as seriesmod

if TYPE_CHECKING:
    from carry.git import Repo
    from carry.job.shared import Options, Row


SHOWN = 10  # failing tests a cell lists: the rest are in its issue (300 would pass the limit)


@dataclass
class Steering:
    """The dashboard as this run found it: carry's last board with the accepted boxes."""

    repo: str
    board: Board
    issue: forgemod.IssueInfo | None = None
    forge: forgemod.Forge | None = field(default=None, repr=False)

    @property
    def paused(self) -> set[str]:
        return self.board.paused

    @property
    def retry(self) -> set[tuple[str, str]]:
        return self.board.retry


def repo_of(series: Sequence[seriesmod.Series], opts: Options) -> str:
    """The one repository the dashboard lives in: --forge-repo, else the series' fork."""
    found = sorted({forge_repo(s, opts) for s in series})
    if len(found) > 1:
        raise CarryError("--dashboard keeps one issue, but the series name several "
                         f"repositories: {', '.join(found)}", hint="pass --forge-repo OWNER/NAME")
    return found[0]


def read(root: Path, opts: Options) -> Steering:
    """Every imported series' repository must be the same one; then the dashboard's boxes."""
    chosen = [s for s in seriesmod.list_series(root) if s.patches()]
    if not chosen:
        raise CarryError(f"no imported series in {root}", hint="run carry import first")
    full = repo_of(chosen, opts)
    forge = opts.access.connect()
    return Steering(full, *_find(forge, full), forge)


def _find(forge: forgemod.Forge, full: str) -> tuple[Board, forgemod.IssueInfo | None]:
    mine = []
    for issue in repository.repo(forge, full).open_issues(boardmod.MARK):
        if not boardmod.is_dashboard(issue.body):
            continue
        if owned.issue_is_mine(forge, issue):
            mine.append(issue)
        else:
            owned.ignore_issue(forge, full, issue, "carry's dashboard marker")
    if not mine:
        return Board(full), None
    return _verified(forge, full, mine[0]), mine[0]


def _verified(forge: forgemod.Forge, full: str, issue: forgemod.IssueInfo) -> Board:
    """carry's own last revision, with each later box change that a writer made."""
    gh = repository.repo(forge, full)
    me = forge.me()
    edits = gh.body_edits(issue.number, me)
    if not edits:  # never edited: the body is the one carry opened the issue with
        return boardmod.parse(full, issue.body)
    ours = [i for i, e in enumerate(edits) if owned.same(e.editor, me)]
    if not ours:
        board = Board(full)
        board.ignored.append("the edit history holds no revision of carry's: every box and "
                             "the record were started afresh")
        return board
    base = edits[ours[-1]]
    board = boardmod.parse(full, base.body)
    rendered = board.boxes()
    later = [(e.editor, e.at, e.body) for e in edits[ours[-1] + 1:]]
    if (later[-1][2] if later else base.body) != issue.body:  # a revision the history lacks
        later.append(("", "", issue.body))
    before = {k: v for k, v in boardmod.boxes(base.body).items() if k in rendered}
    writers: dict[str, bool] = {}
    for editor, at, text in later:
        now = {k: v for k, v in boardmod.boxes(text).items() if k in rendered}
        changed = {k: v for k, v in now.items() if before.get(k) != v}
        if changed:
            if editor and editor not in writers:
                writers[editor] = gh.can_write(editor)
            if editor and writers[editor]:
                boardmod.apply(board, changed)
            else:
                who = f"`{editor}`" if editor else "an account GitHub no longer names"
                line = (f"{who} ({boardmod.when(at) if at else 'time unknown'}) has no write "
                        f"access to {full}: {len(changed)} box(es) put back")
                notes.warn(f"dashboard {full}#{issue.number}: {line}")
                board.ignored = [*board.ignored, line][-3:]
        before.update(now)
    return board


# -- this run's results onto the board --------------------------------------------------------


def update(st: Steering, root: Path, repo: Repo, rows: Sequence[Row],
           actions: Sequence[Action], limit: int, now: str) -> Board:
    """The next board: every series and target (`read` checked they share the repository),
    this run's rows and actions over what the board held; a retry that ran is unticked."""
    old = st.board
    new = Board(st.repo, prs=dict(old.prs), retry=set(old.retry), paused=set(old.paused),
                last_run=old.last_run, ignored=list(old.ignored), open_limit=limit)
    for s in seriesmod.list_series(root):
        if not s.patches():
            continue
        pending = _pending(s, repo)
        for t in s.manifest.targets:
            cell = old.cell(s.name, t.name) or Cell(s.name, t.name)
            cell.pending = pending.get(t.name, [])
            new.cells.append(cell)
    new.paused &= {c.series for c in new.cells}
    new.retry = {k for k in new.retry if new.cell(*k) is not None}
    for row in rows:
        ran = new.cell(row.series, row.target.split("@", 1)[0])
        if ran is None or row.series in new.paused or row.rebase == "skipped":
            continue  # a cell the ledger skipped keeps what the board knew of it
        _take(ran, row, ran.key in new.retry, now)
        new.retry.discard(ran.key)
        ran.waiting = ""
    for act in actions:
        _act(new, act)
    return new


def _take(cell: Cell, row: Row, retried: bool, now: str) -> None:
    state, details = _state(row)
    details += [furthest_line(row)] if getattr(row, "furthest_head", "") else []  # it moved
    details += [f"audit: {x}" for x in row.audit]  # clean is not correct (replay.audit)
    details += [x for x in row.resolved if x.endswith(REVIEW)]  # carry's own: to review
    same = (cell.ref, cell.upstream, cell.state, cell.details) == (
        row.ref or row.onto, row.onto, state, details)
    cell.ref, cell.upstream, cell.state, cell.details = row.ref or row.onto, row.onto, state, \
        details
    if not same or retried or not cell.time:
        cell.time = row.time or now


def _state(row: Row) -> tuple[str, list[str]]:
    """What a row says, in the words of the table: the root conflicts and what caused each
    (the replay's `why`, when it names them), the failing tests with their verdict."""
    if row.rebase == "conflict":
        why = [w for w in row.why if isinstance(w, dict)]
        roots = [w for w in why if not w.get("builds_on")]
        if roots:
            lines = [f"root {_root(w)}" for w in roots]
            more = len(why) - len(roots)
            built = "1 later patch builds" if more == 1 else f"{more} later patches build"
            return "conflict", lines + ([f"{built} on it"] if more else [])
        stop = row.stop
        where = f" ({', '.join(stop.paths)})" if stop is not None and stop.paths else ""
        return "conflict", [f"root `{stop.file if stop else row.conflict}`{where}"] + [
            f"would conflict: {w}" for w in row.would_conflict]
    if row.rebase != "applied":
        return row.rebase, [row.summary] if row.summary else []
    if row.passed:
        return "validated", []
    failing = row.failing
    if failing:
        shown = [f"`{f.test}`: {f.verdict}" for f in failing[:SHOWN]]
        rest = [f"{len(failing) - SHOWN} more in its issue"] if len(failing) > SHOWN else []
        return "tests failing", shown + rest
    return row.validation, [row.summary] if row.summary else []


def _root(w: dict[str, Any]) -> str:
    cause = w.get("cause") if isinstance(w.get("cause"), dict) else None
    name = f"`{w.get('file', '')}`"
    if not cause:
        return f"{name}: {w.get('text', '')}".rstrip(": ")
    pr = f" (#{cause['pr']})" if cause.get("pr") else ""
    where = f"{w['line']} commit" if w.get("line") else "upstream"
    return f"{name} since {where} `{str(cause.get('sha', ''))[:12]}` " \
           f"\"{cause.get('subject', '')}\"{pr}"


def _act(board: Board, act: Action) -> None:
    if act.kind == "pr" and act.number and act.action.kept:
        board.prs[act.series] = act.number
    cell = board.cell(act.series, act.target)
    if cell is None:
        return
    if act.action is Did.WAITING:
        cell.waiting = act.note
    elif act.kind == "issue" and act.number:
        if act.action.kept:
            cell.issue = act.number
        elif act.action is Did.CLOSED and cell.issue == act.number:
            cell.issue = 0


def _pending(s: seriesmod.Series, repo: Repo) -> dict[str, list[str]]:
    """Index releases the board shows beside a tag target: waiting for the tag, or yanked
    (only for a series that names its package, as `carry releases` does, with the ledger
    `$CARRY_LEDGER` names, as the workflow sets it)."""
    if not s.manifest.upstream.package:
        return {}
    import os

    from carry.job import releases

    ledger = Path(os.environ.get("CARRY_LEDGER") or "carry-ledger.json")
    try:
        found = releases.run(s, repo, ledger, None, None, None)
    except CarryError as exc:
        notes.warn(f"dashboard: the releases of {s.name} are not shown: {exc.line()}")
        return {}
    out: dict[str, list[str]] = {}
    for r in found:
        if r.status in (releases.Seen.WAITING, releases.Seen.YANKED):
            out.setdefault(r.target, []).append(f"{r.version or r.ref}: {r.status}")
    return out


# -- writing --------------------------------------------------------------------------------


def publish(st: Steering, new: Board, dry_run: bool, now: str) -> Action:
    """Open the dashboard, or edit it when its text changed; `last_run` moves only then."""
    text = boardmod.render(new)
    current = st.issue.body if st.issue else ""
    if st.issue is not None and (st.issue.title, current) == (boardmod.TITLE, text):
        return Action("", "", "", "dashboard", Did.UNCHANGED, st.issue.number, st.issue.url)
    new.last_run = now
    text = boardmod.render(new)
    forge = st.forge
    assert forge is not None
    if st.issue is None:
        if dry_run:
            return Action("", "", "", "dashboard", Did.WOULD_OPEN)
        made = repository.repo(forge, st.repo).create_issue(boardmod.TITLE, text)
        return Action("", "", "", "dashboard", Did.OPENED, made.number, made.url)
    if dry_run:
        return Action("", "", "", "dashboard", Did.WOULD_UPDATE, st.issue.number, st.issue.url)
    repository.repo(forge, st.repo).edit_issue(st.issue.number, title=boardmod.TITLE, body=text)
    return Action("", "", "", "dashboard", Did.UPDATED, st.issue.number, st.issue.url)
