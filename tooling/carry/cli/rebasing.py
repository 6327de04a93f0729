"""`carry rebase` once its command line is read, without typer: the typer command
(`cli.rebase`) hands its parameters here as `RebaseArgs`, and so does `quick`, a parse of
exactly the resume forms a conflict loop types (`carry rebase [NAME] --skip --repo PATH`...),
which `cli.main` tries first. Importing typer and building its command cost more than a
`--skip`'s own work; any other command line, or anything `quick` is not sure of, goes to
typer, so the two parses never differ (tests/test_skip_fast.py checks them argv by argv)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from carry.git import Repo
    from carry.series.store import Series


@dataclass(frozen=True)
class RebaseArgs:
    """`carry rebase`'s parameters as typer gives them to the command: a list option not
    given is None, --series-dir a Path."""

    name: str | None = None
    repo: str | None = None
    onto: list[str] | None = None
    target: list[str] | None = None
    branch: str | None = None
    refresh: bool = False
    fetch: bool = False
    dry_run: bool = False
    no_auto_resolve: bool = False
    furthest: bool = False
    force: bool = False
    continue_: bool = False
    resolve: bool = False
    skip: bool = False
    abort: bool = False
    quit_: bool = False
    show: bool = False
    series_dir: Path | None = None
    json: bool = False
    verbose: bool = False


def run(a: RebaseArgs) -> int:
    """Start or resume the rebase, print what came of it; the exit code."""
    from carry.cli.where import repo_path
    from carry.git import Repo
    from carry.rebase import action, resume
    from carry.rebase.flags import Options
    from carry.series import locks
    from carry.series import store as series

    act = action.Action.parse(continue_=a.continue_, skip=a.skip, abort=a.abort,
                              quit_=a.quit_, show=a.show, resolve=a.resolve)
    opts = Options(onto=a.onto or [], targets=a.target or [], branch=a.branch,
                   refresh=a.refresh, fetch=a.fetch, dry_run=a.dry_run, force=a.force,
                   target_names=True, auto_resolve=not a.no_auto_resolve,
                   furthest=a.furthest)
    root = series.series_dir(a.series_dir)
    where = repo_path(a.repo, root, [a.name] if a.name else [], resuming=act.resumes)
    assert where is not None  # needed: repo_path raises rather than give none
    at = resume.locate(Repo.open(where), a.series_dir, a.name, opts, act)
    with locks.for_rebase(at.root, at.name, at.repo, a.dry_run or not act.writes):
        loaded = series.find(at.root, at.name)
        outcome = action.run(loaded, at.repo, opts, act, at.which)
        if not a.dry_run and act in (action.Action.SKIP, action.Action.CONTINUE) and \
                _one_stop(outcome):  # not a rebase's first call: CI's, which never skips
            _skips_ahead(loaded, at.repo, at.root)
    if act in (action.Action.SHOW, action.Action.QUIT):
        from carry.cli import stops

        stops.show_stop(list(outcome), a.json)
    else:
        from carry.cli import reports

        reports.show_rebase(list(outcome), a.json, at.repo, str(at.root), a.verbose)
    return action.exit_code(outcome)


def _one_stop(outcome: object) -> bool:
    """Whether the rebase now waits at one conflict: the skips after it can be worked out."""
    from carry.replay.engine import TargetResult, TargetStatus

    results = list(outcome) if isinstance(outcome, list | tuple) else []
    return len(results) == 1 and isinstance(results[0], TargetResult) and \
        results[0].status == TargetStatus.CONFLICT and results[0].conflict is not None


def _skips_ahead(loaded: Series, repo: Repo, root: Path) -> None:
    """Work out the next `--skip`s (`rebase.skipmemo`), each printed as `run` prints it. The
    skip itself is done by now: a failure here costs only the next skips' speed, and never
    turns this one into an error ($CARRY_DEBUG shows it)."""
    import contextlib
    import io
    import os

    from carry.cli import reports
    from carry.rebase import skipmemo

    def printed(result: object) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            reports.show_rebase([result], False, repo, str(root), False)
        return out.getvalue()

    try:
        skipmemo.build(loaded, repo, root, printed)
    except Exception:  # noqa: BLE001 - see above
        if os.environ.get("CARRY_DEBUG"):
            raise


_VERBS = {"--continue": "continue_", "--resolve": "resolve", "--skip": "skip",
          "--abort": "abort", "--quit": "quit_", "--show-current-patch": "show"}
_FLAGS = {**_VERBS, "--json": "json", "--verbose": "verbose", "-v": "verbose",
          "--force": "force"}
_VALUES = {"--repo": "repo", "--series-dir": "series_dir"}
_LISTS = {"--target": "target", "--onto": "onto"}
_ENV = {"repo": "CARRY_REPO", "series_dir": "CARRY_SERIES_DIR"}  # as typer reads them


def quick(args: Sequence[str], environ: Mapping[str, str]) -> RebaseArgs | None:
    """`args` (argv after the program) read as typer reads them, when they are `rebase`, one
    resume verb, at most one NAME, and only the options above, each once, with its value as
    the next word (not `--opt=value`, not a value that starts with `-`); None for anything
    else, which typer then parses (and reports, when it is wrong)."""
    if not args or args[0] != "rebase" or any(k.endswith("_COMPLETE") for k in environ):
        return None  # (typer's shell completion is asked through `_..._COMPLETE`)
    kw: dict[str, object] = {}
    lists: dict[str, list[str]] = {}
    words = iter(args[1:])
    value: object
    for word in words:
        key = _FLAGS.get(word) or _VALUES.get(word) or _LISTS.get(word)
        if key is None:
            if word.startswith("-") or "name" in kw:
                return None
            key, value = "name", word
        elif word in _FLAGS:
            value = True
        else:
            given = next(words, "-")
            if given.startswith("-"):
                return None
            if word in _LISTS:
                lists.setdefault(key, []).append(given)
                continue
            value = given
        if key in kw:
            return None
        kw[key] = value
    if sum(1 for v in _VERBS.values() if v in kw) != 1:
        return None
    for key, var in _ENV.items():
        if key not in kw and environ.get(var):
            kw[key] = environ[var]
    if "series_dir" in kw:
        kw["series_dir"] = Path(str(kw["series_dir"]))
    return RebaseArgs(**kw, **lists)  # type: ignore[arg-type]
