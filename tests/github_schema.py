"""What the GitHub double may send and accept: every request body and every response of every
endpoint carry uses, checked against the models githubkit generates from GitHub's official
OpenAPI description (installed from PyPI with the dev extras, never committed here).

Strict twice over: pydantic's strict JSON mode (no "1" for 1, no 1 for true), and closed
objects: a key the model does not name is a violation, in a request (GitHub refuses it) and in
a response (the double would be inventing a field that carry might come to rely on).
"""

from __future__ import annotations

import json
import types
import typing
import warnings
from dataclasses import dataclass
from functools import cache
from typing import Any

# endpoint (the handler's name) -> (request body model, response model, a list?)
ENDPOINTS: dict[str, tuple[str | None, str, bool]] = {
    "get_rate_limit": (None, "RateLimitOverview", False),
    "get_user": (None, "PrivateUser", False),
    "get_search_issues": (None, "SearchIssuesGetResponse200", False),
    "get_repo": (None, "FullRepository", False),
    "get_pulls": (None, "PullRequestSimple", True),
    "post_pulls": ("ReposOwnerRepoPullsPostBody", "PullRequest", False),
    "get_pull": (None, "PullRequest", False),
    "patch_pull": ("ReposOwnerRepoPullsPullNumberPatchBody", "PullRequest", False),
    "put_merge": ("ReposOwnerRepoPullsPullNumberMergePutBody", "PullRequestMergeResult", False),
    "get_pull_commits": (None, "Commit", True),
    "get_issues": (None, "Issue", True),
    "post_issues": ("ReposOwnerRepoIssuesPostBody", "Issue", False),
    "get_issue": (None, "Issue", False),
    "patch_issue": ("ReposOwnerRepoIssuesIssueNumberPatchBody", "Issue", False),
    "get_comments": (None, "IssueComment", True),
    "post_comments": ("ReposOwnerRepoIssuesIssueNumberCommentsPostBody", "IssueComment", False),
    "post_labels": ("ReposOwnerRepoIssuesIssueNumberLabelsPostBodyOneof0", "Label", True),
    "get_comment": (None, "IssueComment", False),
    "get_repo_comments": (None, "IssueComment", True),
    "get_issue_events": (None, "StateChangeIssueEvent", True),
    "delete_comment": (None, "", False),
    "get_permission": (None, "RepositoryCollaboratorPermission", False),
}


@dataclass(frozen=True)
class Violation:
    endpoint: str
    what: str  # request | response
    problem: str

    def __str__(self) -> str:
        return f"{self.endpoint} {self.what}: {self.problem}"


@cache
def _models() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from githubkit_schemas.latest import models
    return models


def model(name: str) -> Any:
    return getattr(_models(), name)


def problems(name: str, data: Any, many: bool = False) -> list[str]:
    """Why `data` is not what GitHub's model `name` allows; [] when it is."""
    from pydantic import ValidationError

    cls = model(name)
    items = data if many else [data]
    if many and not isinstance(data, list):
        return [f"expected a list of {name}, got {type(data).__name__}"]
    out: list[str] = []
    for item in items:
        try:
            cls.model_validate_json(json.dumps(item), strict=True)
        except ValidationError as exc:
            out += [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
        out += _extra_keys(cls, item, name)
    return out


def _extra_keys(cls: Any, data: Any, where: str) -> list[str]:
    """Keys the model does not name, at every depth the models describe."""
    if not isinstance(data, dict):
        return []
    fields = {(f.alias or k): f for k, f in cls.model_fields.items()}
    out = [f"{where}.{k}: not a field of {cls.__name__}" for k in data if k not in fields]
    for key, value in data.items():
        if key in fields:
            for sub in _nested(fields[key].annotation):
                values = value if isinstance(value, list) else [value]
                for v in values:
                    out += _extra_keys(sub, v, f"{where}.{key}")
    return out


def _nested(annotation: Any) -> list[Any]:
    """The model classes inside a field's type (through Union, Optional and list)."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list):
        found = [m for arg in typing.get_args(annotation) for m in _nested(arg)]
        return found[:1]  # one schema per field: an anyOf of objects picks its first
    return []


# GraphQL has no OpenAPI model: the queries carry sends are checked against GitHub's GraphQL
# schema by hand (`viewer: User!`, `User.login: String!`; an issue's `userContentEdits`, a
# UserContentEditConnection whose nodes have `editedAt: DateTime!`, `editor: Actor` (null for
# a deleted account) and `diff: String`; a request is `query` + `variables`).
GRAPHQL = "post_graphql"


def _graphql(what: str, data: Any) -> list[str]:
    if not isinstance(data, dict):
        return [f"a GraphQL {what} is an object"]
    if what == "request":
        ok = isinstance(data.get("query"), str) and isinstance(data.get("variables", {}), dict)
        extra = set(data) - {"query", "variables", "operationName"}
        return [] if ok and not extra else ["a GraphQL request is {query, variables}"]
    if "errors" in data:
        ok = set(data) <= {"errors", "data"} and isinstance(data["errors"], list) and all(
            isinstance(e, dict) and isinstance(e.get("message"), str) for e in data["errors"])
        return [] if ok else ["GraphQL errors are a list of {message}"]
    answer = data.get("data") if set(data) == {"data"} else None
    if not isinstance(answer, dict):
        return ["a GraphQL answer is {data}"]
    if "repository" in answer:
        return _edits(answer)
    viewer = answer.get("viewer")
    return [] if set(answer) == {"viewer"} and isinstance(viewer, dict) and set(viewer) == {
        "login"} and isinstance(viewer["login"], str) else ["not {data: {viewer: {login}}}"]


def _edits(answer: dict[str, Any]) -> list[str]:
    try:
        nodes = answer["repository"]["issue"]["userContentEdits"]["nodes"]
    except (KeyError, TypeError):
        return ["not {repository: {issue: {userContentEdits: {nodes}}}}"]
    for n in nodes if isinstance(nodes, list) else [None]:
        editor = n.get("editor") if isinstance(n, dict) else "?"
        if not (isinstance(n, dict) and set(n) == {"editedAt", "editor", "diff"}
                and isinstance(n["editedAt"], str) and isinstance(n["diff"], str | None)
                and (editor is None or isinstance(editor, dict) and set(editor) == {"login"}
                     and isinstance(editor["login"], str))):
            return [f"a UserContentEdit is {{editedAt, editor: {{login}} | null, diff}}: {n}"]
    return []


def check_request(endpoint: str, body: Any) -> list[Violation]:
    if endpoint == GRAPHQL:
        return [Violation(endpoint, "request", p) for p in _graphql("request", body)]
    request, _, _ = ENDPOINTS.get(endpoint, (None, "", False))
    if endpoint == "post_labels" and isinstance(body, list):  # GitHub's oneOf: ["name", ...]
        return [] if all(isinstance(x, str) for x in body) else [
            Violation(endpoint, "request", "labels must be names")]
    if request is None:
        return [] if body in (None, {}) else [Violation(endpoint, "request",
                                                        "a body where GitHub takes none")]
    return [Violation(endpoint, "request", p) for p in problems(request, body)]


def check_response(endpoint: str, status: int, payload: Any) -> list[Violation]:
    if status >= 400:
        name = "ValidationError" if status == 422 else "BasicError"
        return [Violation(endpoint, "response", p) for p in problems(name, payload)]
    if endpoint == GRAPHQL:
        return [Violation(endpoint, "response", p) for p in _graphql("response", payload)]
    if endpoint not in ENDPOINTS:
        return [Violation(endpoint, "response", "no GitHub model is named for this endpoint")]
    _, response, many = ENDPOINTS[endpoint]
    return [Violation(endpoint, "response", p) for p in problems(response, payload, many)]
