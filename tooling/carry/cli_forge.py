"""`carry pr` and `carry supersede`, the commands that talk to GitHub: parse, call, print.

They register on `cli.app`; cli.py imports this module so that both appear in `carry --help`.
The GitHub options are declared here once and shared with `carry ci`'s loop flags.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from carry.cli import Json, Name, RepoPath, SeriesDir, _branch, _remote, _root, app, grouped

if TYPE_CHECKING:
    from carry.forge import Access
else:
    Access = object  # PyGithub is imported when a command runs (cli.grouped)

ForgeRepo = Annotated[str, typer.Option("--forge-repo",
                                         help="The GitHub repository, owner/name.")]
ApiUrl = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--api-url", envvar="GITHUB_API_URL", help="GitHub API base URL.")]
TokenEnv = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--token-env", help="Environment variable that holds the token (never printed; "
    "default: $GH_TOKEN, then $GITHUB_TOKEN).")]
MaxWait = Annotated[float, typer.Option(
    "--max-wait", min=0, metavar="SECONDS",
    help="Longest total wait for GitHub's rate limits and outages before giving up.")]


def _access(api_url: ApiUrl = None, token_env: TokenEnv = None,
            max_wait: MaxWait = 60.0) -> Access:
    """How to reach GitHub, declared once for pr and supersede (see cli.grouped)."""
    from carry import redact
    from carry.forge import Access

    if token_env:
        redact.register_env(token_env)  # masked, and kept from the target's code
    return Access(api_url, token_env, max_wait)


@app.command()
@grouped("access", _access)
def pr(
    names: Annotated[list[str], typer.Argument(metavar="NAME...",
                                               help="One series, or several to consolidate.")],
    repo: RepoPath,
    branch: Annotated[str, typer.Option(callback=_branch,
                                        help="The branch that carries the series.")],
    forge_repo: ForgeRepo,
    base: Annotated[str, typer.Option(help="The branch the PR targets.")],
    remote: Annotated[str, typer.Option(callback=_remote,
                                        help="The git remote to push to.")] = "origin",
    validation: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="A `carry validate --json` report of this tree; once per series "
        "(default: each series' last validation of this tree).")] = None,
    allow_failed: Annotated[bool, typer.Option(
        "--allow-failed", help="Publish a failed validation (the body says it failed).")] = False,
    title: Annotated[Optional[str], typer.Option(help="PR title.")] = None,  # noqa: UP045
    draft: Annotated[bool, typer.Option("--draft/--ready", help="Open as a draft.")] = True,
    force: Annotated[bool, typer.Option(help="Open even if patches are missing.")] = False,
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
    from carry import pr as prmod
    from carry import series, views
    from carry.git import Repo

    root = _root(series_dir)
    result = prmod.run([series.find(root, n) for n in names], Repo.open(repo), branch, remote,
                       base, forge_repo, validation, draft, dry_run,
                       access, title, force, allow_failed)
    views.show_pr(result, json)


@app.command()
@grouped("access", _access)
def supersede(
    name: Name,
    by: Annotated[int, typer.Option(help="The carry PR (open or merged) that supersedes.")],
    forge_repo: ForgeRepo,
    repo: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="A local clone, to compare PR commits by patch-id.")] = None,
    remote: Annotated[str, typer.Option(
        callback=_remote, help="Remote of --repo that has refs/pull/*.")] = "origin",
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
    from carry import series, views
    from carry import supersede as supmod
    from carry.git import Repo

    result = supmod.run(series.find(_root(series_dir), name), forge_repo, by,
                        Repo.open(repo) if repo else None, remote, base,
                        supmod.Options(apply, when_merged, label, include_origin), access)
    views.show_supersede(result, json)
