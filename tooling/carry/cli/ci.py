"""`carry ci` (the CI job, whole or split into matrix cells) and `carry releases`: parse,
call, print. They register on `cli.app`; `cli.main` imports this module so that they appear in
`carry --help`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from carry.cli.app import (
    ApiUrl,
    Engine,
    Json,
    MaxWait,
    Name,
    Python,
    RepoPath,
    SeriesDir,
    TokenEnv,
    _remote,
    _repo,
    _root,
    app,
    grouped,
)
from carry.job.ledger import DEFAULT as LEDGER
from carry.publish.github import DEFAULT_MAX_WAIT as MAX_WAIT

if TYPE_CHECKING:
    from carry.job.cells import Options as JobOptions
    from carry.job.shared import Options as LoopOptions
else:
    JobOptions = LoopOptions = object  # imported when a command runs (cli.grouped)

ci_app = typer.Typer()
app.add_typer(ci_app, name="ci")
Ledger = Annotated[Path, typer.Option(
    "--ledger", envvar="CARRY_LEDGER", help="The file of what was validated (ci/README.md).")]
Fetch = Annotated[bool, typer.Option(help="Fetch the manifest's remotes first.")]
Out = Annotated[Path, typer.Option(help="Where summary.json and summary.md go.")]
OpenPr = Annotated[bool, typer.Option(
    "--open-pr", help="On a clean release or dev target: refresh, push, open or update the "
                      "series' PR.")]
TrackIssues = Annotated[bool, typer.Option(
    "--track-issues", help="On a conflict: open or update one issue per (series, target); a "
                           "later clean run closes it.")]
LoopDryRun = Annotated[bool, typer.Option(
    "--dry-run", help="Say what --open-pr/--track-issues would do; write nothing.")]
LoopRepo = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--forge-repo", help="owner/name for PRs and issues (default: the manifest's fork).")]
PrBase = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--base", help="The PR's base branch (default: the fork's branch, else main).")]
Remote = Annotated[Optional[str], typer.Option(  # noqa: UP045
    callback=_remote,
    help="The git remote for the refreshed branch (default: the fork's remote, else origin).")]
OpenLimit = Annotated[int, typer.Option(
    "--open-limit", min=0, metavar="N",
    help="Open at most N PRs and issues in this run; the rest wait for a later run (0: no "
         "limit; a manifest's [ci].open_limit bounds its series too).")]
Dashboard = Annotated[bool, typer.Option(
    "--dashboard", help="Keep one dashboard issue of every series and target; its boxes "
                        "retry a cell or pause a series (ci/README.md).")]


def _job_flags(
    engine: Engine = "podman",
    python: Python = None,
    fetch: Fetch = False,
    out: Out = Path("carry-out"),
) -> JobOptions:
    """How a job runs, declared once for `carry ci` and `carry ci run` (see cli.grouped)."""
    from carry.job import cells

    return cells.Options(engine=engine, python=python, fetch=fetch, out=out)


def _loop_flags(
    open_pr: OpenPr = False,
    track_issues: TrackIssues = False,
    dry_run: LoopDryRun = False,
    forge_repo: LoopRepo = None,
    base: PrBase = None,
    remote: Remote = None,
    api_url: ApiUrl = None,
    token_env: TokenEnv = None,
    max_wait: MaxWait = MAX_WAIT,
    open_limit: OpenLimit = 0,
) -> LoopOptions:
    """The loop's flags, declared once for `carry ci`, `carry ci run` and `carry ci loop`."""
    from carry.base import redact
    from carry.job import shared as loop

    if token_env:
        redact.register_env(token_env)  # masked, and kept from the target's code
    return loop.Options(open_pr=open_pr, track_issues=track_issues, dry_run=dry_run,
                        forge_repo=forge_repo, base=base, remote=remote, api_url=api_url,
                        token_env=token_env, max_wait=max_wait, open_limit=open_limit)


@ci_app.callback(invoke_without_command=True)
@grouped("job", _job_flags)
@grouped("loop", _loop_flags)
def ci_job(
    ctx: typer.Context,
    *,
    repo: RepoPath = None,
    names: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--series", help="A series to check; repeat. Default: every imported series.")] = None,
    target: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="A manifest target name; repeat. Default: every target.")] = None,
    onto: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="Check against this ref instead of the manifest targets; repeat.")] = None,
    job: JobOptions,
    loop: LoopOptions,
    dashboard: Dashboard = False,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """The CI job: rebase and validate every series.

    Every series onto every target; writes summary.json and summary.md to --out. The
    subcommands split it for a GitHub Actions matrix.

    Example: carry ci --repo ../vllm --engine local --out carry-out
    """
    if ctx.invoked_subcommand:
        return
    from carry.cli import reports
    from carry.git import Repo
    from carry.job import cells

    root = _root(series_dir)
    result = cells.run(root, names or [], Repo.open(_repo(repo, root, *(names or []))),
                        target or [], onto or [], job, _with_dashboard(loop, dashboard))
    reports.show_job(result, json)
    raise typer.Exit(result.exit_code)


def _with_dashboard(loop: LoopOptions, dashboard: bool) -> LoopOptions:
    from dataclasses import replace

    return replace(loop, dashboard=dashboard) if dashboard else loop


@ci_app.command("matrix")
def ci_matrix(
    repo: RepoPath = None,
    ledger: Ledger = LEDGER,
    force: Annotated[bool, typer.Option(help="List cells the ledger holds too.")] = False,
    dashboard: Annotated[bool, typer.Option(
        "--dashboard", help="Read the dashboard's boxes (never writes): skip paused series, "
                            "add ticked retries.")] = False,
    forge_repo: LoopRepo = None,
    api_url: ApiUrl = None,
    token_env: TokenEnv = None,
    max_wait: MaxWait = MAX_WAIT,
    series_dir: SeriesDir = None,
) -> None:
    """Print the GitHub Actions matrix of pending cells.

    One cell per series and target ref that the ledger does not hold yet.

    Example: carry ci matrix --repo ../vllm --ledger carry-ledger.json
    """
    from carry.base import redact
    from carry.cli import views
    from carry.git import Repo
    from carry.job import cells
    from carry.job import shared as loop

    if token_env:
        redact.register_env(token_env)  # masked, and kept from the target's code
    root = _root(series_dir)
    board = loop.Options(forge_repo=forge_repo, api_url=api_url, token_env=token_env,
                         max_wait=max_wait, dashboard=True) if dashboard else None
    found, notes = cells.matrix(root, Repo.open(_repo(repo, root)), ledger, force, board)
    views.show_matrix([c.data() for c in found], notes)


@ci_app.command("run")
@grouped("job", _job_flags)
@grouped("loop", _loop_flags)
def ci_run(
    name: Name,
    target_name: Annotated[str, typer.Argument(metavar="TARGET", help="A manifest target.")],
    repo: RepoPath = None,
    ref: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="The tag or branch the cell checks (a tag target needs it).")] = None,
    ledger: Ledger = LEDGER,
    force: Annotated[bool, typer.Option(help="Run even if the ledger holds it.")] = False,
    retry: Annotated[bool, typer.Option(
        help="Run again past the ledger and the validation cache (a dashboard retry).")
    ] = False,
    *,
    job: JobOptions,
    loop: LoopOptions,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Run one matrix cell and record it.

    Rebase onto the ref, validate, append the outcome to the ledger. With --open-pr and
    --track-issues, also refresh and open the series' PR, or track a conflict in an issue.

    Example: carry ci run mamba-sparse-retention upstream-release --ref v0.34.0 --repo ../vllm
    --open-pr --track-issues
    """
    from dataclasses import replace

    from carry.cli import reports
    from carry.git import Repo
    from carry.job import cells

    if retry:
        job = replace(job, retry=frozenset({(name, target_name)}))
    root = _root(series_dir)
    result = cells.run_cell(root, cells.MatrixCell(name, target_name, ref),
                            Repo.open(_repo(repo, root, name)), job, ledger, force, loop)
    reports.show_job(result, json)
    raise typer.Exit(result.exit_code)


@ci_app.command("loop")
@grouped("loop", _loop_flags)
def ci_loop(
    summaries: Annotated[Optional[list[Path]], typer.Argument(  # noqa: UP045
        help="summary.json files of the cells (none: only the dashboard).")] = None,
    repo: RepoPath = None,
    out: Out = Path("carry-out"),
    *,
    loop: LoopOptions,
    dashboard: Dashboard = False,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Open PRs and tracking issues for cells that already ran.

    For the workflow's one job with write access; the cells validate read-only.

    Example: carry ci loop cells/*/carry-out/summary.json --repo ../vllm --open-pr --track-issues
    """
    from carry.cli import reports
    from carry.git import Repo
    from carry.job import cells

    root = _root(series_dir)
    result = cells.loop_from(root, Repo.open(_repo(repo, root)), summaries or [], out,
                           _with_dashboard(loop, dashboard))
    reports.show_job(result, json)
    raise typer.Exit(result.exit_code)


@ci_app.command("merge-ledger")
def ci_merge_ledger(
    others: Annotated[list[Path], typer.Argument(help="Ledgers written by matrix cells.")],
    ledger: Ledger = LEDGER,
) -> None:
    """Fold the cells' ledgers into one.

    Example: carry ci merge-ledger --ledger carry-ledger.json cells/*/carry-ledger.json
    """
    from carry.cli import render
    from carry.job import ledger as ledgermod

    render.say(f"{ledgermod.merge(ledger, others)} new record(s) in {ledger}")


@app.command()
def releases(
    name: Name,
    repo: RepoPath = None,
    index_url: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="PEP 691 index (default: PIP_INDEX_URL, then pip's configuration).")] = None,
    package: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="The package on the index (default: the manifest's [upstream].package).")] = None,
    since: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="Only versions after this one (default: after the last validated).")] = None,
    ledger: Ledger = LEDGER,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Releases and branch heads not validated yet.

    Oldest first: every tag since the last validated, index releases (yanked ones marked,
    those whose tag is not fetched yet as waiting), and each dev branch head.

    Example: carry releases mamba-sparse-retention --repo ../vllm --json
    """
    from carry.cli import views
    from carry.git import Repo
    from carry.job import releases as rel
    from carry.series import store as series

    root = _root(series_dir)
    s = series.find(root, name)
    git_repo = Repo.open(_repo(repo, root, name))
    views.show_releases(rel.run(s, git_repo, ledger, index_url, package, since), json)


