"""`carry pr`: push a branch that carries one or more series and open (or update) one draft PR
whose description is generated from the series and the last validation report."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from carry import forge as forgemod
from carry import patches as patchmod
from carry import prbody
from carry.errors import CarryError
from carry.git import Repo
from carry.series import Series


@dataclass
class PrResult:
    series: list[str]
    repo: str
    head: str
    base: str
    commit: str
    title: str
    body: str
    dry_run: bool
    action: str  # would-open | would-update | opened | updated
    number: int = 0
    url: str = ""
    missing: list[str] = field(default_factory=list)


def load_report(path: str | None) -> dict[str, Any] | None:
    if not path:
        return None
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise CarryError(f"cannot read validation report {path}: {exc}") from None
    if isinstance(data, list):  # `carry validate --json` over several targets
        data = data[0] if data else None
    if not isinstance(data, dict) or "steps" not in data:
        raise CarryError(f"{path} is not a carry validate --json report")
    return data


def last_report(repo: Repo, name: str, commit: str) -> dict[str, Any] | None:
    """The newest `carry validate` report of the series, if it validated this very tree: a PR
    must never quote results of other code."""
    from carry.validate.run import last_report_path

    path = last_report_path(repo, name)
    if not path.exists():
        return None
    data = load_report(str(path))
    tree = repo.rev_parse(commit, "tree")
    return data if data and data.get("head_tree") == tree else None


def series_patch_ids(repo: Repo, series_list: list[Series]) -> dict[str, str]:
    """patch-id -> `name/file`, in one `git patch-id` process."""
    named = [(s.name, patchmod.load(p.path, p.number)) for s in series_list
             for p in s.patches()]
    ids = repo.diff_patch_ids([p.diff for _, p in named])
    return {pid: f"{name}/{p.file}" for (name, p), pid in zip(named, ids, strict=True) if pid}


def commit_patch_ids(repo: Repo, rev_range: str) -> set[str]:
    return {pid for pid, _ in repo.log_patch_ids([rev_range])}


def missing_patches(repo: Repo, series_list: list[Series], base: str, head: str) -> list[str]:
    """The series patches the branch does not carry, by patch-id."""
    have = commit_patch_ids(repo, f"{base}..{head}")
    return sorted(name for pid, name in series_patch_ids(repo, series_list).items()
                  if pid not in have)


def run(series_list: list[Series], repo: Repo, branch: str, remote: str, base: str,
        forge_repo: str, report_path: str | None, draft: bool, dry_run: bool,
        access: forgemod.Access, title: str | None = None, force: bool = False) -> PrResult:
    if not series_list:
        raise CarryError("name at least one series")
    for s in series_list:
        if not s.patches():
            raise CarryError(f"series {s.name} has no patches", hint="run carry import")
    commit = repo.rev_parse(branch)
    base_commit = repo.rev_parse(f"{remote}/{base}") if repo.try_rev_parse(
        f"{remote}/{base}") else repo.rev_parse(base)
    missing = missing_patches(repo, series_list, base_commit, commit)
    if missing and not force:
        raise CarryError(f"branch {branch} does not carry {len(missing)} series patch(es), "
                         f"first {missing[0]}", hint="rebase with --refresh, or pass --force")
    report = (load_report(report_path) if report_path
              else last_report(repo, series_list[0].name, commit))
    body = prbody.render(series_list, report, title)
    result = PrResult([s.name for s in series_list], forge_repo, branch, base, commit,
                      body.title, body.text, dry_run, "would-open", missing=missing)
    if dry_run:
        return result
    forge = access.connect()
    existing = [p for p in forge.open_pulls(forge_repo, base) if p.head == branch]
    repo.push(remote, commit, branch, repo.remote_head(remote, branch))
    if existing:
        pr = forge.edit_pull(forge_repo, existing[0].number, title=body.title, body=body.text)
        result.action = "updated"
    else:
        pr = forge.create_pull(forge_repo, body.title, body.text, branch, base, draft)
        result.action = "opened"
    result.number, result.url = pr.number, pr.url
    return result
