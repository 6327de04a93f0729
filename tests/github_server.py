"""A stateful GitHub REST API server on 127.0.0.1 for the forge tests.

It keeps repositories, pulls, issue comments and labels in memory and answers in GitHub's
shapes (a subset of each object, checked against the fields PyGithub reads), with Link-header
pagination, token auth, search, and a switchable rate limit. Tests drive it through PyGithub's
real HTTP, so the requests and the error paths carry does are the ones GitHub would see.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

PREFIX = "/api/v3"


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
    commits: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    created: float = field(default_factory=time.time)


@dataclass
class Comment:
    id: int
    issue: int
    body: str
    user: str


@dataclass
class RepoState:
    full_name: str
    pulls: dict[int, Pull] = field(default_factory=dict)
    comments: list[Comment] = field(default_factory=list)
    next_number: int = 1


class GitHubState:
    """Everything the server knows; tests seed and inspect it directly."""

    def __init__(self, token: str, user: str = "carry-bot") -> None:
        self.token = token
        self.user = user
        self.repos: dict[str, RepoState] = {}
        self.rate_limited = False
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self._comment_id = 1000

    def repo(self, full_name: str) -> RepoState:
        return self.repos.setdefault(full_name, RepoState(full_name))

    def add_pull(self, full_name: str, number: int | None = None, **kw: Any) -> Pull:
        r = self.repo(full_name)
        n = number or r.next_number
        r.next_number = max(r.next_number, n + 1)
        pull = Pull(number=n, **kw)
        r.pulls[n] = pull
        return pull

    def add_comment(self, full_name: str, issue: int, body: str, user: str) -> Comment:
        self._comment_id += 1
        c = Comment(self._comment_id, issue, body, user)
        self.repo(full_name).comments.append(c)
        return c


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

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
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-RateLimit-Limit", "5000")
        self.send_header("X-RateLimit-Remaining", "0" if self.state.rate_limited else "4999")
        self.send_header("X-RateLimit-Reset", str(int(time.time()) + 3600))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        return json.loads(raw) if raw else {}

    def guard(self) -> bool:
        auth = self.headers.get("Authorization", "")
        if auth != f"token {self.state.token}" and auth != f"Bearer {self.state.token}":
            self.send(401, {"message": "Bad credentials",
                            "documentation_url": "https://docs.github.com/rest"})
            return False
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
        if not self.guard():
            return
        for pattern, name in _ROUTES:
            m = re.fullmatch(pattern, path)
            if m and name.startswith(method.lower() + "_"):
                with self.state.lock:
                    getattr(self, name)(query, *m.groups())
                return
        self.send(404, {"message": "Not Found", "documentation_url": "https://docs.github.com"})

    def do_GET(self) -> None:  # noqa: N802
        self.route("GET")

    def do_POST(self) -> None:  # noqa: N802
        self.route("POST")

    def do_PATCH(self) -> None:  # noqa: N802
        self.route("PATCH")

    def page(self, items: list[Any], query: dict[str, str], path: str) -> None:
        per_page = int(query.get("per_page", 30))
        page = int(query.get("page", 1))
        chunk = items[(page - 1) * per_page : page * per_page]
        links = []
        last = max(1, -(-len(items) // per_page))
        extra = "&".join(f"{k}={v}" for k, v in query.items() if k not in ("page", "per_page"))
        extra = f"&{extra}" if extra else ""
        if page < last:
            links.append(f'<{self.base()}{path}?per_page={per_page}&page={page + 1}{extra}>; '
                         'rel="next"')
            links.append(f'<{self.base()}{path}?per_page={per_page}&page={last}{extra}>; '
                         'rel="last"')
        self.send(200, chunk, {"Link": ", ".join(links)} if links else None)

    # -- objects ---------------------------------------------------------------------------

    def user_json(self, login: str) -> dict[str, Any]:
        return {"login": login, "id": abs(hash(login)) % 10**6, "type": "User",
                "url": f"{self.base()}/users/{login}",
                "html_url": f"http://github.invalid/{login}"}

    def repo_json(self, full: str) -> dict[str, Any]:
        owner, name = full.split("/")
        return {"id": abs(hash(full)) % 10**6, "name": name, "full_name": full,
                "owner": self.user_json(owner), "private": False,
                "url": f"{self.base()}/repos/{full}",
                "html_url": f"http://github.invalid/{full}", "default_branch": "main"}

    def pull_json(self, full: str, p: Pull) -> dict[str, Any]:
        owner = full.split("/")[0]
        return {
            "id": p.number + 10_000, "number": p.number, "state": p.state, "title": p.title,
            "body": p.body, "draft": p.draft, "merged": p.merged, "locked": False,
            "user": self.user_json(p.user),
            "url": f"{self.base()}/repos/{full}/pulls/{p.number}",
            "html_url": f"http://github.invalid/{full}/pull/{p.number}",
            "issue_url": f"{self.base()}/repos/{full}/issues/{p.number}",
            "comments_url": f"{self.base()}/repos/{full}/issues/{p.number}/comments",
            "commits_url": f"{self.base()}/repos/{full}/pulls/{p.number}/commits",
            "head": {"label": f"{owner}:{p.head}", "ref": p.head, "sha": p.head_sha,
                     "repo": self.repo_json(full), "user": self.user_json(owner)},
            "base": {"label": f"{owner}:{p.base}", "ref": p.base, "sha": "0" * 40,
                     "repo": self.repo_json(full), "user": self.user_json(owner)},
            "labels": [{"name": n, "color": "ededed"} for n in p.labels],
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(p.created)),
            "updated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(p.created)),
            "closed_at": None if p.state == "open" else "2026-12-03T00:00:00Z",
        }

    def issue_json(self, full: str, p: Pull) -> dict[str, Any]:
        """A pull request seen as an issue, as GitHub's issues endpoints answer."""
        data = self.pull_json(full, p)
        data["pull_request"] = {"url": data["url"], "html_url": data["html_url"]}
        data["url"] = data["issue_url"]
        data["comments"] = sum(1 for c in self.state.repo(full).comments if c.issue == p.number)
        return data

    def comment_json(self, full: str, c: Comment) -> dict[str, Any]:
        return {"id": c.id, "body": c.body, "user": self.user_json(c.user),
                "url": f"{self.base()}/repos/{full}/issues/comments/{c.id}",
                "html_url": f"http://github.invalid/{full}/pull/{c.issue}#issuecomment-{c.id}",
                "issue_url": f"{self.base()}/repos/{full}/issues/{c.issue}",
                "created_at": "2026-12-03T00:00:00Z", "updated_at": "2026-12-03T00:00:00Z"}

    def pull_or_404(self, full: str, number: str) -> Pull | None:
        p = self.state.repos.get(full, RepoState(full)).pulls.get(int(number))
        if p is None:
            self.send(404, {"message": "Not Found"})
        return p

    # -- endpoints -------------------------------------------------------------------------

    def get_rate_limit(self, q: dict[str, str]) -> None:
        core = {"limit": 5000, "remaining": 0 if self.state.rate_limited else 4999,
                "reset": int(time.time()) + 3600, "used": 1}
        self.send(200, {"resources": {"core": core, "search": core}, "rate": core})

    def get_user(self, q: dict[str, str]) -> None:
        self.send(200, self.user_json(self.state.user))

    def get_repo(self, q: dict[str, str], full: str) -> None:
        if full not in self.state.repos:
            return self.send(404, {"message": "Not Found"})
        self.send(200, self.repo_json(full))

    def get_pulls(self, q: dict[str, str], full: str) -> None:
        pulls = sorted(self.state.repo(full).pulls.values(), key=lambda p: -p.number)
        want = q.get("state", "open")
        if want != "all":
            pulls = [p for p in pulls if p.state == want]
        if "base" in q:
            pulls = [p for p in pulls if p.base == q["base"]]
        if "head" in q:
            pulls = [p for p in pulls if f"{full.split('/')[0]}:{p.head}" == q["head"]]
        self.page([self.pull_json(full, p) for p in pulls], q, f"/repos/{full}/pulls")

    def post_pulls(self, q: dict[str, str], full: str) -> None:
        b = self.body()
        missing = [k for k in ("title", "head", "base") if not b.get(k)]
        if missing:
            return self.send(422, {"message": "Validation Failed",
                                   "errors": [{"field": k, "code": "missing_field"}
                                              for k in missing]})
        r = self.state.repo(full)
        for p in r.pulls.values():
            if p.state == "open" and p.head == b["head"] and p.base == b["base"]:
                return self.send(422, {"message": "Validation Failed", "errors": [
                    {"code": "custom", "message": f"A pull request already exists for "
                                                  f"{b['head']}."}]})
        pull = self.state.add_pull(full, title=b["title"], body=b.get("body") or "",
                                   head=b["head"], head_sha=b.get("_head_sha", "0" * 40),
                                   base=b["base"], user=self.state.user,
                                   draft=bool(b.get("draft")))
        self.send(201, self.pull_json(full, pull))

    def get_pull(self, q: dict[str, str], full: str, number: str) -> None:
        p = self.pull_or_404(full, number)
        if p:
            self.send(200, self.pull_json(full, p))

    def patch_pull(self, q: dict[str, str], full: str, number: str) -> None:
        p = self.pull_or_404(full, number)
        if not p:
            return
        b = self.body()
        for key in ("title", "body", "state"):
            if key in b:
                setattr(p, key, b[key])
        self.send(200, self.pull_json(full, p))

    def get_pull_commits(self, q: dict[str, str], full: str, number: str) -> None:
        p = self.pull_or_404(full, number)
        if p:
            items = [{"sha": sha, "url": f"{self.base()}/repos/{full}/commits/{sha}",
                      "commit": {"message": ""}} for sha in p.commits]
            self.page(items, q, f"/repos/{full}/pulls/{number}/commits")

    def get_comments(self, q: dict[str, str], full: str, number: str) -> None:
        items = [self.comment_json(full, c) for c in self.state.repo(full).comments
                 if c.issue == int(number)]
        self.page(items, q, f"/repos/{full}/issues/{number}/comments")

    def post_comments(self, q: dict[str, str], full: str, number: str) -> None:
        if self.pull_or_404(full, number) is None:
            return
        c = self.state.add_comment(full, int(number), self.body().get("body", ""),
                                   self.state.user)
        self.send(201, self.comment_json(full, c))

    def get_issue(self, q: dict[str, str], full: str, number: str) -> None:
        p = self.pull_or_404(full, number)
        if p:
            self.send(200, self.issue_json(full, p))

    def post_labels(self, q: dict[str, str], full: str, number: str) -> None:
        p = self.pull_or_404(full, number)
        if p:
            p.labels += [x for x in self.body().get("labels", []) if x not in p.labels]
            self.send(200, [{"name": n, "color": "ededed"} for n in p.labels])

    def get_search_issues(self, q: dict[str, str]) -> None:
        terms = q.get("q", "").split()
        repo = next((t.split(":", 1)[1] for t in terms if t.startswith("repo:")), "")
        words = [t.strip('"') for t in terms if ":" not in t]
        found = []
        for p in sorted(self.state.repo(repo).pulls.values(), key=lambda p: p.number):
            if "is:open" in terms and p.state != "open":
                continue
            if all(w in p.body or w in p.title for w in words):
                found.append(self.issue_json(repo, p))
        per_page = int(q.get("per_page", 30))
        self.send(200, {"total_count": len(found), "incomplete_results": False,
                        "items": found[:per_page]})


_R = r"/repos/([\w.-]+/[\w.-]+)"
_ROUTES = [
    (r"/rate_limit", "get_rate_limit"),
    (r"/user", "get_user"),
    (r"/search/issues", "get_search_issues"),
    (_R, "get_repo"),
    (_R + r"/pulls", "get_pulls"),
    (_R + r"/pulls", "post_pulls"),
    (_R + r"/pulls/(\d+)", "get_pull"),
    (_R + r"/pulls/(\d+)", "patch_pull"),
    (_R + r"/pulls/(\d+)/commits", "get_pull_commits"),
    (_R + r"/issues/(\d+)", "get_issue"),
    (_R + r"/issues/(\d+)/comments", "get_comments"),
    (_R + r"/issues/(\d+)/comments", "post_comments"),
    (_R + r"/issues/(\d+)/labels", "post_labels"),
]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

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
        self.server.shutdown()
        self.server.server_close()


def start(token: str) -> RunningServer:
    state = GitHubState(token)
    server = _Server(state)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return RunningServer(state, server, thread)
