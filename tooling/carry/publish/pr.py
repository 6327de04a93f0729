"""`carry pr`: push a branch that carries one or more series and open (or update) one draft PR
whose description is generated from the series and the last validation report.

The PR to update is carry's own (owned.py): one the token's account opened from the fork
with carry's marker for exactly this set of series. Another's PR with the marker is left
alone, and a branch that another PR proposes is never pushed to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from carry.base import notes, untrusted
from carry.base.errors import CarryError
from carry.git import Repo
from carry.publish import body as prbody
from carry.publish import github as forgemod
from carry.publish import owned, repository
from carry.publish import remote as remotemod
from carry.series import dco
from carry.series import patches as patchmod
from carry.series.store import Series
from carry.validate.results import Status


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
    action: str  # would-open | would-update | opened | updated | unchanged
    number: int = 0
    url: str = ""
    missing: list[str] = field(default_factory=list)
    looked_up: bool = True  # whether a dry run could ask the forge for an open PR
    draft: bool = False
    remote: str = ""  # the git remote pushed to (or, in a dry run, that would be)


def load_reports(path: str) -> list[dict[str, Any]]:
    """The reports in a `carry validate --json` file: one, or a list over several targets."""
    try:
        data = untrusted.read_json(Path(path))  # a FIFO, a link or a 3,000-deep list: refused
    except ValueError as exc:
        raise CarryError(f"cannot read validation report {path}: {exc}") from None
    items = data if isinstance(data, list) else [data]
    if not items or not all(isinstance(d, dict) and "steps" in d for d in items):
        raise CarryError(f"{path} is not a carry validate --json report")
    for item in items:
        _check_shape(path, item)
    return items


def _check_shape(path: str, data: dict[str, Any]) -> None:
    """The fields the PR body reads, with the types `carry validate --json` writes: a report
    edited by hand or from elsewhere is refused here, not half-rendered."""
    def want(ok: bool, where: str, what: str) -> None:
        if not ok:
            raise CarryError(f"{path}: {where} must be {what}, as carry validate --json "
                             "writes it")

    steps = data["steps"]
    want(isinstance(steps, list), "'steps'", "a list")
    for i, step in enumerate(steps):
        want(isinstance(step, dict), f"steps[{i}]", "an object")
        for key in ("kind", "name", "status"):
            want(isinstance(step.get(key), str), f"steps[{i}].{key}", "a string")
        for key in ("command", "note"):
            want(isinstance(step.get(key, ""), str | None), f"steps[{i}].{key}", "a string")
    for key in ("summary", "status", "head", "head_tree", "onto", "onto_ref"):
        want(isinstance(data.get(key, ""), str), f"'{key}'", "a string")
    base = data.get("baseline")
    want(base is None or isinstance(base, dict) and isinstance(base.get("summary", ""), str),
         "'baseline'", "an object with a string 'summary'")


def last_report(repo: Repo, name: str, commit: str) -> dict[str, Any] | None:
    """The newest `carry validate` report of the series, if it validated this very tree: a PR
    must never quote results of other code."""
    from carry.validate.run import last_report_path

    path = last_report_path(repo, name)
    if not path.exists():
        return None
    (data,) = load_reports(str(path))
    tree = repo.rev_parse(commit, "tree")
    return data if data.get("head_tree") == tree else None


def other_plan(series: Series, report: dict[str, Any]) -> str:
    """How `report` ran a test plan other than the series' current one ("" when it ran this
    one): the same tree under another plan is another validation (the plan may have changed
    and changed back since; the last report is then of the other plan)."""
    tp = series.manifest.test
    suites = report.get("suites")
    if isinstance(suites, list) and suites != list(tp.suites):
        return f"suites {', '.join(map(str, suites)) or '(none)'}, not {', '.join(tp.suites)}"
    if report.get("engine") not in (None, "local") and report.get("image") != tp.image:
        return f"image {report.get('image')}, not {tp.image}"
    return ""


def reports_for(series_list: list[Series], repo: Repo, branch: str, commit: str,
                paths: Sequence[str], allow_failed: bool) -> dict[str, dict[str, Any] | None]:
    """Each series' report, bound to the tree the PR proposes: a report of another tree, of
    another series or (without --allow-failed) a failed one is refused, never quoted."""
    tree = repo.rev_parse(commit, "tree")
    names = [s.name for s in series_list]
    given: dict[str, dict[str, Any]] = {}
    for path in paths:
        for rep in load_reports(path):
            name = str(rep.get("series", ""))
            if name not in names:
                raise CarryError(f"{path} is a report for series {name or '(none)'}, which "
                                 f"this PR does not carry ({', '.join(names)})")
            if rep.get("head_tree") != tree:
                raise CarryError(
                    f"{path} validated tree {str(rep.get('head_tree') or '(none)')[:12]}, not "
                    f"the tree of {branch} ({tree[:12]}): a PR quotes only its own tree",
                    hint=f"carry validate {name} --commit {branch}")
            given[name] = rep
    out = {n: given.get(n) or last_report(repo, n, commit) for n in names}
    for s in series_list:
        found, why = out[s.name], other_plan(s, out[s.name] or {})
        if found is not None and why and s.name in given:
            raise CarryError(f"the report given for {s.name} ran another test plan ({why})",
                             hint=f"carry validate {s.name} --commit {branch}")
        if found is not None and why:
            notes.warn(f"the last validation of {s.name} ran another test plan ({why}); "
                       f"not quoted (carry validate {s.name} --commit {branch})")
            out[s.name] = None
    for name, found in out.items():
        if found is not None and found.get("status") != Status.PASSED and not allow_failed:
            raise CarryError(f"the validation of {name} on this tree {found.get('status')}: "
                             f"{found.get('summary', '')}",
                             hint="fix it, or pass --allow-failed to publish the failure")
    return out


def carried(repo: Repo, series_list: list[Series], base: str, head: str,
            base_name: str) -> tuple[prbody.Pushed, list[str]]:
    """The commits of base..head (`base_name` the branch the PR targets), which of them
    carries each series patch, and the patches none carries. A patch is carried by the
    commit with its patch-id or, failing that, with its author line (name, email, date) and
    message: carry keeps those byte for byte, so a patch a replay merged into other context,
    or a recorded resolution changed, is still found (a patch-id alone would call it
    missing)."""
    commits = repo.rev_list(base, head)
    have = dict(repo.log_patch_ids([f"{base}..{head}"]))  # patch-id -> commit
    named = [(f"{s.name}/{p.name}", patchmod.load(p.path, p.number)) for s in series_list
             for p in s.patches()]
    ids = repo.diff_patch_ids([p.diff for _, p in named])
    found = {name: have[pid] for (name, _), pid in zip(named, ids, strict=True)
             if pid and pid in have}
    if len(found) < len(named):
        by_ident = {(c.author.line(), c.message): c.sha for c in repo.read_commits(commits)}
        found |= {name: by_ident[key] for name, p in named if name not in found
                  and (key := (p.author.line(), p.message)) in by_ident}
    missing = sorted(name for name, _ in named if name not in found)
    messages = {c.sha: c.message.rstrip() for c in repo.read_commits(sorted(set(found.values())))}
    stale = tuple(sorted(name for name, p in named  # trailing blank lines are git's, not ours
                         if name in found and messages[found[name]] != p.message.rstrip()))
    return prbody.Pushed(head, base_name, len(commits), found, stale), missing


def marked(pulls: list[forgemod.PullInfo], names: list[str]) -> list[forgemod.PullInfo]:
    """The PRs whose marker names exactly this set of series, whoever opened them."""
    return [p for p in pulls if set(prbody.marked_series(p.body)) == set(names)]


def find_open(forge: forgemod.Forge, forge_repo: str,
              names: list[str]) -> list[forgemod.PullInfo]:
    """carry's open PRs for exactly this set of series, whatever their branch; a line for
    each one that carries the marker but is someone else's."""
    pulls = repository.repo(forge, forge_repo).open_pulls()
    mine, others = owned.split(forge, forge_repo, marked(pulls, names))
    for p in others:
        owned.ignore_pull(forge, forge_repo, p, _marker(names))
    return mine


def _marker(names: list[str]) -> str:
    return f"carry's marker for {', '.join(names)}"


@dataclass(kw_only=True)
class Request:
    """What `carry pr` is asked to do; keyword-only, so no call passes a row of booleans.
    `push_token`: git pushes with it (the CI loop, as the token's user); else git's own
    credentials. `remote`: None for the manifest's [fork].remote (remote.for_push)."""

    branch: str
    remote: str | None
    base: str
    forge_repo: str
    access: forgemod.Access
    report_path: str | Sequence[str] | None = None
    draft: bool = True
    dry_run: bool = False
    title: str | None = None
    force: bool = False
    allow_failed: bool = False
    push_token: str | None = None
    allow_no_dco: bool = False


def run(series_list: list[Series], repo: Repo, req: Request) -> PrResult:
    if not series_list:
        raise CarryError("name at least one series")
    for s in series_list:
        if not s.patches():
            raise CarryError(f"series {s.name} has no patches", hint="run carry import")
    if not req.allow_no_dco:  # upstream (vLLM) checks DCO: say so before anything is pushed
        dco.refuse_unsigned(series_list, req.forge_repo)
    commit = repo.rev_parse(req.branch)
    remote = remotemod.for_push(req.remote, series_list)
    # The PR's base lives in --forge-repo: upstream's remote when the PR goes upstream.
    on = remotemod.for_pulls(None, series_list[0], req.forge_repo)
    base_commit = remotemod.base_commit(repo, on if on.name in repo.remotes() else remote,
                                        req.base)
    pushed, missing = carried(repo, series_list, base_commit, commit, req.base)
    if missing and not req.force:
        raise CarryError(f"branch {req.branch} does not carry {len(missing)} series patch(es), "
                         f"first {missing[0]}", hint="rebase with --refresh, or pass --force")
    if pushed.stale and not req.force:  # the checks above read the series, not the branch
        first = pushed.stale[0]
        raise CarryError(
            f"branch {req.branch} carries an older version of {len(pushed.stale)} series "
            f"patch(es): the message of commit {pushed.commits[first][:12]} is not that of "
            f"{first} (its trailers, such as Signed-off-by, differ); nothing was pushed",
            hint="carry apply the series' current version onto that branch, or pass --force")
    given = req.report_path
    paths = [given] if isinstance(given, str) else list(given or [])
    reports = reports_for(series_list, repo, req.branch, commit, paths, req.allow_failed)
    body = prbody.render(series_list, reports, req.title, pushed)
    result = PrResult([s.name for s in series_list], req.forge_repo, req.branch, req.base,
                      commit, body.title, body.text, req.dry_run, "would-open", missing=missing,
                      draft=req.draft, remote=remote.name)
    try:  # after every other check, so that a preview names the remote last
        remotemod.check(repo, remote)
    except CarryError as exc:
        if not req.dry_run:
            raise
        notes.warn(f"{exc.line()}; a real run would stop here")  # a preview still renders
    if req.dry_run:
        return _preview(req.access, result)
    forge = req.access.connect()
    existing = _open_pr(forge, result)
    head = existing.head if existing else req.branch
    old = repo.remote_head(remote.name, head, req.push_token)
    repo.push(remote.name, commit, head, old, req.push_token)
    result.head = head
    if existing and (existing.head_sha, existing.title, existing.body) == (
            commit, body.title, body.text):
        result.action, result.number, result.url = "unchanged", existing.number, existing.url
        return result  # nothing to write: a loop run twice asks nothing of GitHub twice
    if existing:
        pr = repository.repo(forge, req.forge_repo).edit_pull(existing.number, title=body.title,
                                                  body=body.text)
        result.action = "updated"
    else:
        pr = repository.repo(forge, req.forge_repo).create_pull(body.title, body.text, req.branch,
                                                    req.base, req.draft)
        result.action = "opened"
    result.number, result.url = pr.number, pr.url
    return result


def _open_pr(forge: forgemod.Forge, result: PrResult) -> forgemod.PullInfo | None:
    """carry's open PR for the series set, if any, checked before anything is pushed: its
    base is this base, and no other open PR proposes the branch carry would push to."""
    pulls = repository.repo(forge, result.repo).open_pulls()
    mine, others = owned.split(forge, result.repo, marked(pulls, result.series))
    existing = mine[0] if mine else None
    if existing and existing.base != result.base:
        raise CarryError(f"open PR #{existing.number} already carries "
                         f"{', '.join(result.series)} against {existing.base}, not "
                         f"{result.base}",
                         hint="close it or retarget it first: carry opens one PR per series set")
    head = existing.head if existing else result.head
    taken = next((p for p in pulls if p.head == head and owned.same(p.head_repo, result.repo)
                  and p != existing), None)
    if taken is not None:
        raise CarryError(f"branch {head} of {result.repo} is the head of open PR "
                         f"#{taken.number} by {taken.author}, which is not carry's PR for "
                         f"{', '.join(result.series)}: carry pushes to no other PR's branch; "
                         "nothing was pushed",
                         hint=f"close #{taken.number}, or pass another --branch")
    for p in others:
        owned.ignore_pull(forge, result.repo, p, _marker(result.series))
    return existing


def _preview(access: forgemod.Access, result: PrResult) -> PrResult:
    """A dry run reads (never writes) the forge when it has a token, so that it can say
    which PR the real run would update; without one it says that it did not look."""
    if not forgemod.token_set(access.token_env):
        result.looked_up = False
        return result
    existing = _open_pr(access.connect(), result)  # a bad token fails as in a real run
    if existing:
        result.action, result.number, result.head = "would-update", existing.number, existing.head
        result.url = existing.url
    return result
