"""Trailers (`Signed-off-by:`, `Assisted-by:`, `Co-authored-by:` ...) and the trailer policy.

Parsing follows git's interpret-trailers rules closely enough that a test compares the two on
the same messages: the trailer block is the last paragraph after the subject, made only of
`Key: value` lines (with indented continuations), or at least 25% of them when one is a
`Signed-off-by:` or `(cherry picked from commit ...)` line that git itself writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TRAILER = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)\s*:\s?(.*)$")
_PERSON = re.compile(r"^[^<>]*[^<>\s][^<>]* <[^<>\s@]+@[^<>\s]+>$")
_GIT_WRITTEN = ("signed-off-by", "(cherry picked from commit ")


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
        if line[:1] in (" ", "\t") and trailers:
            prev = trailers[-1]
            trailers[-1] = Trailer(prev.key, f"{prev.value} {line.strip()}")
            continue
        if line.lower().startswith("(cherry picked from commit "):
            trailer_lines += 1
            git_written = True
            trailers.append(Trailer("(cherry picked from commit", line[27:].rstrip(")")))
            continue
        m = _TRAILER.match(line)
        if m:
            trailer_lines += 1
            git_written |= m.group(1).lower() == "signed-off-by"
            trailers.append(Trailer(m.group(1), m.group(2).strip()))
        else:
            other_lines += 1
    if other_lines == 0 or (git_written and trailer_lines * 3 >= other_lines):
        return trailers
    return []


def is_person(value: str) -> bool:
    return bool(_PERSON.match(value.strip()))


def find(trailers: list[Trailer], key: str) -> list[Trailer]:
    return [t for t in trailers if t.is_(key)]
