"""`carry validate`: parse, call, print; the work is in `carry.validate`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from carry.cli.app import (
    Engine,
    Json,
    Name,
    Python,
    RepoPath,
    SeriesDir,
    _repo,
    _root,
    app,
)


@app.command()
def validate(
    name: Name,
    repo: RepoPath = None,
    onto: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="Build the series on this commit, branch or tag, then validate the result.")] = None,
    commit: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="Validate this commit, whose last N commits are the series; BASE..C when C "
             "holds more than the series.")] = None,
    engine: Engine = "podman",
    python: Python = None,
    baseline: Annotated[bool, typer.Option(
        "--baseline",
        help="Also run the series' tests on the unfixed base: they must fail there.")] = False,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", help="Run even if this exact input was validated before.")] = False,
    allow_no_tests: Annotated[bool, typer.Option(
        "--allow-no-tests", help="Pass a plan that names no pytest suites.")] = False,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Run the test plan: pytest suites, hooks, diff check.

    Exit 0 when everything passed, 1 when something failed, 2 on bad input.

    Example: carry validate my-fix --repo ../vllm --onto upstream/main --engine local --baseline
    """
    from carry.cli import render, reports
    from carry.git import Repo
    from carry.series import store as series
    from carry.validate import run as validate_run

    root = _root(series_dir)
    found = series.find(root, name)
    report = validate_run.run(found, Repo.open(_repo(repo, root, name)), validate_run.Request(
        onto=onto, commit=commit, engine=engine, python=python, baseline=baseline,
        use_cache=not no_cache, progress=None if json else render.progress("validating"),
        allow_no_tests=allow_no_tests))
    reports.show_validate(report, json)
    raise typer.Exit(report.exit_code)
