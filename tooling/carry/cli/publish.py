"""`carry pr` and `carry supersede`, the commands that talk to GitHub: parse, call, print.

They register on `cli.app`; `cli.main` imports this module so that both appear in
`carry --help`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from carry.cli.app import (
    ApiUrl,
    ForgeRepo,
    Json,
    MaxWait,
    Name,
    RepoPath,
    SeriesDir,
    TokenEnv,
    _branch,
    _remote,
    _repo,
    _root,
    app,
    grouped,
)
from carry.publish.github import DEFAULT_MAX_WAIT

if TYPE_CHECKING:
    from carry.publish.github import Access
else:
    Access = object  # PyGithub is imported when a command runs (cli.grouped)

def _access(api_url: ApiUrl = None, token_env: TokenEnv = None,
            max_wait: MaxWait = DEFAULT_MAX_WAIT) -> Access:
    """How to reach GitHub, declared once for pr and supersede (see cli.grouped)."""
    from carry.base import redact
    from carry.publish.github import Access

    if token_env:
        redact.register_env(token_env)  # masked, and kept from the target's code
    return Access(api_url, token_env, max_wait)


@app.command()
@grouped("access", _access)
def pr(
    names: Annotated[list[str], typer.Argument(metavar="NAME...",
                                               help="One series, or several to consolidate.")],
    branch: Annotated[str, typer.Option(callback=_branch,
                                        help="The branch that carries the series.")],
    forge_repo: ForgeRepo,
    base: Annotated[str, typer.Option(help="The branch the PR targets.")],
    repo: RepoPath = None,
    remote: Annotated[Optional[str], typer.Option(  # noqa: UP045
        callback=_remote, help="The git remote to push to (default: the manifest's "
                               "[fork].remote, else origin).")] = None,
    validation: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="A `carry validate --json` report of this tree; once per series "
        "(default: each series' last validation of this tree).")] = None,
    allow_failed: Annotated[bool, typer.Option(
        "--allow-failed", help="Publish a failed validation (the body says it failed).")] = False,
    title: Annotated[Optional[str], typer.Option(help="PR title.")] = None,  # noqa: UP045
    draft: Annotated[bool, typer.Option("--draft/--ready", help="Open as a draft.")] = True,
    force: Annotated[bool, typer.Option(help="Open even if patches are missing.")] = False,
    allow_no_dco: Annotated[bool, typer.Option(
        "--allow-no-dco", help="Open a PR to the manifest's upstream even though a patch "
                               "lacks its author's Signed-off-by (DCO).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Render, push nothing.")] = False,
    *,
    access: Access,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Push the branch and open or update one draft PR.

    Example: carry pr my-fix --repo ../vllm --branch carry/my-fix/upstream-main
    --forge-repo me/vllm --base main --dry-run
    """
    from carry.cli import reports
    from carry.git import Repo
    from carry.publish import pr as prmod
    from carry.series import store as series

    root = _root(series_dir)
    found = [series.find(root, n) for n in names]
    result = prmod.run(found, Repo.open(_repo(repo, root, *names)), prmod.Request(
        branch=branch, remote=remote, base=base, forge_repo=forge_repo, access=access,
        report_path=validation, draft=draft, dry_run=dry_run, title=title, force=force,
        allow_failed=allow_failed, allow_no_dco=allow_no_dco))
    reports.show_pr(result, json)


@app.command()
@grouped("access", _access)
def supersede(
    name: Name,
    by: Annotated[int, typer.Option(help="The carry PR (open or merged) that supersedes.")],
    forge_repo: ForgeRepo,
    repo: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="A local clone, to compare PR commits by patch-id.")] = None,
    remote: Annotated[Optional[str], typer.Option(  # noqa: UP045
        callback=_remote, help="Remote of --repo that has refs/pull/* (default: the "
        "manifest's remote for --forge-repo, else its [fork].remote, else origin).")] = None,
    base: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="The base branch both PRs must target (default: that of --by).")] = None,
    apply: Annotated[bool, typer.Option("--apply", help="Comment and close (default: dry run).")] = False,  # noqa: E501
    when_merged: Annotated[bool, typer.Option(
        "--when-merged", help="Act only once --by is merged; until then report and exit 0.")] = False,  # noqa: E501
    label: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="Label each closed PR (default: [supersede].label of the manifest).")] = None,
    include_origin: Annotated[bool, typer.Option(
        "--include-origin", help="Also close PRs whose provenance role is origin or "
        "upstream-equivalent.")] = False,
    *,
    access: Access,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Comment on and close the open PRs that a carry PR supersedes.

    Dry run unless --apply; the dry run lists every open PR with why it matches or not.

    Example: carry supersede my-fix --by 669 --forge-repo me/vllm --repo ../vllm --when-merged
    """
    from carry.cli import reports
    from carry.git import Repo
    from carry.publish import supersede as supmod
    from carry.series import store as series

    result = supmod.run(series.find(_root(series_dir), name), forge_repo, by,
                        Repo.open(repo) if repo else None, remote, base,
                        supmod.Options(apply=apply, when_merged=when_merged, label=label,
                                       include_origin=include_origin), access)
    reports.show_supersede(result, json)
