"""A patch applied in-process where `git apply --cached` could only do the same: the blob is
the one the patch's `index` line names, and every hunk's lines stand exactly where git looks
first (the `+` line number of the hunk, or the start or end of the file when git pins it there).

git's `apply_one_fragment` tries that position first and takes it on an exact match, so the
result is the same bytes; the new blob must also hash to the id the `index` line promises.
Anything else (an offset, fuzz, binary, a copy, a quoted or odd name, a link, CR or NUL bytes,
a line git would read some other way) raises NotExact, and the patch goes to git.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from carry.git import NULL_SHA, Entry
from carry.replay.preimage import same_names

Reader = Callable[[str], tuple[str, str, bytes]]  # sha -> (sha, type, body), cat-file --batch
Writer = Callable[[str, bytes], str]  # (type, body) -> sha

_HUNK = re.compile(rb"@@ -([0-9]{1,10})(?:,([0-9]{1,10}))? \+([0-9]{1,10})(?:,([0-9]{1,10}))? @@")
_INDEX = re.compile(rb"([0-9a-f]{40})\.\.([0-9a-f]{40})(?: (100644|100755))?")
_NO_EOL = b"\\ No newline at end of file"
_FILE_MODES = (b"100644", b"100755")
_KEYS = (b"old mode ", b"new mode ", b"deleted file mode ", b"new file mode ",
         b"similarity index ", b"rename from ", b"rename to ", b"index ", b"--- ", b"+++ ")


class NotExact(Exception):
    """A patch, or a part of one, that only git itself may apply."""


@dataclass(frozen=True)
class Hunk:
    old_pos: int
    new_pos: int
    old: tuple[bytes, ...]  # the lines it reads, each with its line end (if it has one)
    new: tuple[bytes, ...]  # the lines it leaves
    trailing: int  # context lines after its last change


@dataclass(frozen=True)
class Section:
    old_path: bytes | None  # None: a new file
    new_path: bytes | None  # None: a deleted file
    new_mode: bytes | None  # None: the mode the tree has
    old_sha: str | None  # from the `index` line, when there is one
    new_sha: str | None
    hunks: tuple[Hunk, ...]


def apply(diff: bytes, before: Mapping[bytes, Entry], read: Reader, write: Writer
          ) -> dict[bytes, Entry] | None:
    """The entries `git apply --cached` would leave in an index of `before` (the entries the
    patch reads, already checked against its `index` lines); None when only git may say."""
    try:
        sections = parse(diff)
        _distinct(sections)
        after = dict(before)
        blobs = []
        for s in sections:
            path, entry, data = _result(s, before, read)
            if s.old_path is not None:
                del after[s.old_path]
            if path is not None and entry is not None:
                after[path] = entry
            if data is not None:
                blobs.append(data)
    except NotExact:
        return None
    for data in blobs:
        write("blob", data)
    return after


def _result(s: Section, before: Mapping[bytes, Entry], read: Reader
            ) -> tuple[bytes | None, Entry | None, bytes | None]:
    """(new path, its entry, a blob to write) for one section."""
    if s.old_path is None:
        mode, sha, old = s.new_mode, None, b""
    elif (entry := before.get(s.old_path)) is not None:
        (mode, sha), old = entry, None
    else:
        raise NotExact
    if mode not in _FILE_MODES or s.old_sha not in (None, sha):
        raise NotExact
    mode = s.new_mode or mode
    if s.new_path is not None and sha is not None and not s.hunks and s.new_sha is None:
        return s.new_path, (mode, sha), None  # a rename or a mode change: the same blob
    if old is None and sha is not None:
        _, kind, old = read(sha)
        if kind != "blob":
            raise NotExact
    new = apply_hunks(old or b"", s.hunks)
    if s.new_path is None:
        if new:
            raise NotExact  # git: "removal patch leaves file contents"
        return None, None, None
    if blob_id(new) != s.new_sha:
        raise NotExact
    return s.new_path, (mode, s.new_sha), new


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _distinct(sections: list[Section]) -> None:
    """No path is named twice, and none lies under another (a file that becomes a directory):
    git orders such sections in ways this module does not follow."""
    paths: set[bytes] = set()
    for s in sections:
        for p in {s.old_path, s.new_path} - {None}:
            assert p is not None
            if p in paths:
                raise NotExact
            paths.add(p)
    for p in paths:
        parts = p.split(b"/")
        if any(b"/".join(parts[:i]) in paths for i in range(1, len(parts))):
            raise NotExact


def apply_hunks(data: bytes, hunks: tuple[Hunk, ...]) -> bytes:
    """`data` with each hunk applied where git looks first, or NotExact."""
    if b"\r" in data or b"\0" in data:
        raise NotExact
    lines = lines_of(data)
    out: list[bytes] = []
    done = 0  # lines of `data` already copied or replaced
    shift = 0  # lines the hunks so far added, less those they removed
    for h in hunks:
        first = h.new_pos - 1 if h.new_pos else 0  # where git looks first
        pos = first - shift  # the same line in `data`
        if h.old_pos <= 1 and first != 0:  # git pins the hunk to the start
            raise NotExact
        if not h.trailing and pos + len(h.old) != len(lines):  # ... or to the end
            raise NotExact
        if not done <= pos <= len(lines) - len(h.old) or \
                tuple(lines[pos:pos + len(h.old)]) != h.old:
            raise NotExact
        out += lines[done:pos]
        out += h.new
        done = pos + len(h.old)
        shift += len(h.new) - len(h.old)
    out += lines[done:]
    # No line but the last may lack its line end. Every line holds one "\n" at most, at its
    # end, so counting them in the result says it without a look at each line.
    result = b"".join(out)
    if out and result.count(b"\n") + (not out[-1].endswith(b"\n")) < len(out):
        raise NotExact
    return result


def lines_of(data: bytes) -> list[bytes]:
    """`data` cut after each newline (only), the last line with or without one."""
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def parse(diff: bytes) -> list[Section]:
    """The sections of a `git diff`, each checked to be a shape this module applies."""
    start = 0 if diff.startswith(b"diff --git ") else diff.find(b"\ndiff --git ") + 1
    if not start and not diff.startswith(b"diff --git ") or not diff.endswith(b"\n"):
        raise NotExact
    lines = diff[:-1].split(b"\n")
    i = diff.count(b"\n", 0, start)
    if any(ln and ln != b"---" and not ln.startswith(b" ") for ln in lines[:i]):
        raise NotExact  # only format-patch's `---` and diffstat may come first
    out = []
    while i < len(lines):
        if not lines[i].startswith(b"diff --git "):
            _tail(lines[i:])
            break
        section, i = _section(lines, i)
        out.append(section)
    return out


def _tail(rest: list[bytes]) -> None:
    """What may follow the last hunk: blank lines, or format-patch's `-- ` signature."""
    if rest[0] == b"-- " and len(rest) > 1 and rest[1][:1] not in (b"", b"@", b"-", b"+"):
        rest = rest[2:]
    if any(rest):
        raise NotExact


def _section(lines: list[bytes], i: int) -> tuple[Section, int]:
    names = lines[i][len(b"diff --git "):]
    i += 1
    head: dict[bytes, bytes] = {}
    while i < len(lines) and (key := next((k for k in _KEYS if lines[i].startswith(k)),
                                          None)) is not None:
        if key in head:
            raise NotExact
        head[key] = lines[i][len(key):]
        i += 1
    hunks = []
    while i < len(lines) and lines[i].startswith(b"@@ -"):
        hunk, i = _hunk(lines, i)
        hunks.append(hunk)
    return _shape(names, head, tuple(hunks)), i


def _shape(names: bytes, head: dict[bytes, bytes], hunks: tuple[Hunk, ...]) -> Section:
    """The section its header lines describe, if it is one of the plain shapes."""
    if b'"' in names or b"\\" in names:
        raise NotExact  # a quoted name
    kinds = [k for k in (b"new file mode ", b"deleted file mode ", b"old mode ", b"rename from ",
                        b"similarity index ") if k in head]
    if kinds[:1] in ([b"new file mode "], [b"deleted file mode "]) and len(kinds) > 1:
        raise NotExact  # a file made or removed that also changes mode or name
    index = _INDEX.fullmatch(head[b"index "]) if b"index " in head else None
    if (b"index " in head and index is None) or (b"old mode " in head) != (b"new mode " in head):
        raise NotExact
    old_sha, new_sha = (index.group(1).decode(), index.group(2).decode()) if index else (None,
                                                                                         None)
    new_mode = head.get(b"new mode ") or head.get(b"new file mode ")
    if (new_mode is not None and new_mode not in _FILE_MODES) or hunks and index is None:
        raise NotExact
    if b"rename from " in head or b"rename to " in head or b"similarity index " in head:
        old, new = head.get(b"rename from "), head.get(b"rename to ")
        if old is None or new is None or names != b"a/" + old + b" b/" + new or old == new:
            raise NotExact
    else:
        old = new = same_names(names)
    if b"new file mode " in head:
        old = None
        if old_sha != NULL_SHA or any(h.old for h in hunks):
            raise NotExact
        old_sha = None
    if b"deleted file mode " in head:
        new = None
        if new_sha not in (NULL_SHA, None) or any(h.new for h in hunks) or b"new mode " in head:
            raise NotExact
        new_sha = None
    _names_match(head, old, new, bool(hunks))
    if not (hunks or b"new mode " in head or b"rename to " in head or b"new file mode " in head
            or b"deleted file mode " in head):
        raise NotExact
    return Section(old, new, new_mode, old_sha, new_sha, hunks)


def _names_match(head: dict[bytes, bytes], old: bytes | None, new: bytes | None,
                 hunks: bool) -> None:
    """`---`/`+++` lines that name the section's own paths (only where it has hunks), and
    paths git takes as they are."""
    if old is None and new is None:
        raise NotExact
    for p in (old, new):
        if p is not None and not _plain_path(p):
            raise NotExact
    want = (b"a/" + old if old is not None else b"/dev/null",
            b"b/" + new if new is not None else b"/dev/null")
    got = (head.get(b"--- "), head.get(b"+++ "))
    if hunks and tuple(g.removesuffix(b"\t") if g else g for g in got) != want:
        raise NotExact
    if not hunks and got != (None, None):
        raise NotExact


def _plain_path(path: bytes) -> bool:
    return all(p not in (b"", b".", b"..") and p.lower() != b".git" for p in path.split(b"/"))


def _hunk(lines: list[bytes], i: int) -> tuple[Hunk, int]:
    m = _HUNK.match(lines[i])
    if m is None:
        raise NotExact
    want_old = int(m.group(2)) if m.group(2) is not None else 1
    want_new = int(m.group(4)) if m.group(4) is not None else 1
    old: list[bytes] = []
    new: list[bytes] = []
    trailing = changes = 0
    i += 1
    for kind, line in _body(lines, i):
        i += 1 + (line[-1:] != b"\n")
        if kind != b"+":
            old.append(line)
        if kind != b"-":
            new.append(line)
        trailing = trailing + 1 if kind == b" " else 0
        changes += kind != b" "
        if len(old) > want_old or len(new) > want_new:
            raise NotExact
        if len(old) == want_old and len(new) == want_new:
            break
    if len(old) != want_old or len(new) != want_new or not changes:
        raise NotExact
    return Hunk(int(m.group(1)), int(m.group(3)), tuple(old), tuple(new), trailing), i


def _body(lines: list[bytes], i: int) -> Iterator[tuple[bytes, bytes]]:
    """(kind, line with its line end) for each line of a hunk from `lines[i]` on; a line
    followed by git's "\\ No newline at end of file" has none."""
    while i < len(lines):
        kind = lines[i][:1]
        if kind not in (b" ", b"-", b"+") or b"\r" in lines[i] or b"\0" in lines[i]:
            raise NotExact
        eol = lines[i + 1] != _NO_EOL if i + 1 < len(lines) else True
        yield kind, lines[i][1:] + (b"\n" if eol else b"")
        i += 1 + (not eol)
    raise NotExact
