"""The one place that talks to GitHub, through PyGithub.

Every PyGithub failure is turned into a one-line `CarryError` here (bad credentials, rate
limit, missing repository), so no token, header or traceback reaches the terminal. The token
comes from the environment only and is never echoed, logged or put in an error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from carry import redact
from carry.errors import CarryError

DEFAULT_API = "https://api.github.com"
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


@dataclass(frozen=True)
class CommentInfo:
    id: int
    body: str
    author: str


def api_url(explicit: str | None = None) -> str:
    """--api-url, then $GITHUB_API_URL (set by GitHub Actions and GHES), then github.com."""
    return (explicit or os.environ.get("GITHUB_API_URL") or DEFAULT_API).rstrip("/")


def token_from_env(var: str = "GITHUB_TOKEN") -> str:
    value = os.environ.get(var, "").strip()
    if not value:
        raise CarryError(f"no GitHub token: ${var} is not set",
                         hint=f"export {var}=... or pass --token-env NAME")
    redact.register(value)
    return value


@dataclass
class Forge:
    """A connection to one GitHub API; repositories are named `owner/name`."""

    url: str
    _gh: Any = field(repr=False, default=None)

    @classmethod
    def connect(cls, url: str, token: str) -> Forge:
        from github import Auth, Github

        # github.com asks integrations to space their writes; PyGithub does that by default.
        # Enterprise and loopback servers get no artificial delay.
        polite = url == DEFAULT_API
        gh = Github(
            base_url=url, auth=Auth.Token(token), retry=None, timeout=30, per_page=100,
            seconds_between_requests=0.25 if polite else None,
            seconds_between_writes=1.0 if polite else None,
        )
        return cls(url, gh)

    def _repo(self, full_name: str) -> Any:
        with self._errors(f"repository {full_name}"):
            return self._gh.get_repo(full_name)

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        from github import (
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
            detail = "; ".join(e.get("message") or e.get("code", "") for e in errors
                               if isinstance(e, dict))
            raise ForgeError(f"GitHub answered {exc.status} for {what}: "
                             f"{message}{': ' + detail if detail else ''}") from None
        except OSError as exc:
            raise ForgeError(f"cannot reach {self.url}: {exc.strerror or exc}") from None

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        with self._errors(what):
            return fn()

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


def _pull(p: Any) -> PullInfo:
    return PullInfo(
        number=p.number, title=p.title or "", body=p.body or "", state=p.state,
        draft=bool(p.draft), head=p.head.ref, head_sha=p.head.sha, base=p.base.ref,
        author=p.user.login if p.user else "", url=p.html_url or "",
    )


def _clock(epoch: str) -> str:
    import datetime as dt

    try:
        return dt.datetime.fromtimestamp(int(epoch), dt.UTC).strftime("%H:%M UTC")
    except ValueError:
        return epoch
