"""The test GitHub server answers in GitHub's real shapes: every endpoint carry uses is checked
against the models that githubkit generates from GitHub's official OpenAPI description
(downloaded from PyPI at install time, never committed here)."""

from __future__ import annotations

import json
import re
import urllib.request
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from carry.publish import repository
from tests import github_server

TOKEN = "ghp_shape_check"


@pytest.fixture(scope="module")
def server() -> Iterator[github_server.RunningServer]:
    s = github_server.start(TOKEN)
    s.state.repo("lab/fork")
    s.state.add_pull("lab/fork", title="t", body="b", head="h", head_sha="1" * 40, base="main",
                     user="alice", draft=True, commits=["2" * 40], labels=["carry"])
    s.state.add_comment("lab/fork", 1, "hello", "bob")
    s.state.add_issue("lab/fork", title="tracking", body="<!-- carry:tracking -->", user="bot")
    s.state.add_pull("lab/fork", title="from a fork", body="forked", head="h", head_sha="3" * 40,
                     base="main", user="mallory", draft=False, head_repo="mallory/fork")
    s.state.add_pull("lab/fork", title="fork deleted", body="gone", head="h", head_sha="4" * 40,
                     base="main", user="gone", draft=False, head_repo=None)
    s.state.add_comment("lab/fork", 2, "by an app", "github-actions[bot]")
    s.state.add_token("ghs_installation", "github-actions[bot]", app=True)
    yield s
    s.stop()


def _get(server: github_server.RunningServer, path: str, method: str = "GET",
         body: dict[str, Any] | None = None) -> Any:
    req = urllib.request.Request(server.url + path, method=method,
                                 data=json.dumps(body).encode() if body else None,
                                 headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(req) as resp:  # noqa: S310 - loopback only
        return json.load(resp)


def _models() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from githubkit_schemas.latest import models
    return models


CASES = [
    ("/repos/lab/fork", "FullRepository", False),
    ("/repos/lab/fork/pulls", "PullRequestSimple", True),
    ("/repos/lab/fork/pulls/1", "PullRequest", False),
    ("/repos/lab/fork/pulls/1/commits", "Commit", True),
    ("/repos/lab/fork/issues/1", "Issue", False),
    ("/repos/lab/fork/issues/1/comments", "IssueComment", True),
    ("/repos/lab/fork/issues/2", "Issue", False),
    ("/repos/lab/fork/issues", "Issue", True),
    ("/repos/lab/fork/issues?state=all&per_page=1&page=2", "Issue", True),
    ("/repos/lab/fork/pulls/3", "PullRequest", False),
    ("/repos/lab/fork/pulls/4", "PullRequest", False),
    ("/repos/lab/fork/issues/4", "Issue", False),
    ("/repos/lab/fork/issues/comments", "IssueComment", True),
    ("/repos/lab/fork/issues/comments?since=2020-01-01T00:00:00Z&direction=desc",
     "IssueComment", True),
    ("/user", "PrivateUser", False),
    ("/rate_limit", "RateLimitOverview", False),
    ("/repos/lab/fork/collaborators/alice/permission", "RepositoryCollaboratorPermission",
     False),
    ("/repos/lab/fork/collaborators/github-actions%5Bbot%5D/permission",
     "RepositoryCollaboratorPermission", False),
]


@pytest.mark.parametrize(("path", "model", "many"), CASES)
def test_answers_match_githubs_openapi_models(server: github_server.RunningServer, path: str,
                                              model: str, many: bool) -> None:
    data = _get(server, path)
    items = data if many else [data]
    assert items, f"{path} answered nothing"
    cls = getattr(_models(), model)
    for item in items:
        cls.model_validate(item)  # raises with every field GitHub would have and we lack


def test_a_pull_from_another_fork_names_that_fork(server: github_server.RunningServer) -> None:
    pulls = {p["number"]: p for p in _get(server, "/repos/lab/fork/pulls?state=all")}
    assert (pulls[3]["head"]["repo"]["full_name"], pulls[3]["head"]["label"]) == (
        "mallory/fork", "mallory:h")
    assert pulls[3]["head"]["repo"]["fork"] and pulls[4]["head"]["repo"] is None
    assert pulls[1]["head"]["repo"]["full_name"] == "lab/fork"


def test_each_token_is_its_own_account(server: github_server.RunningServer) -> None:
    """A user's token reads /user; an installation token (GitHub Actions' GITHUB_TOKEN) is
    refused there, as on GitHub, and learns its bot login from GraphQL's viewer."""
    from github import Auth, Github, GithubException

    server.state.add_token("ghp_bob", "bob")
    assert Github(base_url=server.url, auth=Auth.Token("ghp_bob"),
                  api_version="2026-03-10").get_user().login == "bob"
    app = Github(base_url=server.url, auth=Auth.Token("ghs_installation"), retry=None,
                 api_version="2026-03-10")
    with pytest.raises(GithubException) as no:
        app.get_user().login  # noqa: B018 - the read is the request
    assert (no.value.status, no.value.data["message"]) == (
        403, "Resource not accessible by integration")
    _, data = app.requester.graphql_query("query { viewer { login } }", {})
    assert data == {"data": {"viewer": {"login": "github-actions[bot]"}}}
    made = app.get_repo("lab/fork").create_issue("by the app", "x")
    assert made.user.login == "github-actions[bot]" and made.user.type == "Bot"


def test_search_answers_match(server: github_server.RunningServer) -> None:
    data = _get(server, "/search/issues?q=repo:lab/fork+is:open+b")
    assert data["total_count"] == 1
    _models().IssueSearchResultItem.model_validate(data["items"][0])


def test_issue_writes_answer_in_shape_and_are_recorded(
        server: github_server.RunningServer) -> None:
    """The writes the CI loop sends: open, edit, comment on and close an issue."""
    issue = _models().Issue
    created = _get(server, "/repos/lab/fork/issues", "POST", {"title": "x", "body": "y"})
    issue.model_validate(created)
    n = created["number"]
    assert "pull_request" not in created and n > 2  # numbers are shared with pulls
    edited = _get(server, f"/repos/lab/fork/issues/{n}", "PATCH", {"body": "z"})
    issue.model_validate(edited)
    comment = _get(server, f"/repos/lab/fork/issues/{n}/comments", "POST", {"body": "done"})
    _models().IssueComment.model_validate(comment)
    closed = _get(server, f"/repos/lab/fork/issues/{n}", "PATCH",
                  {"state": "closed", "state_reason": "completed"})
    issue.model_validate(closed)
    assert (closed["state"], closed["state_reason"], closed["body"]) == (
        "closed", "completed", "z")
    assert closed["closed_at"] and closed["comments"] == 1
    open_numbers = [i["number"] for i in _get(server, "/repos/lab/fork/issues")]
    assert n not in open_numbers and 2 in open_numbers and 1 in open_numbers
    assert server.state.writes()[-4:] == [
        ("POST", "/repos/lab/fork/issues"), ("PATCH", f"/repos/lab/fork/issues/{n}"),
        ("POST", f"/repos/lab/fork/issues/{n}/comments"),
        ("PATCH", f"/repos/lab/fork/issues/{n}")]


# -- the double enforces GitHub's rules, through PyGithub's real HTTP -----------------------


@pytest.fixture
def fresh() -> Iterator[github_server.RunningServer]:
    s = github_server.start(TOKEN)
    for n in range(1, 6):
        s.state.add_pull("lab/fork", n, title=f"t{n}", body="b", head=f"h{n}",
                         head_sha=f"{n}" * 40, base="main", user="alice", draft=False)
        s.state.repos["lab/fork"].pulls[n].created = 1_700_000_000 + n
    yield s
    s.stop()


def _hub(server: github_server.RunningServer, token: str | None = TOKEN) -> Any:
    from github import Auth, Github

    return Github(base_url=server.url, auth=Auth.Token(token) if token else None, retry=None,
                  api_version="2026-03-10")


def test_pulls_follow_sort_and_direction(fresh: github_server.RunningServer) -> None:
    repo = _hub(fresh).get_repo("lab/fork")
    assert [p.number for p in repo.get_pulls()] == [5, 4, 3, 2, 1]  # created, desc
    assert [p.number for p in repo.get_pulls(sort="created", direction="asc")] == [1, 2, 3, 4, 5]
    assert [p.number for p in repo.get_pulls(sort="long-running")] == [1, 2, 3, 4, 5]


def test_link_has_first_prev_next_last(fresh: github_server.RunningServer) -> None:
    req = urllib.request.Request(fresh.url + "/repos/lab/fork/pulls?per_page=2&page=2",
                                 headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(req) as resp:  # noqa: S310 - loopback only
        link = resp.headers["Link"]
    rels = dict((m[1], m[0]) for m in re.findall(r'<[^>]*[?&]page=(\d+)[^>]*>; rel="(\w+)"',
                                                 link))
    assert rels == {"first": "1", "prev": "1", "next": "3", "last": "3"}


def test_anonymous_reads_of_a_public_repository(fresh: github_server.RunningServer) -> None:
    from github import GithubException

    repo = _hub(fresh, None).get_repo("lab/fork")
    assert len(list(repo.get_pulls())) == 5
    with pytest.raises(GithubException) as no:
        repo.get_pull(1).create_issue_comment("hi")
    assert (no.value.status, no.value.data["message"]) == (401, "Requires authentication")


def test_a_state_github_does_not_know_is_refused(fresh: github_server.RunningServer) -> None:
    from github import GithubException

    pull = _hub(fresh).get_repo("lab/fork").get_pull(1)
    with pytest.raises(GithubException) as no:
        pull.edit(state="merged")
    assert no.value.status == 422 and "state" in no.value.data["message"]
    assert fresh.state.repos["lab/fork"].pulls[1].state == "open"


def test_merge_then_merged_event_and_no_second_merge(fresh: github_server.RunningServer) -> None:
    from github import GithubException

    repo = _hub(fresh).get_repo("lab/fork")
    done = repo.get_pull(2).merge()
    assert done.merged and len(done.sha) == 40
    again = repo.get_pull(2)
    assert again.merged and again.state == "closed"
    (merged,) = [e for e in repo.get_issue(2).get_events() if e.event == "merged"]
    assert merged.commit_id == done.sha
    with pytest.raises(GithubException) as no:
        repo.get_pull(2).merge()
    assert no.value.status == 405


def test_a_wrong_api_version_is_refused(fresh: github_server.RunningServer) -> None:
    from github import Auth, Github, GithubException

    old = Github(base_url=fresh.url, auth=Auth.Token(TOKEN), retry=None,
                 api_version="1999-01-01")
    with pytest.raises(GithubException) as no:
        old.get_repo("lab/fork")
    assert no.value.status == 400


def test_an_issue_edit_history_and_a_collaborators_permission(
        fresh: github_server.RunningServer) -> None:
    """What the dashboard reads to know who ticked a box: the body's revisions from GraphQL's
    `userContentEdits` (REST has no record of who edited a body; GitHub lists them newest
    first and starts with the created one), and REST's permission of each editor (maintain
    reads as write, triage as read)."""
    from carry.publish.github import Forge

    fresh.state.add_token("ghp_alice", "alice")
    fresh.state.roles[("lab/fork", "alice")] = "maintain"
    fresh.state.roles[("lab/fork", "tim")] = "triage"
    issue = fresh.state.add_issue("lab/fork", title="d", body="v0", user="carry-bot")
    mine = repository.repo(Forge.connect(fresh.url, TOKEN), "lab/fork")
    assert mine.body_edits(issue.number, "carry-bot") == []
    mine.edit_issue(issue.number, body="v1")
    alice = repository.repo(Forge.connect(fresh.url, "ghp_alice"), "lab/fork")
    alice.edit_issue(issue.number, body="v2")
    mine.edit_issue(issue.number, title="only the title")
    assert [(e.editor, e.body) for e in mine.body_edits(issue.number, "carry-bot")] == [
        ("carry-bot", "v0"), ("carry-bot", "v1"), ("alice", "v2")]
    assert [mine.can_write(u) for u in ("alice", "tim", "nobody")] == [True, False, False]
    assert not fresh.state.violations


def test_every_answer_is_checked_against_githubs_models() -> None:
    s = github_server.start(TOKEN)
    s.state.add_pull("lab/fork", 1, title="t", body="b", head="h", head_sha="1" * 40,
                     base="main", user="alice", draft=False)
    s.state.repos["lab/fork"].pulls[1].draft = "yes"  # type: ignore[assignment]
    _hub(s).get_repo("lab/fork").get_pull(1)
    with pytest.raises(AssertionError, match=r"get_pull response: draft\.bool: Input should "
                                             r"be a valid boolean"):
        s.stop()
