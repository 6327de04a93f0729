"""Trailers (`Signed-off-by:`, `Assisted-by:`, `Co-authored-by:` ...) and the trailer policy.

Parsing follows git's interpret-trailers rules closely enough that a test compares the two on
the same messages: the trailer block is the last paragraph after the subject, made only of
`Key: value` lines (with indented continuations), or at least 25% of them when one is a
`Signed-off-by:` or `(cherry picked from commit ...)` line that git itself writes. Like git,
the cherry-pick note counts towards that share but is not itself a trailer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TRAILER = re.compile(r"^([A-Za-z0-9-]+)[ \t]*:(.*)$")
_PERSON = re.compile(r"^[^<>]*[^<>\s][^<>]* <[^<>\s@]+@[^<>\s]+>$")
_GIT_WRITTEN = ("Signed-off-by: ", "(cherry picked from commit ")  # git matches the case
_CHERRY = re.compile(r"^\(cherry picked from commit ([0-9a-f]{4,40})\)\s*$", re.M)


@dataclass(frozen=True)
class Trailer:
    key: str
    value: str

    def is_(self, key: str) -> bool:
        return self.key.lower() == key.lower()


def parse(message: bytes | str) -> list[Trailer]:
    text = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    # The subject paragraph can never hold trailers.
    start = next((i for i, ln in enumerate(lines) if not ln.strip()), len(lines))
    body = lines[start:]
    last_blank = max((i for i, ln in enumerate(body) if not ln.strip()), default=-1)
    if last_blank < 0:
        return []
    block = body[last_blank + 1 :]
    trailers: list[Trailer] = []
    trailer_lines = other_lines = 0
    git_written = False
    for line in block:
        if line.startswith("#"):  # git skips comment lines here, even in commit messages
            continue
        if line[:1] in (" ", "\t") and trailers:
            prev = trailers[-1]
            trailers[-1] = Trailer(prev.key, f"{prev.value} {line.strip()}")
            continue
        if line.startswith(_GIT_WRITTEN):
            git_written = True
        m = _TRAILER.match(line)
        if m:
            trailer_lines += 1
            trailers.append(Trailer(m.group(1), m.group(2).strip(" \t")))
        elif line.startswith(_GIT_WRITTEN):
            trailer_lines += 1  # a cherry-pick note counts as a trailer line but is not one
        else:
            other_lines += 1
    if other_lines == 0 or (git_written and trailer_lines * 3 >= other_lines):
        return trailers
    return []


def cherry_picked_from(message: bytes | str) -> list[str]:
    """The commits named by `(cherry picked from commit X)` notes, which git does not list
    among the trailers but which say where a patch came from."""
    text = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
    return _CHERRY.findall(text.replace("\r\n", "\n"))


def is_person(value: str) -> bool:
    return bool(_PERSON.match(value.strip()))


def find(trailers: list[Trailer], key: str) -> list[Trailer]:
    return [t for t in trailers if t.is_(key)]


def append(message: bytes, line: bytes) -> bytes:
    """`message` with the trailer `line` added where `git commit -s` puts a sign-off: at the end
    of its trailer block, or as a new last paragraph when it has none. Every other byte stays,
    the newlines after the last line too."""
    nl = b"\r\n" if b"\r\n" in message else b"\n"
    body = message.rstrip(b"\r\n")
    tail = message[len(body):]
    return body + (nl if parse(message) else nl + nl) + line + (tail or b"")
