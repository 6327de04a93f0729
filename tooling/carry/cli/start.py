"""`carry init` and `carry status`: the commands a new user starts with (parse, call, print).

They register on `cli.app`; `cli.main` imports this module so that both appear in `carry --help`.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from carry.base.errors import CarryError
from carry.cli.app import REPO_RULE, Json, Name, SeriesDir, _root, app


@app.command()
def init(
    name: Name,
    upstream: Annotated[str, typer.Option(help="Upstream on GitHub, OWNER/REPO.")],
    fork: Annotated[str, typer.Option(help="The fork that carries the series, OWNER/REPO.")],
    repo: Annotated[Optional[str], typer.Option(  # noqa: UP045
        envvar="CARRY_REPO", show_envvar=True, metavar="PATH",
        help="A local clone to read remotes, tags and branches from (default: the git "
             "checkout of the current directory when a remote of it points at --upstream "
             "or --fork; else none).")] = None,
    dev_branch: Annotated[str, typer.Option(
        "--dev-branch", help="The fork's integration branch (default: its newest dev/*).")] = "",
    base: Annotated[str, typer.Option(
        help="The ref the patches apply to (default: the fork's dev branch).")] = "",
    title: Annotated[str, typer.Option(help="A title (default: the name).")] = "",
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Start a series with a full manifest.

    The manifest has upstream, fork, base, targets, the policy and an empty test plan.

    Example: carry init my-fix --upstream vllm-project/vllm --fork me/vllm --repo ../vllm
    """
    from carry.cli import views
    from carry.cli.where import repo_path
    from carry.intake import init as initmod

    root = _root(series_dir)
    clone = repo_path(repo, root, needed=False, slugs=(upstream, fork))
    result = initmod.run(root, name, upstream, fork, clone, dev_branch, base, title)
    views.show_init(result, json)


@app.command()
def status(
    name: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        help="One series (default: every series).")] = None,
    repo: Annotated[Optional[str], typer.Option(  # noqa: UP045
        envvar="CARRY_REPO", show_envvar=True, metavar="PATH",
        help=f"The repository carry rebased and validated in ({REPO_RULE}; else none).")
    ] = None,
    prune: Annotated[bool, typer.Option(
        "--prune", help="Remove the recorded resolutions that no longer match (NAME only; "
        "writes the next version) and the per-tag branches a newer tag made obsolete, "
        "those carry wrote last.")] = False,
    series_dir: SeriesDir = None,
    json: Json = False,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="List every recorded resolution, and each branch whole.")
    ] = False,
) -> None:
    """Stopped rebases, branches, validation and resolutions.

    Stopped rebases with their worktree and next command, every branch of the series
    (carry/NAME and carry/NAME/...) with its tree, and the last validation with the
    branches whose tree it is; each recorded resolution, and whether a replay can still use
    it (with --repo, checked against its patch). --prune removes those that no longer
    match, and the per-tag branches a newer tag replaced that no one else moved.

    Example: carry status my-fix --repo ../vllm --prune
    """
    from contextlib import nullcontext

    from carry import status as statusmod
    from carry.cli import views
    from carry.cli.where import repo_path
    from carry.series import locks
    from carry.series import store as series

    root = _root(series_dir)
    if prune and not name:
        known = [s.name for s in series.list_series(root)]
        if not known:
            raise CarryError(f"no series in {root}", hint=series.where_hint(root))
        raise CarryError("--prune writes one series' next version; give its NAME",
                         hint=f"carry status {known[0]} --prune" if len(known) == 1 else
                         f"carry status NAME --prune (series: {', '.join(known)})")
    with locks.series_lock(root, name) if prune and name else nullcontext():
        chosen = [series.find(root, name)] if name else series.list_series(root)
        if not chosen:
            raise CarryError(f"no series in {root}", hint=series.where_hint(root))
        where = repo_path(repo, root, [name] if name else [], needed=False)
        views.show_status(statusmod.run(chosen, where, prune), json, verbose)
