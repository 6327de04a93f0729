"""What a git diff says it starts from: for each path it reads, the entry it expects there.

format-patch writes `index <old>..<new> <mode>` with full ids (`--full-index`), so the entries
a patch reads can be taken from the patch itself, the way `git apply --build-fake-ancestor`
takes them, without a process. Anything this reader does not know for certain (an abbreviated
id, a name it cannot split) returns None, and the caller takes the slower path.
"""

from __future__ import annotations

import re

Expect = tuple[bytes | None, str | None]  # (mode, sha); None: whatever the tree holds

_INDEX = re.compile(rb"^index ([0-9a-f]{40})\.\.([0-9a-f]{40})(?: ([0-7]{6}))?$")
_NULL = "0" * 40
_OCTAL = re.compile(rb"[0-3][0-7][0-7]")
_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12,
            ord("r"): 13, ord('"'): 34, ord("\\"): 92}


def preimage(diff: bytes) -> dict[bytes, Expect] | None:
    """path -> the entry the diff expects there before it applies, for every path it reads
    (modified, deleted, renamed or copied from); None when the diff cannot be read for sure."""
    start = diff.find(b"diff --git ")
    if start < 0 or (start and diff[start - 1:start] != b"\n"):
        return None
    out: dict[bytes, Expect] = {}
    for section in re.split(rb"^(?=diff --git )", diff[start:], flags=re.M):
        try:
            got = _section(section) if section else None
        except _Unsure:
            return None
        if got is not None:
            out.setdefault(*got)
    return out


class _Unsure(Exception):
    """A section this reader cannot read for certain."""


def _section(section: bytes) -> tuple[bytes, Expect] | None:
    """(old path, expected entry), None for a new file; raises _Unsure."""
    lines = section.split(b"\n")
    head: dict[bytes, bytes] = {}
    index = None
    for line in lines[1:]:
        if line.startswith((b"@@", b"GIT binary patch", b"Binary files ")):
            break
        if (m := _INDEX.match(line)) is not None:
            index = m
            continue
        if line.startswith(b"index "):
            raise _Unsure  # abbreviated ids: only git can resolve them
        for key in (b"old mode ", b"deleted file mode ", b"new file mode ", b"rename from ",
                    b"copy from ", b"--- "):
            if line.startswith(key):
                head[key] = line[len(key):]
    if b"new file mode " in head:
        return None
    if b"rename from " in head or b"copy from " in head:
        path = _unquote(head.get(b"rename from ", head.get(b"copy from ", b"")))
    elif head.get(b"--- ", b"/dev/null") != b"/dev/null":
        name = _unquote(head[b"--- "].removesuffix(b"\t"))
        path = name[2:] if name is not None and name.startswith(b"a/") else None
    else:
        path = same_names(lines[0][len(b"diff --git "):])
    mode = head.get(b"old mode ") or head.get(b"deleted file mode ") or (
        index.group(3) if index else None)
    if not path:
        raise _Unsure
    sha = index.group(1).decode() if index else None
    if sha == _NULL:
        raise _Unsure
    return path, (mode, sha)


def same_names(names: bytes) -> bytes | None:
    """X from `a/X b/X`, the header of a section that neither renames nor copies."""
    if names.startswith(b'"'):
        m = re.fullmatch(rb'("(?:[^"\\]|\\.)*") ("(?:[^"\\]|\\.)*")', names)
        if m is None:
            return None
        a, b = _unquote(m.group(1)), _unquote(m.group(2))
        return a[2:] if a and b and a.startswith(b"a/") and b == b"b/" + a[2:] else None
    n, odd = divmod(len(names) - 5, 2)
    if odd or n <= 0 or names[:2] != b"a/" or names[2 + n:5 + n] != b" b/":
        return None
    return names[2:2 + n] if names[2:2 + n] == names[5 + n:] else None


def _unquote(name: bytes) -> bytes | None:
    """git's C-style quoting of a path, undone; an unquoted name is returned as it is."""
    if not name.startswith(b'"'):
        return name
    if len(name) < 2 or not name.endswith(b'"'):
        return None
    out, i, body = bytearray(), 0, name[1:-1]
    while i < len(body):
        c = body[i]
        if c != 0x5C:
            out.append(c)
            i += 1
        elif body[i + 1:i + 2].isdigit():  # exactly three octal digits, at most \377
            octal = body[i + 1:i + 4]
            if not _OCTAL.fullmatch(octal):
                return None
            out.append(int(octal, 8))
            i += 4
        elif i + 1 < len(body) and body[i + 1] in _ESCAPES:
            out.append(_ESCAPES[body[i + 1]])
            i += 2
        else:
            return None
    return bytes(out)
