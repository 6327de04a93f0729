"""GitHub as a hostile or flaky peer: an answer lost after the object was made, a body past
GitHub's limit, an edit history longer than one page, a marker moved, answers of the wrong
shape. All against the GitHub double on 127.0.0.1 through PyGithub."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from carry.job import board as boardmod
from carry.job import steer
from carry.publish import repository, text
from carry.publish.github import Forge, ForgeError
from tests import github_server

TOKEN = "ghp_lost_answers_0123456789"
FORK = "lab/fork"


@pytest.fixture
def gh() -> Iterator[github_server.RunningServer]:
    s = github_server.start(TOKEN)
    s.state.repo(FORK)
    s.state.add_token("ghp_alice", "alice")
    s.state.roles[(FORK, "alice")] = "write"
    yield s
    s.stop()


def _forge(gh: github_server.RunningServer) -> Forge:
    forge = Forge.connect(gh.url, TOKEN, max_wait=5)
    forge.log = lambda line: None
    return forge


def test_an_issue_made_before_a_502_is_not_made_twice(gh: github_server.RunningServer) -> None:
    gh.state.add_issue(FORK, title="t", body="an older one", user="carry-bot")
    gh.state.fault(502, path=r"/issues$", after=True)
    made = repository.repo(_forge(gh), FORK).create_issue("t", "b")
    issues = gh.state.repos[FORK].issues
    assert len(issues) == 2 and issues[made.number].body == "b"


def test_a_comment_made_before_a_502_is_not_posted_twice(
        gh: github_server.RunningServer) -> None:
    issue = gh.state.add_issue(FORK, title="t", body="b", user="carry-bot")
    gh.state.fault(502, path=r"/comments$", after=True)
    repository.repo(_forge(gh), FORK).comment(issue.number, "closing")
    assert [c.body for c in gh.state.repos[FORK].comments] == ["closing"]


def test_a_pull_request_made_before_a_502_is_not_opened_twice(
        gh: github_server.RunningServer) -> None:
    gh.state.fault(502, path=r"/pulls$", after=True)
    made = repository.repo(_forge(gh), FORK).create_pull("t", "b", "carry/x", "main", draft=False)
    assert list(gh.state.repos[FORK].pulls) == [made.number]


def test_every_body_is_bounded_to_githubs_limit(gh: github_server.RunningServer) -> None:
    repo = repository.repo(_forge(gh), FORK)
    made = repo.create_issue("t", "x" * 100_000)
    body = gh.state.repos[FORK].issues[made.number].body
    assert len(body) <= text.LIMIT and "more characters not shown" in body
    repo.comment(made.number, "\U0001f600" * 40_000)  # 80,000 UTF-16 units
    assert text.size(gh.state.repos[FORK].comments[0].body) <= text.LIMIT


def _dashboard(gh: github_server.RunningServer, body_first_line: str = "") -> int:
    board = boardmod.Board(FORK, cells=[boardmod.Cell("good", "release")])
    body = boardmod.render(board)
    issue = gh.state.add_issue(FORK, title=boardmod.TITLE, body=body_first_line + body,
                               user="carry-bot")
    return issue.number


def test_a_writers_pause_survives_101_later_edits_by_a_reader(
        gh: github_server.RunningServer) -> None:
    number = _dashboard(gh)
    issue = gh.state.repos[FORK].issues[number]
    paused = issue.body.replace("- [ ] `good` <!--", "- [x] `good` <!--")
    now = time.time()
    issue.edits = [("carry-bot", now, issue.body), ("alice", now + 1, paused)]
    issue.edits += [("mallory", now + 2 + i, paused + "\n" + "." * i) for i in range(101)]
    issue.body = issue.edits[-1][2]
    board, found = steer._find(_forge(gh), FORK)
    assert found is not None and board.paused == {"good"}


def test_the_dashboard_is_found_when_a_reader_moved_its_marker(
        gh: github_server.RunningServer) -> None:
    number = _dashboard(gh, "A note someone added on top.\n\n")
    _, found = steer._find(_forge(gh), FORK)
    assert found is not None and found.number == number


@pytest.mark.parametrize("answer", [
    {"data": {"repository": {"issue": {"userContentEdits": {"nodes": [
        {"editedAt": "2026-01-01T00:00:00Z", "editor": {"login": 5}, "diff": "x"}]}}}}},
    "[" * 100_000 + "]" * 100_000,
], ids=["login-is-a-number", "nested-100000-deep"])
def test_a_graphql_answer_of_the_wrong_shape_is_one_line(
        gh: github_server.RunningServer, answer: object) -> None:
    number = _dashboard(gh)
    gh.state.repos[FORK].issues[number].edits = [("carry-bot", time.time(), "x")]
    raw = answer if isinstance(answer, str) else json.dumps(answer)
    gh.state.fault(200, path=r"/graphql$", raw=raw.encode())
    with pytest.raises(ForgeError) as no:
        steer._find(_forge(gh), FORK)
    assert "\n" not in str(no.value) and "not GitHub's" in str(no.value)


def test_an_edit_history_too_long_to_read_back_changes_nothing(
        gh: github_server.RunningServer) -> None:
    """Past the pages carry reads, it cannot tell who ticked what: one line, no edit."""
    number = _dashboard(gh)
    issue = gh.state.repos[FORK].issues[number]
    now = time.time()
    issue.edits = [("carry-bot", now, issue.body)]
    issue.edits += [("mallory", now + 1 + i, issue.body + "." * i) for i in range(150)]
    with pytest.raises(ForgeError) as no:
        repository.repo(_forge(gh), FORK).body_edits(number, "carry-bot", pages=1)
    assert "more than 100 edits since carry's own revision" in str(no.value)
    assert gh.state.writes() == []
