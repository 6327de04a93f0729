"""Secrets never leave carry: one scrubber for everything it prints, logs or sends.

Two kinds of secret reach carry's text: URL credentials (`https://user:TOKEN@host/r.git` in a
--repo, a remote or $GITHUB_API_URL, echoed back by git or an HTTP error) and token values
(from $GH_TOKEN, $GITHUB_TOKEN or --token-env, which a series file or a server could echo).
Scrubbing at the output, not at each message, also covers the messages nobody thought of.
"""

from __future__ import annotations

import os
import re
from typing import Any, TextIO

MASK = "***"
TOKEN_VARS = ("GH_TOKEN", "GITHUB_TOKEN")
# scheme://userinfo@ : everything between the scheme and the last @ before the host.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@'\"<>]+@")
_MIN_SECRET = 6  # shorter values would mask ordinary words; no real token is that short
_secrets: set[str] = set()
_names: set[str] = set(TOKEN_VARS)  # environment variables carry reads a token from


def register(value: str) -> None:
    """A value to mask wherever it appears from now on (a token carry read)."""
    value = value.strip()
    if len(value) >= _MIN_SECRET:
        _secrets.add(value)


def register_env(*names: str) -> None:
    """The tokens in these variables (and $GH_TOKEN, $GITHUB_TOKEN): masked in text, and the
    variables kept from the code carry does not trust (`childenv.untrusted_env`)."""
    for name in (*TOKEN_VARS, *names):
        _names.add(name)
        register(os.environ.get(name, ""))


def credential(name: str, value: str) -> bool:
    """Whether an environment variable holds a credential: one carry reads a token from, or
    one whose value holds a token carry has seen."""
    return name in _names or any(secret in value for secret in _secrets)


def scrub(text: str) -> str:
    text = _USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def url(value: str) -> str:
    """A URL fit for a message: its userinfo masked."""
    return _USERINFO.sub(lambda m: m.group(1) + MASK + "@", value)


class Scrubbed:
    """A text stream that scrubs every write: carry's stdout and stderr, so that rich, json and
    print all go through it."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(scrub(text))
        return len(text)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
