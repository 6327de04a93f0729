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

from carry.base import redact
from carry.base.errors import CarryError
from carry.publish.retry import retry_of

DEFAULT_API = "https://api.github.com"
DEFAULT_MAX_WAIT = 60.0
API_VERSION = "2026-03-10"  # the shapes carry reads; GitHub answers in them when asked
TOKEN_VARS = redact.TOKEN_VARS  # gh's order; named once, in redact
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
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:  # `http://[::1/api`: urllib refuses a bracket left open
        ok = False
    if not ok:
        raise CarryError(f"the GitHub API URL {redact.url(url)!r} is not an http(s) URL",
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

    def gh_repo(self, full_name: str) -> Any:
        """The PyGithub repository (for repository.py), read once per run: a missing one fails
        on the first call."""
        if full_name not in self._repos:
            from carry.series.manifest import check_repo

            check_repo(full_name)  # `../../x` would reach another endpoint of the API
            self._repos[full_name] = self.call(f"repository {full_name}",
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
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError,
                RecursionError, BadAttributeException) as exc:
            # A 200 that is not GitHub's JSON (a proxy's page, another shape), or a header no
            # number fits (X-RateLimit-Reset: 1e400): PyGithub fails as it reads the object,
            # whichever attribute that is.
            raise ForgeError(f"{self.url} gave an answer for {what} that is not GitHub's: "
                             f"{type(exc).__name__}",
                             hint="check --api-url / $GITHUB_API_URL") from None

    def call(self, what: str, fn: Callable[[], T],
              lost: Callable[[], T | None] | None = None) -> T:
        """fn(), tried again while GitHub says to and the --max-wait budget lasts. A request
        that creates passes `lost`: a 502 may come after GitHub made the object, so before
        each retry `lost()` looks for it, and what it finds is the answer (never a second)."""
        waited = 0.0
        attempt = 1
        while True:
            if attempt > 1 and lost is not None:
                with self._errors(what):
                    found = lost()
                if found is not None:
                    self.log(f"carry: {what} was made before GitHub's answer was lost; "
                             "not made again")
                    return found
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
            self._me = self.call("the token's own account", self._whoami)
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



def _clock(epoch: str) -> str:
    import datetime as dt

    try:
        return dt.datetime.fromtimestamp(int(epoch), dt.UTC).strftime("%H:%M UTC")
    except (ValueError, OverflowError, OSError):  # a server's header: any number at all
        return epoch
