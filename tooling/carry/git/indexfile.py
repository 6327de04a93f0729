"""The index file format (version 2), written and read in-process for the few entries a patch
names: git's own `apply --cached` then runs on it as the one process of a patch, and no
`read-tree`, `ls-files` or `--build-fake-ancestor` run is needed around it."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping

from carry.git.objects import Entry

_HEAD = struct.Struct(">4sII")
_STAT = struct.Struct(">10I20sH")  # ctime, mtime (s, ns), dev, ino, mode, uid, gid, size


class IndexFormatError(Exception):
    """An index this reader does not take (a version or extension it does not know)."""


def encode(entries: Mapping[bytes, Entry]) -> bytes:
    """A version 2 index of stage-0 `entries` (path -> (mode, sha)), with zeroed stat data:
    only `--cached` commands read it, and they never look at the worktree."""
    out = [_HEAD.pack(b"DIRC", 2, len(entries))]
    for path in sorted(entries):
        mode, sha = entries[path]
        fixed = _STAT.pack(0, 0, 0, 0, 0, 0, int(mode, 8), 0, 0, 0, bytes.fromhex(sha),
                           min(len(path), 0xFFF))
        size = (len(fixed) + len(path) + 8) & ~7
        out.append(fixed + path + b"\0" * (size - len(fixed) - len(path)))
    body = b"".join(out)
    return body + hashlib.sha1(body, usedforsecurity=False).digest()


def decode(data: bytes) -> dict[bytes, Entry]:
    """The stage-0 entries (path -> (mode, sha)) of a version 2 or 3 index; anything else
    (version 4's compressed paths, a split index, a conflict stage) raises IndexFormatError."""
    if len(data) < _HEAD.size + 20:
        raise IndexFormatError("short index")
    sig, version, count = _HEAD.unpack_from(data)
    if sig != b"DIRC" or version not in (2, 3):
        raise IndexFormatError(f"index version {version}")
    entries: dict[bytes, Entry] = {}
    pos = _HEAD.size
    for _ in range(count):
        *stat, sha, flags = _STAT.unpack_from(data, pos)
        start = pos + _STAT.size + (2 if flags & 0x4000 else 0)
        if flags & 0x3000:
            raise IndexFormatError("an entry with a conflict stage")
        end = data.index(b"\0", start)
        entries[data[start:end]] = (b"%o" % stat[6], sha.hex())
        pos += (end - pos + 8) & ~7
    if data[pos:pos + 4] == b"link":
        raise IndexFormatError("a split index")
    return entries
