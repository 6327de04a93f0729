"""A stateful GitHub REST API server on 127.0.0.1 for the forge tests.

It keeps repositories, pulls, issues, issue comments and labels in memory and answers in GitHub's
shapes (a subset of each object, checked against the fields PyGithub reads), with Link-header
pagination, token auth (each token is one account: a user's, or a GitHub App installation's
that may not read /user and learns its login from GraphQL's `viewer`, as on GitHub), search,
and a switchable rate limit. A pull request's head may live in another repository (a fork).
Tests drive it through PyGithub's real HTTP, so the requests and the error paths carry does
are the ones GitHub would see.
Every request is recorded with its method, so a test can assert that a run wrote nothing.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests import github_schema

PREFIX = "/api/v3"
WEB = "http://github.invalid"  # html_url host: never contacted, only shown
STAMP = "2026-12-03T00:00:00Z"
DOCS = "https://docs.github.com/rest"
BODY_LIMIT = 65_536  # the longest issue, PR or comment body GitHub accepts
API_VERSION = "2026-03-10"  # the one version the double answers in (githubkit's models)


def _num(text: str) -> int:
    return int.from_bytes(text.encode()[:6].ljust(6, b"\0"), "big") % 10**8


def _stamp(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@dataclass
class Pull:
    number: int
    title: str
    body: str
    head: str
    head_sha: str
    base: str
    user: str
    draft: bool
    state: str = "open"
    merged: bool = False
    merge_sha: str = ""
    commits: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    created: float = field(default_factory=time.time)
    # The repository the head branch lives in: "" for the PR's own repository, None when that
    # fork was deleted (GitHub then answers `head.repo: null`).
    head_repo: str | None = ""


@dataclass
class Issue:
    """A plain issue; it shares the number sequence with pulls, as on GitHub."""

    number: int
    title: str
    body: str
    user: str
    state: str = "open"
    state_reason: str | None = None
    created: float = field(default_factory=time.time)
    # The body's edit history, as GraphQL's `userContentEdits` gives it: empty until the first
    # edit, then the created revision and each edit as (editor, epoch, body after the edit).
    edits: list[tuple[str, float, str]] = field(default_factory=list)


@dataclass
class Comment:
    id: int
    issue: int
    body: str
    user: str
    created: float = field(default_factory=time.time)


@dataclass
class Fault:
    """One scripted failure: the next `times` requests whose path matches `path` get it."""

    status: int
    retry_after: str | None = None
    times: int = 1
    path: str = ""
    raw: bytes | None = None  # answer these bytes instead of GitHub's error document
    # GitHub did what was asked, then the answer was lost (a 502 from its front end after the
    # POST went through): the request is carried out, and this fault answered instead.
    after: bool = False


FAULT_BODIES = {
    401: "Bad credentials",
    403: "You have exceeded a secondary rate limit. Please wait a few minutes before you "
         "try again. If you reach out to GitHub Support for help, please include the "
         "request ID 0000:0000:0000000:0000000:00000000.",
    429: "You have exceeded a secondary rate limit. Please wait a few minutes before you "
         "try again.",
    500: "Server Error",
    502: "Server Error",
    503: "Service Unavailable",
    504: "We couldn't respond to your request in time. Sorry about that. Please try "
         "resubmitting your request and contact us if the problem persists.",
}


@dataclass
class RepoState:
    full_name: str
    pulls: dict[int, Pull] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    comments: list[Comment] = field(default_factory=list)
    next_number: int = 1


class GitHubState:
    """Everything the server knows; tests seed and inspect it directly."""

    def __init__(self, token: str, user: str = "carry-bot") -> None:
        self.token = token
        self.user = user
        self.tokens: dict[str, str] = {token: user}  # token -> the login it acts as
        self.apps: set[str] = set()  # installation tokens: no GET /user, GraphQL viewer only
        self.repos: dict[str, RepoState] = {}
        self.rate_limited = False
        self.rate_reset = ""  # X-RateLimit-Reset as sent, when a test sets it (any text)
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self._comment_id = 1000
        self.faults: list[Fault] = []
        self.violations: list[github_schema.Violation] = []
        self.git: dict[str, Path] = {}  # repository -> its bare git repository, when known
        # (repository, login) -> the role GitHub names (admin, maintain, write, triage, read);
        # anyone not listed reads a public repository ("read").
        self.roles: dict[tuple[str, str], str] = {}
        # Called just before a comment is stored: a test plays another machine's run here.
        self.before_comment: Callable[[str, int, str], None] | None = None
        # Called with (method, path) once a request has been answered: a test kills the
        # client here, right after GitHub did what it asked.
        self.after_answer: Callable[[str, str], None] | None = None

    def fault(self, status: int, times: int = 1, retry_after: str | None = None,
              path: str = "", raw: bytes | None = None, after: bool = False) -> None:
        """Script a failure GitHub can answer with (401, secondary 403, 429, 500, 502...), or
        with `raw`, any answer at all (a proxy's HTML page, JSON of the wrong shape); `after`
        carries the request out first, as when GitHub's front end loses the answer."""
        self.faults.append(Fault(status, retry_after, times, path, raw, after))

    def take_fault(self, path: str) -> Fault | None:
        with self.lock:
            for f in self.faults:
                if f.times > 0 and (not f.path or re.search(f.path, path)):
                    f.times -= 1
                    return f
        return None

    def add_token(self, token: str, login: str, app: bool = False) -> None:
        """Another account: requests with `token` act as `login`. An `app` token is a GitHub
        App installation's (the Actions GITHUB_TOKEN): its login ends in `[bot]`."""
        self.tokens[token] = login
        if app:
            self.apps.add(token)

    def repo(self, full_name: str) -> RepoState:
        return self.repos.setdefault(full_name, RepoState(full_name))

    def _number(self, r: RepoState, number: int | None) -> int:
        """Pulls and issues share one sequence of numbers, as on GitHub."""
        n = number or r.next_number
        r.next_number = max(r.next_number, n + 1)
        return n

    def add_pull(self, full_name: str, number: int | None = None, **kw: Any) -> Pull:
        r = self.repo(full_name)
        n = self._number(r, number)
        r.pulls[n] = pull = Pull(number=n, **kw)
        return pull

    def add_issue(self, full_name: str, number: int | None = None, **kw: Any) -> Issue:
        r = self.repo(full_name)
        n = self._number(r, number)
        r.issues[n] = issue = Issue(number=n, **kw)
        return issue

    def writes(self) -> list[tuple[str, str]]:
        """The requests that would change something on GitHub (a GraphQL query, the only kind
        the double answers, is a read)."""
        return [r for r in self.requests if r[0] not in ("GET", "HEAD")
                and r != ("POST", "/api/graphql")]

    def add_comment(self, full_name: str, issue: int, body: str, user: str) -> Comment:
        self._comment_id += 1
        c = Comment(self._comment_id, issue, body, user)
        self.repo(full_name).comments.append(c)
        return c


class _Refused(Exception):
    """A request GitHub would refuse before doing anything: answered with `payload`."""

    def __init__(self, status: int, payload: dict[str, Any]) -> None:
        super().__init__(status)
        self.status, self.payload = status, payload


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    endpoint = "unrouted"
    checked = True
    login = ""  # the account the request's token acts as ("" when anonymous)
    token = ""

    def log_message(self, *args: Any) -> None:  # quiet test output
        pass

    # -- plumbing --------------------------------------------------------------------------

    @property
    def state(self) -> GitHubState:
        return self.server.state

    def base(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}{PREFIX}"

    def send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        lost, self.lost = getattr(self, "lost", None), None
        if lost is not None:  # done; the answer is lost and the fault's is sent instead
            self.checked, payload, headers = False, {
                "message": FAULT_BODIES[lost.status], "status": str(lost.status),
                "documentation_url": "https://docs.github.com/rest"}, None
            status = lost.status
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-RateLimit-Limit", "5000")
        self.send_header("X-RateLimit-Remaining", "0" if self.state.rate_limited else "4999")
        self.send_header("X-RateLimit-Reset", self.state.rate_reset
                         or str(int(time.time()) + 3600))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        if self.checked:
            # list.extend is atomic; the handler may hold state.lock here
            self.state.violations.extend(
                github_schema.check_response(self.endpoint, status, payload))

    def send_raw(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def raw_body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def body(self) -> Any:
        """The request's JSON, refused as GitHub refuses it when its model does not allow it."""
        raw = self.raw_body()
        try:
            data = json.loads(raw) if raw else {}
        except ValueError:
            raise _Refused(400, {"message": "Problems parsing JSON",
                                 "documentation_url": DOCS}) from None
        if isinstance(data, dict) and len(str(data.get("body") or "")) > BODY_LIMIT:
            raise _Refused(422, {"message": "Validation Failed", "documentation_url": DOCS,
                                 "errors": [{"resource": "Issue", "code": "custom",
                                             "field": "body", "message": "body is too long "
                                             f"(maximum is {BODY_LIMIT} characters)"}]})
        wrong = github_schema.check_request(self.endpoint, data)
        if wrong:
            raise _Refused(422, {"message": "Invalid request.\n\n"
                                 + "\n".join(v.problem for v in wrong),
                                 "documentation_url": DOCS})
        return data

    def guard(self, method: str) -> bool:
        version = self.headers.get("X-GitHub-Api-Version", API_VERSION)
        if version != API_VERSION:
            self.send(400, {"message": f"API version {version} is not supported.",
                            "documentation_url": DOCS, "status": "400"})
            return False
        auth = self.headers.get("Authorization", "")
        self.login = self.token = ""
        if not auth and method == "GET":
            return True  # every repository here is public: anyone may read it
        if not auth:
            self.send(401, {"message": "Requires authentication", "documentation_url": DOCS,
                            "status": "401"})
            return False
        scheme, _, token = auth.partition(" ")
        if scheme not in ("token", "Bearer") or token not in self.state.tokens:
            self.send(401, {"message": "Bad credentials",
                            "documentation_url": "https://docs.github.com/rest"})
            return False
        self.login, self.token = self.state.tokens[token], token
        if self.state.rate_limited:
            self.send(403, {"message": "API rate limit exceeded for user.",
                            "documentation_url": "https://docs.github.com/rest/rate-limit"})
            return False
        return True

    def route(self, method: str) -> None:
        url = urlparse(self.path)
        path = url.path.removeprefix(PREFIX)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        with self.state.lock:
            self.state.requests.append((method, path))
        self.endpoint, self.checked = "unrouted", True
        fault = self.state.take_fault(path)
        if fault is not None and fault.after:
            self.lost = fault
        elif fault is not None:
            self.checked = False  # a scripted fault may be any answer at all
            self.raw_body()  # the request is read whole, as GitHub's front end does
            if fault.raw is not None:
                return self.send_raw(fault.status, fault.raw)
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else None
            return self.send(fault.status, {
                "message": FAULT_BODIES[fault.status],
                "documentation_url": "https://docs.github.com/rest",
                "status": str(fault.status)}, headers)
        if not self.guard(method):
            return
        for pattern, name in _ROUTES:
            m = re.fullmatch(pattern, path)
            if m and name.startswith(method.lower() + "_"):
                self.endpoint = name
                try:
                    with self.state.lock:
                        getattr(self, name)(query, *m.groups())
                except _Refused as no:
                    self.send(no.status, no.payload)
                if self.state.after_answer is not None:
                    self.wfile.flush()
                    self.state.after_answer(method, path)
                return
        self.send(404, {"message": "Not Found", "documentation_url": "https://docs.github.com"})

    def do_GET(self) -> None:  # noqa: N802
        self.route("GET")

    def do_POST(self) -> None:  # noqa: N802
        self.route("POST")

    def do_PATCH(self) -> None:  # noqa: N802
        self.route("PATCH")

    def do_PUT(self) -> None:  # noqa: N802 - the merge endpoint; any other PUT is a 404
        self.route("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self.route("DELETE")

    def page(self, items: list[Any], query: dict[str, str], path: str) -> None:
        """One page, with GitHub's Link header: first and prev, next and last, as they apply."""
        per_page = int(query.get("per_page", 30))
        page = int(query.get("page", 1))
        chunk = items[(page - 1) * per_page : page * per_page]
        last = max(1, -(-len(items) // per_page))
        extra = "&".join(f"{k}={v}" for k, v in query.items() if k not in ("page", "per_page"))
        extra = f"&{extra}" if extra else ""
        rels = ([("first", 1), ("prev", page - 1)] if page > 1 else []) + (
            [("next", page + 1), ("last", last)] if page < last else [])
        links = [f'<{self.base()}{path}?per_page={per_page}&page={n}{extra}>; rel="{rel}"'
                 for rel, n in rels]
        self.send(200, chunk, {"Link": ", ".join(links)} if links else None)

    # -- objects ---------------------------------------------------------------------------

    def user_json(self, login: str) -> dict[str, Any]:
        api, web = f"{self.base()}/users/{login}", f"{WEB}/{login}"
        kind = "Bot" if login.endswith("[bot]") else "User"
        return {
            "login": login, "id": _num(login), "node_id": f"U_{_num(login)}",
            "avatar_url": f"{WEB}/avatars/{login}", "gravatar_id": "", "url": api,
            "html_url": web, "followers_url": f"{api}/followers",
            "following_url": f"{api}/following{{/other_user}}",
            "gists_url": f"{api}/gists{{/gist_id}}",
            "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/subscriptions", "organizations_url": f"{api}/orgs",
            "repos_url": f"{api}/repos", "events_url": f"{api}/events{{/privacy}}",
            "received_events_url": f"{api}/received_events", "type": kind,
            "site_admin": False,
        }

    def private_user_json(self, login: str) -> dict[str, Any]:
        counts = ("public_repos", "public_gists", "followers", "following", "private_gists",
                  "total_private_repos", "owned_private_repos", "disk_usage", "collaborators")
        return {**self.user_json(login), **dict.fromkeys(counts, 0), "name": login,
                "company": None, "blog": "", "location": None, "email": None,
                "hireable": None, "bio": None, "created_at": STAMP, "updated_at": STAMP,
                "two_factor_authentication": True}

    def repo_json(self, full: str, complete: bool = False, fork: bool = False
                  ) -> dict[str, Any]:
        owner, name = full.split("/")
        api = f"{self.base()}/repos/{full}"
        templated = {
            "archive_url": "{archive_format}{/ref}", "assignees_url": "/assignees{/user}",
            "blobs_url": "/git/blobs{/sha}", "branches_url": "/branches{/branch}",
            "collaborators_url": "/collaborators{/collaborator}",
            "comments_url": "/comments{/number}", "commits_url": "/commits{/sha}",
            "compare_url": "/compare/{base}...{head}", "contents_url": "/contents/{+path}",
            "contributors_url": "/contributors", "deployments_url": "/deployments",
            "downloads_url": "/downloads", "events_url": "/events", "forks_url": "/forks",
            "git_commits_url": "/git/commits{/sha}", "git_refs_url": "/git/refs{/sha}",
            "git_tags_url": "/git/tags{/sha}", "issue_comment_url": "/issues/comments{/number}",
            "issue_events_url": "/issues/events{/number}", "issues_url": "/issues{/number}",
            "keys_url": "/keys{/key_id}", "labels_url": "/labels{/name}",
            "languages_url": "/languages", "merges_url": "/merges",
            "milestones_url": "/milestones{/number}",
            "notifications_url": "/notifications{?since,all,participating}",
            "pulls_url": "/pulls{/number}", "releases_url": "/releases{/id}",
            "stargazers_url": "/stargazers", "statuses_url": "/statuses/{sha}",
            "subscribers_url": "/subscribers", "subscription_url": "/subscription",
            "tags_url": "/tags", "teams_url": "/teams", "trees_url": "/git/trees{/sha}",
            "hooks_url": "/hooks",
        }
        data: dict[str, Any] = {
            "id": _num(full), "node_id": f"R_{_num(full)}", "name": name, "full_name": full,
            "owner": self.user_json(owner), "private": False, "html_url": f"{WEB}/{full}",
            "description": None, "fork": fork, "url": api,
            **{k: f"{api}{'/' if k == 'archive_url' else ''}{v}" for k, v in templated.items()},
            "git_url": f"git://github.invalid/{full}.git",
            "ssh_url": f"git@github.invalid:{full}.git", "clone_url": f"{WEB}/{full}.git",
            "svn_url": f"{WEB}/{full}", "mirror_url": None, "homepage": None, "language": None,
            "forks_count": 0, "forks": 0, "stargazers_count": 0, "watchers_count": 0,
            "watchers": 0, "size": 0, "default_branch": "main",
            "open_issues_count": 0, "open_issues": 0, "has_issues": True,
            "has_projects": False, "has_wiki": False, "has_pages": False,
            "has_discussions": False, "archived": False,
            "disabled": False, "visibility": "public", "license": None,
            "pushed_at": STAMP, "created_at": STAMP, "updated_at": STAMP,
        }
        if complete:
            data.update(subscribers_count=0, network_count=0)
        return data

    def pull_json(self, full: str, p: Pull, simple: bool = False) -> dict[str, Any]:
        owner = full.split("/")[0]
        api, web = f"{self.base()}/repos/{full}", f"{WEB}/{full}"
        url = f"{api}/pulls/{p.number}"
        closed = None if p.state == "open" else STAMP
        head_sha, bare = p.head_sha, self.state.git.get(full)
        if p.state == "open" and bare is not None and bare.exists():  # an open PR follows its
            head_sha = _git(bare, "rev-parse", "--verify", "-q",  # branch, as on GitHub
                            f"refs/heads/{p.head}^{{commit}}") or head_sha
        head_full = full if p.head_repo == "" else p.head_repo
        head_owner = head_full.split("/")[0] if head_full else p.user
        data: dict[str, Any] = {
            "url": url, "id": p.number + 10_000, "node_id": f"PR_{p.number}",
            "html_url": f"{web}/pull/{p.number}", "diff_url": f"{web}/pull/{p.number}.diff",
            "patch_url": f"{web}/pull/{p.number}.patch",
            "issue_url": f"{api}/issues/{p.number}", "commits_url": f"{url}/commits",
            "review_comments_url": f"{url}/comments",
            "review_comment_url": f"{api}/pulls/comments{{/number}}",
            "comments_url": f"{api}/issues/{p.number}/comments",
            "statuses_url": f"{api}/statuses/{head_sha}",
            "number": p.number, "state": p.state, "locked": False, "title": p.title,
            "user": self.user_json(p.user), "body": p.body,
            "labels": [self.label_json(full, n) for n in p.labels], "milestone": None,
            "active_lock_reason": None, "created_at": _stamp(p.created),
            "updated_at": _stamp(p.created), "closed_at": closed,
            "merged_at": closed if p.merged else None,
            "assignees": [], "requested_reviewers": [],
            "requested_teams": [], "draft": p.draft,
            "head": {"label": f"{head_owner}:{p.head}", "ref": p.head, "sha": head_sha,
                     "repo": self.repo_json(head_full, fork=head_full != full)
                     if head_full else None, "user": self.user_json(head_owner)},
            "base": {"label": f"{owner}:{p.base}", "ref": p.base, "sha": "0" * 40,
                     "repo": self.repo_json(full), "user": self.user_json(owner)},
            "_links": {k: {"href": v} for k, v in {
                "self": url, "html": f"{web}/pull/{p.number}",
                "issue": f"{api}/issues/{p.number}",
                "comments": f"{api}/issues/{p.number}/comments",
                "review_comments": f"{url}/comments",
                "review_comment": f"{api}/pulls/comments{{/number}}",
                "commits": f"{url}/commits", "statuses": f"{api}/statuses/{head_sha}"}.items()},
            "author_association": "CONTRIBUTOR", "auto_merge": None,
        }
        if not simple:
            data.update(
                merged=p.merged, mergeable=None, rebaseable=None, mergeable_state="unknown",
                merged_by=None, comments=self._comment_count(full, p.number),
                review_comments=0, maintainer_can_modify=False, commits=len(p.commits),
                additions=0, deletions=0, changed_files=0)
        return data

    def commit_json(self, full: str, sha: str) -> dict[str, Any]:
        api = f"{self.base()}/repos/{full}"
        person = {"name": "A U Thor", "email": "author@example.com", "date": STAMP}
        return {
            "url": f"{api}/commits/{sha}", "sha": sha, "node_id": f"C_{sha[:8]}",
            "html_url": f"{WEB}/{full}/commit/{sha}",
            "comments_url": f"{api}/commits/{sha}/comments",
            "commit": {"url": f"{api}/git/commits/{sha}", "author": person,
                       "committer": person, "message": "", "comment_count": 0,
                       "tree": {"sha": "0" * 40, "url": f"{api}/git/trees/{'0' * 40}"}},
            "author": None, "committer": None, "parents": [],
        }

    def label_json(self, full: str, name: str, alone: bool = False) -> dict[str, Any]:
        """A label as a PR or issue embeds it; `alone`, as the labels endpoints answer."""
        return {"id": _num(name), "node_id": f"LA_{_num(name)}",
                "url": f"{self.base()}/repos/{full}/labels/{name}", "name": name,
                "description": None, "color": "ededed", "default": False,
                "archived_by": None, **({"archived_at": None} if alone else {})}

    def _comment_count(self, full: str, number: int) -> int:
        return sum(1 for c in self.state.repo(full).comments if c.issue == number)

    def issue_json(self, full: str, p: Pull | Issue) -> dict[str, Any]:
        """An issue, or a pull request seen as one, as GitHub's issues endpoints answer."""
        api, n = f"{self.base()}/repos/{full}", p.number
        data: dict[str, Any] = {
            "id": n + 20_000, "node_id": f"I_{n}", "url": f"{api}/issues/{n}",
            "repository_url": api, "labels_url": f"{api}/issues/{n}/labels{{/name}}",
            "comments_url": f"{api}/issues/{n}/comments", "events_url": f"{api}/issues/{n}/events",
            "html_url": f"{WEB}/{full}/issues/{n}", "number": n, "state": p.state,
            "title": p.title, "body": p.body, "user": self.user_json(p.user), "labels": [],
            "assignees": [], "milestone": None, "locked": False,
            "active_lock_reason": None, "comments": self._comment_count(full, n),
            "closed_at": None if p.state == "open" else STAMP,
            "created_at": _stamp(p.created), "updated_at": _stamp(p.created),
            "author_association": "CONTRIBUTOR",
        }
        if isinstance(p, Issue):
            data["state_reason"] = p.state_reason
            return data
        pull = self.pull_json(full, p)
        data.update(html_url=pull["html_url"], labels=pull["labels"], draft=p.draft,
                    pull_request={"url": pull["url"], "html_url": pull["html_url"],
                                  "diff_url": pull["diff_url"], "patch_url": pull["patch_url"],
                                  "merged_at": pull["merged_at"]})
        return data

    def comment_json(self, full: str, c: Comment) -> dict[str, Any]:
        api = f"{self.base()}/repos/{full}"
        return {"id": c.id, "node_id": f"IC_{c.id}", "body": c.body,
                "user": self.user_json(c.user), "url": f"{api}/issues/comments/{c.id}",
                "html_url": f"{WEB}/{full}/pull/{c.issue}#issuecomment-{c.id}",
                "issue_url": f"{api}/issues/{c.issue}", "created_at": _stamp(c.created),
                "updated_at": _stamp(c.created), "author_association": "CONTRIBUTOR"}

    def pull_or_404(self, full: str, number: str) -> Pull | None:
        p = self.state.repos.get(full, RepoState(full)).pulls.get(int(number))
        if p is None:
            self.send(404, {"message": "Not Found"})
        return p

    # -- endpoints -------------------------------------------------------------------------

    def get_rate_limit(self, q: dict[str, str]) -> None:
        core = {"limit": 5000, "remaining": 0 if self.state.rate_limited else 4999,
                "reset": int(time.time()) + 3600, "used": 1}
        self.send(200, {"resources": {"core": core, "search": core}})

    def get_user(self, q: dict[str, str]) -> None:
        if not self.headers.get("Authorization"):
            return self.send(401, {"message": "Requires authentication",
                                   "documentation_url": DOCS, "status": "401"})
        if self.token in self.state.apps:
            return self.send(403, {"message": "Resource not accessible by integration",
                                   "documentation_url": f"{DOCS}/users/users#get-the-"
                                   "authenticated-user", "status": "403"})
        self.send(200, self.private_user_json(self.login))

    def post_graphql(self, q: dict[str, str]) -> None:
        """GraphQL, as far as carry asks it: `{ viewer { login } }`, which answers for an
        installation token too (its bot account)."""
        b = self.body()
        if not self.login:
            return self.send(401, {"message": "This endpoint requires you to be "
                                   "authenticated.", "documentation_url": DOCS})
        if re.fullmatch(r"\s*(query\s*)?\{\s*viewer\s*\{\s*login\s*\}\s*\}\s*",
                        b.get("query", "")):
            return self.send(200, {"data": {"viewer": {"login": self.login}}})
        if "userContentEdits" in b.get("query", ""):
            return self.graphql_edits(b.get("variables") or {})
        self.send(200, {"errors": [{"message": "the double answers only viewer.login and an "
                                                "issue's userContentEdits"}]})

    def graphql_edits(self, v: dict[str, Any]) -> None:
        """`repository(owner, name) { issue(number) { userContentEdits(first: N) { nodes {
        editedAt editor { login } diff } } } }`: newest first, as GitHub lists them (so
        `first` takes the newest); `diff` is the body after that edit; a deleted account's
        editor is null."""
        full = f"{v.get('owner')}/{v.get('name')}"
        issue = self.state.repos.get(full, RepoState(full)).issues.get(int(v.get("number", 0)))
        if issue is None:
            return self.send(200, {"data": {"repository": None}, "errors": [{
                "type": "NOT_FOUND", "path": ["repository"],
                "message": f"Could not resolve to a Repository with the name '{full}'."}]})
        first = int(v.get("first", 100))
        if not 1 <= first <= 100:
            return self.send(200, {"data": None, "errors": [{
                "message": f"Requesting {first} records on the connection exceeds the "
                "`first` limit of 100 records."}]})
        start = int(v.get("after") or 0)  # the cursor: how many newer edits came before
        nodes = [{"editedAt": _stamp(at), "editor": {"login": who} if who else None,
                  "diff": text} for who, at, text in reversed(issue.edits)]
        page = nodes[start:start + first]
        info = {"hasNextPage": start + first < len(nodes),
                "endCursor": str(start + len(page)) if page else None}
        self.send(200, {"data": {"repository": {"issue": {"userContentEdits": {
            "nodes": page, "pageInfo": info}}}}})

    def get_permission(self, q: dict[str, str], full: str, login: str) -> None:
        """GET /repos/{o}/{r}/collaborators/{username}/permission: `permission` is the legacy
        level (maintain reads as write, triage as read), `role_name` the role itself."""
        from urllib.parse import unquote

        login = unquote(login)
        role = self.state.roles.get((full, login), "read")
        legacy = {"admin": "admin", "maintain": "write", "write": "write"}.get(role, "read")
        user = {**self.user_json(login), "role_name": role,
                "permissions": {"pull": True, "triage": role != "read",
                                "push": legacy in ("write", "admin"),
                                "maintain": role in ("maintain", "admin"),
                                "admin": role == "admin"}}
        self.send(200, {"permission": legacy, "role_name": role, "user": user})

    def get_repo(self, q: dict[str, str], full: str) -> None:
        if full not in self.state.repos:
            return self.send(404, {"message": "Not Found"})
        self.send(200, self.repo_json(full, complete=True))

    def get_pulls(self, q: dict[str, str], full: str) -> None:
        # GitHub's order: `sort` created (default), updated, popularity or long-running;
        # `direction` desc by default when sorting by creation, asc otherwise.
        sort = q.get("sort", "created")
        keys = {"created": lambda p: (p.created, p.number),
                "updated": lambda p: (p.created, p.number),
                "popularity": lambda p: (self._comment_count(full, p.number), p.number),
                "long-running": lambda p: (p.created, p.number)}
        if sort not in keys or q.get("direction", "desc") not in ("asc", "desc"):
            bad = "sort" if sort not in keys else "direction"
            return self.send(422, {"message": "Validation Failed", "documentation_url": DOCS,
                                   "errors": [{"resource": "PullRequest", "field": bad,
                                               "code": "invalid"}]})
        default = "desc" if sort == "created" else "asc"
        pulls = sorted(self.state.repo(full).pulls.values(), key=keys[sort],
                       reverse=q.get("direction", default) == "desc")
        want = q.get("state", "open")
        if want != "all":
            pulls = [p for p in pulls if p.state == want]
        if "base" in q:
            pulls = [p for p in pulls if p.base == q["base"]]
        if "head" in q:
            pulls = [p for p in pulls
                     if f"{(p.head_repo or full).split('/')[0]}:{p.head}" == q["head"]]
        self.page([self.pull_json(full, p, simple=True) for p in pulls], q,
                  f"/repos/{full}/pulls")

    def post_pulls(self, q: dict[str, str], full: str) -> None:
        b = self.body()
        missing = [k for k in ("title", "head", "base") if not b.get(k)]
        if missing:
            return self.send(422, {"message": "Validation Failed", "documentation_url": DOCS,
                                   "errors": [{"resource": "PullRequest", "field": k,
                                               "code": "missing_field"} for k in missing]})
        owner = full.split("/")[0]
        branch = b["head"].split(":", 1)[-1]
        r = self.state.repo(full)
        for p in r.pulls.values():
            if (p.state == "open" and p.head == branch and p.base == b["base"]
                    and p.head_repo == ""):
                return self.invalid(f"A pull request already exists for {owner}:{branch}.")
        head_sha, commits = "0" * 40, []
        bare = self.state.git.get(full)
        if bare is not None and bare.exists():  # the double knows the repository's git data
            shas = [_git(bare, "rev-parse", "--verify", "-q", f"refs/heads/{ref}^{{commit}}")
                    for ref in (branch, b["base"])]
            for field_name, sha in zip(("head", "base"), shas, strict=True):
                if not sha:
                    return self.send(422, {"message": "Validation Failed",
                                           "documentation_url": DOCS, "errors": [{
                                               "resource": "PullRequest", "field": field_name,
                                               "code": "invalid"}]})
            head_sha = shas[0]
            commits = _git(bare, "rev-list", "--reverse", f"{shas[1]}..{shas[0]}").split()
            if not commits:
                return self.invalid(f"No commits between {b['base']} and {branch}")
        pull = self.state.add_pull(full, title=b["title"], body=b.get("body") or "",
                                   head=branch, head_sha=head_sha, base=b["base"],
                                   user=self.login, draft=bool(b.get("draft")),
                                   commits=commits)
        self.send(201, self.pull_json(full, pull))

    def invalid(self, message: str) -> None:
        """GitHub's 422 for a rule about the pull request itself, in its words."""
        self.send(422, {"message": "Validation Failed", "documentation_url": DOCS,
                        "errors": [{"resource": "PullRequest", "code": "custom",
                                    "message": message}]})

    def put_merge(self, q: dict[str, str], full: str, number: str) -> None:
        p = self.pull_or_404(full, number)
        if p is None:
            return
        b = self.body()
        if p.state != "open":
            return self.send(405, {"message": "Pull Request is not mergeable",
                                   "documentation_url": DOCS, "status": "405"})
        if b.get("sha") and b["sha"] != p.head_sha:
            return self.send(409, {"message": "Head branch was modified. Review and try the "
                                              "merge again.", "documentation_url": DOCS,
                                   "status": "409"})
        p.state, p.merged = "closed", True
        p.merge_sha = hashlib.sha1(f"{full}#{p.number} {p.head_sha}".encode()).hexdigest()
        self.send(200, {"sha": p.merge_sha, "merged": True,
                        "message": "Pull Request successfully merged"})

    def get_pull(self, q: dict[str, str], full: str, number: str) -> None:
        p = self.pull_or_404(full, number)
        if p:
            self.send(200, self.pull_json(full, p))

    def patch_pull(self, q: dict[str, str], full: str, number: str) -> None:
        p = self.pull_or_404(full, number)
        if not p:
            return
        _edit(p, self.body())
        self.send(200, self.pull_json(full, p))

    def get_pull_commits(self, q: dict[str, str], full: str, number: str) -> None:
        p = self.pull_or_404(full, number)
        if p:
            items = [self.commit_json(full, sha) for sha in p.commits]
            self.page(items, q, f"/repos/{full}/pulls/{number}/commits")

    def get_comments(self, q: dict[str, str], full: str, number: str) -> None:
        items = [self.comment_json(full, c) for c in self.state.repo(full).comments
                 if c.issue == int(number)]
        self.page(items, q, f"/repos/{full}/issues/{number}/comments")

    def post_comments(self, q: dict[str, str], full: str, number: str) -> None:
        if self.issue_or_404(full, number) is None:
            return
        body = self.body().get("body", "")
        if self.state.before_comment is not None:
            self.state.before_comment(full, int(number), body)
        c = self.state.add_comment(full, int(number), body, self.login)
        self.send(201, self.comment_json(full, c))

    def issue_or_404(self, full: str, number: str) -> Pull | Issue | None:
        r = self.state.repos.get(full, RepoState(full))
        found = r.issues.get(int(number)) or r.pulls.get(int(number))
        if found is None:
            self.send(404, {"message": "Not Found"})
        return found

    def comment_or_404(self, full: str, cid: str) -> Comment | None:
        found = [c for c in self.state.repo(full).comments if c.id == int(cid)]
        if not found:
            self.send(404, {"message": "Not Found",
                            "documentation_url": "https://docs.github.com/rest"})
        return found[0] if found else None

    def get_repo_comments(self, q: dict[str, str], full: str) -> None:
        """Every issue and PR comment of the repository, oldest first unless `direction`
        says otherwise; `since` keeps those updated at or after it (ISO 8601, as GitHub)."""
        items = list(self.state.repo(full).comments)
        if "since" in q:
            try:
                since = calendar.timegm(time.strptime(q["since"], "%Y-%m-%dT%H:%M:%SZ"))
            except ValueError:
                return self.send(422, {"message": "Validation Failed",
                                       "documentation_url": DOCS, "errors": [{
                                           "resource": "IssueComment", "field": "since",
                                           "code": "invalid"}]})
            items = [c for c in items if c.created >= since]
        items.sort(key=lambda c: (c.created, c.id), reverse=q.get("direction") == "desc")
        self.page([self.comment_json(full, c) for c in items], q,
                  f"/repos/{full}/issues/comments")

    def get_comment(self, q: dict[str, str], full: str, cid: str) -> None:
        c = self.comment_or_404(full, cid)
        if c:
            self.send(200, self.comment_json(full, c))

    def delete_comment(self, q: dict[str, str], full: str, cid: str) -> None:
        c = self.comment_or_404(full, cid)
        if c is None:
            return
        self.state.repo(full).comments.remove(c)
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def get_issue_events(self, q: dict[str, str], full: str, number: str) -> None:
        """A merged PR's `merged` and `closed` events: where the merge commit is read."""
        p = self.issue_or_404(full, number)
        if p is None:
            return
        api = f"{self.base()}/repos/{full}"
        done = [("merged", p.merge_sha), ("closed", p.merge_sha)] if isinstance(
            p, Pull) and p.merged else [("closed", None)] if p.state == "closed" else []
        self.page([{"id": p.number * 100 + i, "node_id": f"E_{p.number}_{i}",
                    "url": f"{api}/issues/events/{p.number * 100 + i}",
                    "actor": self.user_json(self.state.user), "event": event,
                    "commit_id": sha, "commit_url": f"{api}/commits/{sha}" if sha else None,
                    "created_at": STAMP, "performed_via_github_app": None}
                   for i, (event, sha) in enumerate(done)], q,
                  f"/repos/{full}/issues/{number}/events")

    def get_issue(self, q: dict[str, str], full: str, number: str) -> None:
        p = self.issue_or_404(full, number)
        if p:
            self.send(200, self.issue_json(full, p))

    def get_issues(self, q: dict[str, str], full: str) -> None:
        """Issues and pull requests together, newest first, as GitHub lists them."""
        r = self.state.repo(full)
        items: list[Pull | Issue] = [*r.issues.values(), *r.pulls.values()]
        want = q.get("state", "open")
        if want != "all":
            items = [i for i in items if i.state == want]
        items.sort(key=lambda i: i.number, reverse=q.get("direction", "desc") == "desc")
        self.page([self.issue_json(full, i) for i in items], q, f"/repos/{full}/issues")

    def post_issues(self, q: dict[str, str], full: str) -> None:
        b = self.body()
        if not b.get("title"):
            return self.send(422, {"message": "Validation Failed",
                                   "errors": [{"resource": "Issue", "field": "title",
                                               "code": "missing_field"}]})
        issue = self.state.add_issue(full, title=b["title"], body=b.get("body") or "",
                                     user=self.login)
        self.send(201, self.issue_json(full, issue))

    def patch_issue(self, q: dict[str, str], full: str, number: str) -> None:
        p = self.issue_or_404(full, number)
        if not p:
            return
        b = self.body()
        if b.get("state", "open") not in ("open", "closed"):
            return self.send(422, {"message": "Validation Failed",
                                   "errors": [{"field": "state", "code": "invalid"}]})
        if isinstance(p, Issue) and "body" in b and b["body"] != p.body:
            if not p.edits:  # GitHub starts the history with the created revision
                p.edits.append((p.user, p.created, p.body))
            p.edits.append((self.login, time.time(), b["body"]))
        _edit(p, b)
        if isinstance(p, Issue) and "state" in b:
            p.state_reason = b.get("state_reason") if b["state"] == "closed" else "reopened"
        self.send(200, self.issue_json(full, p))

    def post_labels(self, q: dict[str, str], full: str, number: str) -> None:
        p = self.pull_or_404(full, number)
        if p:
            b = self.body()  # GitHub takes a bare list of names, or {"labels": [...]}
            names = b if isinstance(b, list) else b.get("labels", [])
            p.labels += [x for x in names if x not in p.labels]
            self.send(200, [self.label_json(full, n, alone=True) for n in p.labels])

    def get_search_issues(self, q: dict[str, str]) -> None:
        terms = q.get("q", "").split()
        repo = next((t.split(":", 1)[1] for t in terms if t.startswith("repo:")), "")
        words = [t.strip('"') for t in terms if ":" not in t]
        found = []
        for p in sorted(self.state.repo(repo).pulls.values(), key=lambda p: p.number):
            if "is:open" in terms and p.state != "open":
                continue
            if all(w in p.body or w in p.title for w in words):
                found.append({**self.issue_json(repo, p), "score": 1.0})
        per_page = int(q.get("per_page", 30))
        self.send(200, {"total_count": len(found), "incomplete_results": False,
                        "search_type": "lexical",
                        "items": found[:per_page]})


def _git(bare: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=bare, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def _edit(item: Pull | Issue, b: dict[str, Any]) -> None:
    for key in ("title", "body", "state"):
        if key in b:
            setattr(item, key, b[key])


_R = r"/repos/([\w.-]+/[\w.-]+)"
_ROUTES = [
    (r"/rate_limit", "get_rate_limit"),
    (r"/user", "get_user"),
    (r"/api/graphql", "post_graphql"),
    (r"/search/issues", "get_search_issues"),
    (_R, "get_repo"),
    (_R + r"/pulls", "get_pulls"),
    (_R + r"/pulls", "post_pulls"),
    (_R + r"/pulls/(\d+)", "get_pull"),
    (_R + r"/pulls/(\d+)", "patch_pull"),
    (_R + r"/pulls/(\d+)/commits", "get_pull_commits"),
    (_R + r"/pulls/(\d+)/merge", "put_merge"),
    (_R + r"/issues", "get_issues"),
    (_R + r"/issues", "post_issues"),
    (_R + r"/issues/(\d+)", "get_issue"),
    (_R + r"/issues/(\d+)", "patch_issue"),
    (_R + r"/issues/(\d+)/comments", "get_comments"),
    (_R + r"/issues/(\d+)/comments", "post_comments"),
    (_R + r"/issues/(\d+)/labels", "post_labels"),
    (_R + r"/issues/(\d+)/events", "get_issue_events"),
    (_R + r"/collaborators/([^/]+)/permission", "get_permission"),
    (_R + r"/issues/comments", "get_repo_comments"),
    (_R + r"/issues/comments/(\d+)", "get_comment"),
    (_R + r"/issues/comments/(\d+)", "delete_comment"),
]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client killed mid-request (the kill tests) is no error of the double's."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def __init__(self, state: GitHubState) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


@dataclass
class RunningServer:
    state: GitHubState
    server: _Server
    thread: threading.Thread

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}{PREFIX}"

    def stop(self) -> None:
        """Stop, and fail the test if the double ever answered outside GitHub's models."""
        self.server.shutdown()
        self.server.server_close()
        wrong = self.state.violations
        assert not wrong, "the GitHub double broke GitHub's schema:\n" + "\n".join(
            map(str, wrong))


def start(token: str) -> RunningServer:
    state = GitHubState(token)
    server = _Server(state)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return RunningServer(state, server, thread)
