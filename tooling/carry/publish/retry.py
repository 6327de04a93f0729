"""When to ask GitHub again, and after how long: GitHub's documented rule (honour
`Retry-After`; else, with no requests left, wait until `X-RateLimit-Reset`; else back off),
for a secondary rate limit, 429 and 502/503/504. The caller (`Forge._call`) keeps the waits
within one total budget, `--max-wait`.

Why not PyGithub's own `GithubRetry` (a urllib3 `Retry`): it waits for a primary or secondary
limit's reset however far away it is (up to an hour), with no total budget a scheduled job can
bound, and it retries below carry, where carry cannot print its one line per retry or turn the
last failure into one line. So PyGithub runs with `retry=None` and this module decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


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
            return Retry(kind, max(backoff, reset - now))
        return Retry(kind, 60.0 if secondary else backoff)
    if exc.status == 403 and exhausted and reset is not None:
        # a reset already past (a server's clock, or its header) still waits: never a loop
        return Retry("primary rate limit", max(backoff, reset - now))
    return None


def _is_secondary(message: str) -> bool:
    low = message.lower()
    return "secondary rate limit" in low or low.endswith((
        "please retry your request again later.",
        "please wait a few minutes before you try again."))


def _seconds(value: str | None) -> float | None:
    try:
        seconds = None if value is None else float(value)
    except ValueError:
        return None
    return max(0.0, seconds) if seconds is not None and math.isfinite(seconds) else None
