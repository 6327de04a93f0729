"""Secrets never leave carry: one scrubber for everything it prints, logs, sends or writes.

Two kinds of secret reach carry's text: URL credentials (`https://user:TOKEN@host/r.git` in a
--repo, a remote or $GITHUB_API_URL, echoed back by git or an HTTP error) and token values
(from $GH_TOKEN, $GITHUB_TOKEN or --token-env, which a series file, a server or the code under
test could echo). Scrubbing at the output, not at each message, also covers the messages
nobody thought of: carry's stdout and stderr (`Scrubbed`), every file it writes (`atomic`,
through `scrub_bytes`), the output of the steps it runs (`copy_scrubbed`), and what it sends.
A URL is stored (`series.toml`) only with its credentials removed (`strip_url`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import IO, Any, TextIO

MASK = "***"
# The variables a GitHub token is read from, in gh's order: the one list (forge reads them).
TOKEN_VARS = ("GH_TOKEN", "GITHUB_TOKEN")
# Variables that hold a URL carry may print (an API or index with credentials in it).
URL_VARS = ("GITHUB_API_URL", "PIP_INDEX_URL")
# scheme://userinfo@ : everything between the scheme and the last @ before the host. One or
# more slashes: a URL that went through a path normaliser (`Path("https://x:T@h")` is
# `https:/x:T@h`) still names its credentials.
_SCHEME = r"(?i)\b([a-z][a-z0-9+.-]*:/+)"
_USERINFO = re.compile(_SCHEME + r"([^/\s@'\"<>]+)@")
_USERINFO_B = re.compile(_SCHEME.encode() + rb"[^/\s@'\"<>]+@")
_MIN_SECRET = 6  # shorter values would mask ordinary words; no real token is that short
_LONE_USER = 20  # GitHub's tokens are 40 characters and more
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
    for name in URL_VARS:
        register_url(os.environ.get(name, ""))


def register_url(text: str) -> None:
    """The credentials of every URL in `text`, masked from now on in whatever form they come
    back (a path normaliser, git or an HTTP library may rewrite the URL around them)."""
    from urllib.parse import unquote

    for m in _USERINFO.finditer(text):
        userinfo = m.group(2)
        user, colon, password = userinfo.partition(":")
        # A user name alone is a token (`https://TOKEN@host`) only when it is that long;
        # `ssh://deploy@host` names an account, and masking it would mask the word everywhere.
        parts = [userinfo, password] if colon else [user] if len(user) >= _LONE_USER else []
        for part in parts:
            register(part)
            register(unquote(part))


def register_argv(argv: Sequence[str]) -> None:
    """What a command line hands carry: URLs with credentials, and `--token-env NAME`."""
    for i, arg in enumerate(argv):
        register_url(arg)
        if arg == "--token-env" and i + 1 < len(argv):
            register_env(argv[i + 1])
        elif arg.startswith("--token-env="):
            register_env(arg.partition("=")[2])


def _secrets_longest_first() -> list[str]:
    return sorted(_secrets, key=len, reverse=True)


def credential(name: str, value: str) -> bool:
    """Whether an environment variable holds a credential: one carry reads a token from, or
    one whose value holds a token carry has seen."""
    return name in _names or any(secret in value for secret in _secrets)


def scrub(text: str) -> str:
    text = _USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    for secret in _secrets_longest_first():
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def scrub_bytes(data: bytes) -> bytes:
    """`scrub` for bytes in any ASCII-compatible encoding (a log, a report, a file)."""
    data = _USERINFO_B.sub(lambda m: m.group(1) + MASK.encode() + b"@", data)
    for secret in _secrets_longest_first():
        raw = secret.encode("utf-8", "surrogateescape")
        if raw in data:
            data = data.replace(raw, MASK.encode())
    return data


def holds_secret(data: bytes) -> bool:
    """Whether a token value carry registered is in `data` (URL credentials aside)."""
    return any(secret.encode("utf-8", "surrogateescape") in data for secret in _secrets)


def copy_scrubbed(src: IO[bytes], dst: IO[bytes]) -> None:
    """Copy a step's output into its log line by line, scrubbed: a secret never spans a line
    (tokens hold no newline, URL credentials no blank)."""
    for line in iter(src.readline, b""):
        dst.write(scrub_bytes(line))


def url(value: str) -> str:
    """A URL fit for a message: its userinfo masked."""
    return _USERINFO.sub(lambda m: m.group(1) + MASK + "@", value)


def strip_url(value: str) -> str:
    """A URL fit to be stored (a manifest that is committed and pushed): no credentials at all,
    so that it still works for anyone who has their own."""
    return _USERINFO.sub(lambda m: m.group(1), value)


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
