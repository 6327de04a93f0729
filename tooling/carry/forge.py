"""The one place that talks to GitHub, through PyGithub.

Every PyGithub failure is turned into a one-line `CarryError` here (bad credentials, rate
limit, missing repository), so no token, header or traceback reaches the terminal. The token
comes from the environment only and is never echoed, logged or put in an error.

A scheduled job meets GitHub's throttles, so the answers GitHub documents as "try again" (a
secondary rate limit, 429, 502/503/504) are retried after the wait the answer names
(`Retry-After`, else `X-RateLimit-Reset`, else a short backoff), within one total budget
(`--max-wait`); each retry is one line on stderr, and past the budget the run stops with one
line. Anything else (401, 404, 422, 500, a primary limit that resets too late) fails at once.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from carry import redact
from carry.errors import CarryError

DEFAULT_API = "https://api.github.com"
DEFAULT_MAX_WAIT = 60.0
API_VERSION = "2026-03-10"  # the shapes carry reads; GitHub answers in them when asked
TOKEN_VARS = ("GH_TOKEN", "GITHUB_TOKEN")  # gh's order
T = TypeVar("T")


class ForgeError(CarryError):
    """GitHub refused or failed a request."""


@dataclass(frozen=True)
class PullInfo:
    number: int
    title: str
    body: str
    state: str
    draft: bool
    head: str
    head_sha: str
    base: str
    author: str
    url: str
    merged: bool = False
    merge_sha: str = ""
    labels: tuple[str, ...] = ()
    head_repo: str = ""  # owner/name of the head branch's repository; "" when it was deleted
    created: str = ""  # ISO 8601, UTC


@dataclass(frozen=True)
class CommentInfo:
    id: int
    body: str
    author: str


@dataclass(frozen=True)
class IssueInfo:
    number: int
    title: str
    body: str
    state: str
    url: str
    author: str = ""


def api_url(explicit: str | None = None) -> str:
    """--api-url, then $GITHUB_API_URL (set by GitHub Actions and GHES), then github.com."""
    url = (explicit or os.environ.get("GITHUB_API_URL") or DEFAULT_API).rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CarryError(f"the GitHub API URL {url!r} is not an http(s) URL",
                         hint="pass --api-url https://HOST/api/v3, or fix $GITHUB_API_URL")
    return url


def token_set(var: str | None = None) -> bool:
    """Whether `token_from_env` has a value to check (a dry run without one stays offline)."""
    return any(os.environ.get(name, "").strip() for name in ((var,) if var else TOKEN_VARS))


def token_from_env(var: str | None = None) -> str:
    """--token-env NAME, else $GH_TOKEN, else $GITHUB_TOKEN: the order gh reads them in."""
    names = (var,) if var else TOKEN_VARS
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            redact.register(value)
            if not (value.isascii() and value.isprintable() and " " not in value):
                raise CarryError(f"the token in ${name} holds characters that an HTTP header "
                                 "cannot carry (GitHub tokens are plain ASCII)",
                                 hint=f"check the value of ${name}")
            return value
    shown = " or ".join(f"${n}" for n in names)
    raise CarryError(f"no GitHub token: {shown} is not set",
                     hint="export GH_TOKEN=... or pass --token-env NAME")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Retry:
    """Why an answer may be tried again, and after how many seconds."""

    reason: str
    delay: float


def retry_of(exc: Exception, attempt: int, now: float) -> Retry | None:
    """The wait GitHub asks for, or None when the answer is final. GitHub's rule: honour
    `Retry-After`; else, with no requests left, wait until `X-RateLimit-Reset`; else back off."""
    from github import GithubException

    if not isinstance(exc, GithubException):
        return None
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    message = exc.data.get("message", "") if isinstance(exc.data, dict) else ""
    after = _seconds(headers.get("retry-after"))
    reset = _seconds(headers.get("x-ratelimit-reset"))
    exhausted = headers.get("x-ratelimit-remaining") == "0"
    backoff = float(min(2 ** (attempt - 1), 30))
    if exc.status in (502, 503, 504):
        return Retry(f"{exc.status} (server unavailable)",
                     after if after is not None else backoff)
    secondary = exc.status == 403 and (after is not None or _is_secondary(message))
    if exc.status == 429 or secondary:
        kind = "secondary rate limit" if secondary else "429 (too many requests)"
        if after is not None:
            return Retry(kind, after)
        if exhausted and reset is not None:
            return Retry(kind, max(0.0, reset - now))
        return Retry(kind, 60.0 if secondary else backoff)
    if exc.status == 403 and exhausted and reset is not None:
        return Retry("primary rate limit", max(0.0, reset - now))
    return None


def _is_secondary(message: str) -> bool:
    low = message.lower()
    return "secondary rate limit" in low or low.endswith((
        "please retry your request again later.",
        "please wait a few minutes before you try again."))


def _seconds(value: str | None) -> float | None:
    try:
        return None if value is None else max(0.0, float(value))
    except ValueError:
        return None


@dataclass(frozen=True)
class Access:
    """How to reach GitHub, from the CLI's --api-url, --token-env and --max-wait."""

    api: str | None = None
    token_env: str | None = None
    max_wait: float = DEFAULT_MAX_WAIT

    def connect(self) -> Forge:
        return Forge.connect(api_url(self.api), token_from_env(self.token_env), self.max_wait)


@dataclass
class Forge:
    """A connection to one GitHub API; repositories are named `owner/name`."""

    url: str
    _gh: Any = field(repr=False, default=None)
    max_wait: float = DEFAULT_MAX_WAIT
    log: Callable[[str], None] = field(repr=False, default=_stderr)
    _repos: dict[str, Any] = field(repr=False, default_factory=dict)
    _me: str | None = field(repr=False, default=None)

    @classmethod
    def connect(cls, url: str, token: str, max_wait: float = DEFAULT_MAX_WAIT) -> Forge:
        from github import Auth, Github

        # github.com asks integrations to space their writes; PyGithub does that by default.
        # Enterprise and loopback servers get no artificial delay.
        polite = url == DEFAULT_API
        gh = Github(
            base_url=url, auth=Auth.Token(token), retry=None, timeout=30, per_page=100,
            api_version=API_VERSION,
            seconds_between_requests=0.25 if polite else None,
            seconds_between_writes=1.0 if polite else None,
        )
        return cls(url, gh, max_wait=max(0.0, max_wait))

    def _repo(self, full_name: str) -> Any:
        """The repository, read once per run: a missing one fails on the first call."""
        if full_name not in self._repos:
            self._repos[full_name] = self._call(f"repository {full_name}",
                                                lambda: self._gh.get_repo(full_name))
        return self._repos[full_name]

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        from github import (
            BadAttributeException,
            BadCredentialsException,
            GithubException,
            RateLimitExceededException,
            UnknownObjectException,
        )

        try:
            yield
        except RateLimitExceededException as exc:
            reset = (exc.headers or {}).get("x-ratelimit-reset", "")
            when = f" until {_clock(reset)}" if reset else ""
            raise ForgeError(f"GitHub rate limit exceeded{when} while reading {what}",
                             hint="wait, or use a token with a higher limit") from None
        except BadCredentialsException:
            raise ForgeError("GitHub rejected the token (bad credentials)",
                             hint="check the token's value and scopes") from None
        except UnknownObjectException:
            raise ForgeError(f"GitHub has no {what} (or the token cannot see it)") from None
        except GithubException as exc:
            message = exc.data.get("message", "") if isinstance(exc.data, dict) else ""
            errors = exc.data.get("errors", []) if isinstance(exc.data, dict) else []
            errors = errors if isinstance(errors, list) else []
            detail = "; ".join(e.get("message") or e.get("code", "") for e in errors
                               if isinstance(e, dict))
            said = ": ".join(x for x in (message, detail) if x)
            raise ForgeError(f"GitHub answered {exc.status} for {what}: {said}") from None
        except OSError as exc:
            raise ForgeError(f"cannot reach {self.url}: {exc.strerror or exc}") from None
        except (ValueError, TypeError, KeyError, AttributeError, BadAttributeException) as exc:
            # A 200 that is not GitHub's JSON (a proxy's page, another shape): PyGithub fails
            # as it reads the object, whichever attribute that is.
            raise ForgeError(f"{self.url} gave an answer for {what} that is not GitHub's: "
                             f"{type(exc).__name__}",
                             hint="check --api-url / $GITHUB_API_URL") from None

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        """fn(), tried again while GitHub says to and the --max-wait budget lasts."""
        waited = 0.0
        attempt = 1
        while True:
            with self._errors(what):
                try:
                    return fn()
                except Exception as exc:
                    retry = retry_of(exc, attempt, time.time())
                    if retry is None or (retry.reason == "primary rate limit"
                                         and waited + retry.delay > self.max_wait):
                        raise
                    if waited + retry.delay > self.max_wait:
                        raise ForgeError(
                            f"GitHub {retry.reason} on {what}: it asks to wait "
                            f"{retry.delay:.0f} s more, past the {self.max_wait:.0f} s budget "
                            f"({waited:.0f} s waited over {attempt} attempt(s))",
                            hint="run again later, or raise --max-wait") from None
            self.log(f"carry: GitHub {retry.reason} on {what}; retry {attempt} in "
                     f"{retry.delay:.0f} s ({waited:.0f} of {self.max_wait:.0f} s waited)")
            time.sleep(retry.delay)
            waited += retry.delay
            attempt += 1

    def me(self) -> str:
        """The login of the token's account, read once: what carry opened is what this account
        opened (see owned.py)."""
        if self._me is None:
            self._me = self._call("the token's own account", self._whoami)
        return self._me

    def _whoami(self) -> str:
        """GET /user; a GitHub App's installation token (the Actions GITHUB_TOKEN) is refused
        there with a 403, and GraphQL's `viewer` names its bot account instead."""
        from github import GithubException

        try:
            login = self._gh.get_user().login
        except GithubException as exc:
            if exc.status != 403 or retry_of(exc, 1, time.time()) is not None:
                raise
            _, data = self._gh.requester.graphql_query("query { viewer { login } }", {})
            login = data["data"]["viewer"]["login"]
        if not isinstance(login, str) or not login:
            raise ValueError("no login")
        return login

    # -- pulls -----------------------------------------------------------------------------

    def open_pulls(self, full_name: str, base: str | None = None) -> list[PullInfo]:
        repo = self._repo(full_name)
        kw = {"state": "open", "sort": "created", "direction": "asc"}
        if base:
            kw["base"] = base
        return self._call(f"pull requests of {full_name}",
                          lambda: [_pull(p) for p in repo.get_pulls(**kw)])

    def pull(self, full_name: str, number: int) -> PullInfo:
        repo = self._repo(full_name)
        return self._call(f"pull request {full_name}#{number}",
                          lambda: _pull(repo.get_pull(number)))

    def pull_commits(self, full_name: str, number: int) -> list[str]:
        repo = self._repo(full_name)
        return self._call(f"commits of {full_name}#{number}",
                          lambda: [c.sha for c in repo.get_pull(number).get_commits()])

    def create_pull(self, full_name: str, title: str, body: str, head: str, base: str,
                    draft: bool) -> PullInfo:
        repo = self._repo(full_name)
        return self._call(
            f"a new pull request in {full_name}",
            lambda: _pull(repo.create_pull(title=redact.scrub(title), body=redact.scrub(body),
                                           head=head, base=base, draft=draft)))

    def edit_pull(self, full_name: str, number: int, **fields: str) -> PullInfo:
        repo = self._repo(full_name)

        def edit() -> PullInfo:
            pr = repo.get_pull(number)
            pr.edit(**{k: redact.scrub(v) for k, v in fields.items()})
            return _pull(repo.get_pull(number))

        return self._call(f"pull request {full_name}#{number}", edit)

    def comments(self, full_name: str, number: int) -> list[CommentInfo]:
        repo = self._repo(full_name)
        return self._call(
            f"comments of {full_name}#{number}",
            lambda: [CommentInfo(c.id, c.body or "", c.user.login)
                     for c in repo.get_issue(number).get_comments()])

    def comment(self, full_name: str, number: int, body: str) -> CommentInfo:
        repo = self._repo(full_name)

        def post() -> CommentInfo:
            c = repo.get_issue(number).create_comment(redact.scrub(body))
            return CommentInfo(c.id, c.body or "", c.user.login)

        return self._call(f"a comment on {full_name}#{number}", post)

    def merge_sha(self, full_name: str, number: int) -> str:
        """The commit a merged PR became on its base, from its `merged` event (the API version
        carry speaks has no `merge_commit_sha` on a pull request)."""
        repo = self._repo(full_name)
        return self._call(
            f"events of {full_name}#{number}",
            lambda: next((e.commit_id or "" for e in repo.get_issue(number).get_events()
                          if e.event == "merged"), ""))

    def comments_since(self, full_name: str, since: str) -> list[tuple[int, CommentInfo]]:
        """(issue or PR number, comment) for every comment of the repository written since
        `since` (ISO 8601; "" for all), oldest first: one listing, not one per PR."""
        import datetime as dt

        repo = self._repo(full_name)
        kw: dict[str, Any] = {"sort": "created", "direction": "asc"}
        if since:
            kw["since"] = dt.datetime.strptime(since, "%Y-%m-%dT%H:%M:%SZ").replace(
                tzinfo=dt.UTC)
        return self._call(
            f"comments of {full_name}",
            lambda: [(int(c.issue_url.rstrip("/").rsplit("/", 1)[1]),
                      CommentInfo(c.id, c.body or "", c.user.login if c.user else ""))
                     for c in repo.get_issues_comments(**kw)])

    def delete_comment(self, full_name: str, number: int, comment_id: int) -> None:
        repo = self._repo(full_name)
        self._call(f"comment {comment_id} on {full_name}#{number}",
                   lambda: repo.get_issue(number).get_comment(comment_id).delete())

    def add_label(self, full_name: str, number: int, label: str) -> None:
        repo = self._repo(full_name)
        self._call(f"labels of {full_name}#{number}",
                   lambda: repo.get_issue(number).add_to_labels(label))


    # -- issues (the CI loop's tracking issues) -------------------------------------------

    def open_issues(self, full_name: str, marker: str) -> list[IssueInfo]:
        """Open issues (not pull requests) whose body holds `marker`; the caller parses it.
        GitHub lists pull requests among issues, so they are left out here."""
        repo = self._repo(full_name)
        return self._call(
            f"issues of {full_name}",
            lambda: [_issue(i) for i in repo.get_issues(state="open", sort="created",
                                                        direction="asc")
                     if i.pull_request is None and marker in (i.body or "")])

    def create_issue(self, full_name: str, title: str, body: str) -> IssueInfo:
        repo = self._repo(full_name)
        return self._call(f"a new issue in {full_name}",
                          lambda: _issue(repo.create_issue(title=redact.scrub(title),
                                                           body=redact.scrub(body))))

    def edit_issue(self, full_name: str, number: int, **fields: str) -> None:
        """One PATCH: the issue object is lazy, so nothing is read first."""
        repo = self._repo(full_name)
        self._call(f"issue {full_name}#{number}", lambda: repo.get_issue(number).edit(
            **{k: redact.scrub(v) for k, v in fields.items()}))

    def close_issue(self, full_name: str, number: int, comment: str) -> CommentInfo:
        """Say why, then close: a reader of the closed issue sees the reason last."""
        posted = self.comment(full_name, number, comment)
        self.edit_issue(full_name, number, state="closed", state_reason="completed")
        return posted


def _issue(i: Any) -> IssueInfo:
    return IssueInfo(number=i.number, title=i.title or "", body=i.body or "", state=i.state,
                     url=i.html_url or "", author=i.user.login if i.user else "")


def _pull(p: Any) -> PullInfo:
    return PullInfo(
        number=p.number, title=p.title or "", body=p.body or "", state=p.state,
        draft=bool(p.draft), head=p.head.ref, head_sha=p.head.sha, base=p.base.ref,
        author=p.user.login if p.user else "", url=p.html_url or "",
        merged=p.merged_at is not None, labels=tuple(x.name for x in p.labels),
        head_repo=p.head.repo.full_name if p.head.repo else "",
        created=p.created_at.strftime("%Y-%m-%dT%H:%M:%SZ") if p.created_at else "",
    )


def _clock(epoch: str) -> str:
    import datetime as dt

    try:
        return dt.datetime.fromtimestamp(int(epoch), dt.UTC).strftime("%H:%M UTC")
    except ValueError:
        return epoch
