"""The test GitHub server answers in GitHub's real shapes: every endpoint carry uses is checked
against the models that githubkit generates from GitHub's official OpenAPI description
(downloaded from PyPI at install time, never committed here)."""

from __future__ import annotations

import json
import urllib.request
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from tests import github_server

TOKEN = "ghp_shape_check"


@pytest.fixture(scope="module")
def server() -> Iterator[github_server.RunningServer]:
    s = github_server.start(TOKEN)
    s.state.repo("lab/fork")
    s.state.add_pull("lab/fork", title="t", body="b", head="h", head_sha="1" * 40, base="main",
                     user="alice", draft=True, commits=["2" * 40], labels=["carry"])
    s.state.add_comment("lab/fork", 1, "hello", "bob")
    yield s
    s.stop()


def _get(server: github_server.RunningServer, path: str) -> Any:
    req = urllib.request.Request(server.url + path, headers={"Authorization": f"token {TOKEN}"})
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
    ("/user", "PrivateUser", False),
    ("/rate_limit", "RateLimitOverview", False),
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


def test_search_answers_match(server: github_server.RunningServer) -> None:
    data = _get(server, "/search/issues?q=repo:lab/fork+is:open+b")
    assert data["total_count"] == 1
    _models().IssueSearchResultItem.model_validate(data["items"][0])
