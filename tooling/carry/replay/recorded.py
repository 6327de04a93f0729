"""Recorded resolutions, as text: how a conflicted hunk is keyed, the file format, and
loading a series' resolutions (`rerere` applies them).

A recorded resolution is a conflict a maintainer resolved once, kept in the series folder
(`resolutions/`) and applied by every later replay that meets the same conflict again, on any
target, in CI or on another clone; git's rerere keeps them in one clone's `.git` instead.

As in rerere a conflict is known by its content, not by where it sits. Each conflicted hunk,
as `merge-tree` writes it in diff3 style (ours, base, theirs), is hashed with its two sides
sorted, so that which side is upstream's does not matter; the base is part of the key, so a
hunk matches only where both sides and what they changed are the same. The surrounding lines
are not part of it. A replay puts each conflicted hunk's recorded text in its place, and
counts the patch as resolved only when every hunk of every conflicted path has one: a
conflict with one hunk nobody resolved is a different conflict, and still stops.

Only content conflicts are recorded: a modify/delete, rename, mode or binary conflict has
no hunks to key. A resolution belongs to its patch (numbers are identities for life) and is
one text file per conflicted path, `NNNN-<conflict id>.txt`, reviewed in a diff like the
patches (format below, `dump`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from carry.base.errors import CarryError
from carry.base.untrusted import BadData, ascii_int, loads_json
from carry.series.store import (
    RESOLUTION_DIR,
    RESOLUTION_LIMIT,
    RESOLUTION_NAME,
    list_resolutions,
    read_regular,
)

Lines = tuple[bytes, ...]  # each with its b"\n", but perhaps a file's last one
FORMAT = "carry resolution 1"
_SIZE = 7  # git's default conflict-marker-size
REGULAR = (b"100644", b"100755")
_NO_EOL = "\\ No newline at end of file"


def split_lines(data: bytes) -> list[bytes]:
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    return out + [parts[-1]] if parts[-1] else out


@dataclass(frozen=True)
class Hunk:
    """One conflicted hunk: upstream's side, the base, the patch's side."""

    ours: Lines
    base: Lines
    theirs: Lines

    def key(self) -> str:
        """The hunk's id: its sides sorted, then its base, each line length-prefixed."""
        h = hashlib.sha256(b"carry-conflict-hunk-1\0")
        for part in (*sorted((self.ours, self.theirs)), self.base):
            h.update(b"%d\n" % len(part))
            for line in part:
                h.update(b"%d:" % len(line) + line)
        return h.hexdigest()

    def sides(self) -> tuple[Lines, Lines]:
        a, b = sorted((self.ours, self.theirs))
        return a, b


@dataclass(frozen=True)
class Marked:
    """A file as the merge left it: `context[0]`, hunk 1, `context[1]`, ..., `context[n]`."""

    context: tuple[Lines, ...]
    hunks: tuple[Hunk, ...]

    def fill(self, texts: Sequence[Lines]) -> bytes:
        """The file with hunk i replaced by `texts[i]`."""
        out = list(self.context[0])
        for text, after in zip(texts, self.context[1:], strict=True):
            out += [*text, *after]
        return b"".join(out)


_MARKS = (b"<", b"|", b"=", b">")


def _is(line: bytes, ch: bytes) -> bool:
    body = line.rstrip(b"\r\n")
    return body == ch * _SIZE or body.startswith(ch * _SIZE + b" ")


def parse_marked(data: bytes) -> Marked | None:
    """The hunks of a diff3-style conflicted file, or None when its markers are not exactly
    diff3's (a side holding marker-like lines, or another style): such a conflict is not
    keyed, and a replay stops at it as before."""
    context: list[list[bytes]] = [[]]
    hunks: list[Hunk] = []
    part: list[list[bytes]] = []
    for line in split_lines(data):
        marker = line[:1] in _MARKS  # a cheap first look: most lines are not markers
        if not part:
            if marker and _is(line, b"<"):
                part = [[]]
            else:
                context[-1].append(line)
            continue
        if not marker:
            part[-1].append(line)
            continue
        step = {1: b"|", 2: b"=", 3: b">"}[len(part)]
        if _is(line, step):
            if len(part) < 3:
                part.append([])
                continue
            hunks.append(Hunk(tuple(part[0]), tuple(part[1]), tuple(part[2])))
            context.append([])
            part = []
        elif any(_is(line, ch) for ch in (b"<", b"|", b"=", b">")):
            return None
        else:
            part[-1].append(line)
    if part or not hunks:
        return None
    return Marked(tuple(tuple(c) for c in context), tuple(hunks))


def align(marked: Marked, resolved: Sequence[bytes]) -> list[Lines] | None:
    """What replaced each hunk in the maintainer's `resolved` file, anchored on the lines
    between the hunks, which must all still be there, unchanged and in order; None when they
    are not (lines outside the conflict were changed too, which no hunk can carry). Each
    block of context is taken at its first place after the previous one, so that filling
    the hunks back gives `resolved` exactly."""
    ctx, res = marked.context, list(resolved)
    pos, end = len(ctx[0]), len(res) - len(ctx[-1])
    if end < pos or res[:pos] != list(ctx[0]) or res[end:] != list(ctx[-1]):
        return None
    out: list[Lines] = []
    for block in ctx[1:-1]:
        at = find_block(res, list(block), pos, end)
        if at is None:
            return None
        out.append(tuple(res[pos:at]))
        pos = at + len(block)
    out.append(tuple(res[pos:end]))
    return out


def find_block(lines: list[bytes], block: list[bytes], start: int, end: int) -> int | None:
    """Where `block` first stands, as consecutive lines of `lines[start:end]`."""
    for i in range(start, end - len(block) + 1):
        if lines[i:i + len(block)] == block:
            return i
    return None


# -- one recorded file --------------------------------------------------------------------------


@dataclass(frozen=True)
class Resolution:
    """A conflicted path of one patch and, for each of its hunks, the text that resolves it."""

    patch: int
    path: str
    hunks: tuple[tuple[Hunk, Lines], ...]
    version: int = 0  # the series version that first held it
    note: str = ""  # where it was recorded: the target and its commit

    @property
    def conflict_id(self) -> str:
        h = hashlib.sha256(b"carry-conflict-1\0")
        for hunk, _ in self.hunks:
            h.update(hunk.key().encode() + b"\n")
        return h.hexdigest()

    @property
    def name(self) -> str:
        return f"{self.patch:04d}-{self.conflict_id[:16]}"

    @property
    def file_name(self) -> str:
        return f"{self.name}.txt"

    def same(self, other: Resolution) -> bool:
        """The same conflict with the same resolution, whichever side was which."""
        return (self.patch, [(h.key(), t) for h, t in self.hunks]) == (
            other.patch, [(h.key(), t) for h, t in other.hunks])

    def dump(self, patch_file: str = "") -> bytes:
        """The file's text. Every section is a count and that many lines, each behind one
        space; a last line without its newline is followed by diff's own marker for that.
        Raises ValueError for content that is not UTF-8, which a text file cannot hold."""
        head = [FORMAT,
                "# A conflict this patch met, resolved by hand and recorded by `carry rebase "
                "--continue`.",
                "# A replay of the patch that meets every hunk below again puts each "
                "resolution in its place.",
                f"patch {self.patch:04d}" + (f" {json.dumps(patch_file)}" if patch_file else ""),
                f"path {json.dumps(self.path)}", f"version {self.version}"]
        if self.note:
            head.append(f"recorded {json.dumps(self.note)}")
        head.append(f"hunks {len(self.hunks)}")
        out = [line + "\n" for line in head]
        for i, (hunk, text) in enumerate(self.hunks, 1):
            a, b = hunk.sides()
            out.append(f"\nhunk {i}\n")
            for label, lines in (("side", a), ("side", b), ("base", hunk.base),
                                 ("resolution", text)):
                out.append(f"{label} {len(lines)}\n")
                for line in lines:
                    body = line.decode("utf-8")
                    out.append(" " + body + ("" if body.endswith("\n") else f"\n{_NO_EOL}\n"))
        return "".join(out).encode("utf-8")


def parse(data: bytes, where: str) -> Resolution:
    """A resolution file back, or a one-line error naming the file and the line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CarryError(f"{where}: not UTF-8 (byte {exc.start})",
                         hint="a resolution file is text; fix it or remove it") from None
    reader = _Reader(text.split("\n"), where)
    if reader.next() != FORMAT:
        reader.fail(f"does not start with {FORMAT!r}")
    fields: dict[str, str] = {}
    while True:
        line = reader.next()
        if line.startswith("#"):
            continue
        key, _, value = line.partition(" ")
        if key not in ("patch", "path", "version", "recorded", "hunks") or key in fields:
            reader.fail(f"unexpected {line[:40]!r}")
        fields[key] = value
        if key == "hunks":
            break
    raw_number, _, _ = fields.get("patch", "").partition(" ")
    # ASCII digits only (`²` is isdigit() yet no int()), and no count of more lines than the
    # file has (5,000 digits are past int()'s limit)
    number = ascii_int(raw_number, 4) if len(raw_number) == 4 else None
    count, version = ascii_int(fields["hunks"]), ascii_int(fields.get("version", ""))
    if number is None or count is None or version is None or "path" not in fields:
        reader.fail("needs patch NNNN, path, version N and hunks N")
    if count > len(reader.lines):
        reader.fail(f"hunks {count}: more than the file's lines")
    path, note = reader.string(fields["path"]), reader.string(fields.get("recorded", '""'))
    hunks = []
    for i in range(1, count + 1):
        while (line := reader.next()) == "":
            pass
        if line != f"hunk {i}":
            reader.fail(f"expected 'hunk {i}'")
        a, b, base, fix = (reader.section(label)
                           for label in ("side", "side", "base", "resolution"))
        hunks.append((Hunk(a, base, b), fix))
    if any(line.strip() for line in reader.rest()):
        reader.fail("text after the last hunk")
    return Resolution(number, path, tuple(hunks), version, note)


@dataclass
class _Reader:
    lines: list[str]
    where: str
    at: int = 0

    def fail(self, why: str) -> NoReturn:
        raise CarryError(f"{self.where}: not a carry resolution: line {self.at}: {why}",
                         hint="fix the file or remove it; carry status NAME lists them")

    def next(self) -> str:
        if self.at >= len(self.lines):
            self.fail("ends too soon")
        self.at += 1
        return self.lines[self.at - 1]

    def rest(self) -> list[str]:
        return self.lines[self.at:]

    def string(self, raw: str) -> str:
        try:  # the one untrusted reader: a string nested 100,000 deep is no RecursionError
            value = loads_json(raw.encode("utf-8", "surrogateescape"))
        except BadData:
            value = None
        if not isinstance(value, str):
            self.fail(f"{raw[:40]!r} is not a quoted string")
        return str(value)

    def section(self, label: str) -> Lines:
        head = self.next()
        word, _, raw = head.partition(" ")
        count = ascii_int(raw)
        if word != label or count is None or count > len(self.lines):
            self.fail(f"expected '{label} N'")
        out = []
        for _ in range(count):
            line = self.next()
            if not line.startswith(" "):
                self.fail("a line of a section must start with one space")
            out.append((line[1:] + "\n").encode("utf-8"))
        if out and self.at < len(self.lines) and self.lines[self.at] == _NO_EOL:
            self.at += 1
            out[-1] = out[-1][:-1]
        return tuple(out)


# -- every resolution of a series ---------------------------------------------------------------


@dataclass
class Recorded:
    """A series' resolutions, looked up by (patch, hunk id); a later version's text for the
    same hunk wins. `auto`: a hunk none of them covers may resolve by itself
    (`autoresolve`), when its three texts decide it."""

    files: list[Resolution] = field(default_factory=list)
    auto: bool = False
    _by_key: dict[tuple[int, str], tuple[Resolution, Lines]] = field(
        default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for res in sorted(self.files, key=lambda r: (r.version, r.name)):
            for hunk, text in res.hunks:
                self._by_key[(res.patch, hunk.key())] = (res, text)

    def has(self, patch: int) -> bool:
        return any(r.patch == patch for r in self.files)

    def find(self, patch: int, hunk: Hunk) -> tuple[Resolution, Lines] | None:
        return self._by_key.get((patch, hunk.key()))


def load(root: Path, auto: bool = False) -> Recorded:
    """Every resolution of the series folder `root`; a damaged, linked, special or oversized
    file is a one-line error naming it (as a damaged patch is), never skipped silently.
    `auto`: also let the conflicts their three texts decide resolve themselves."""
    files = []
    for p in list_resolutions(root / RESOLUTION_DIR):
        data = read_regular(p, RESOLUTION_LIMIT)
        if data is None:
            continue
        where = f"{root.name}/{RESOLUTION_DIR}/{p.name}"
        res = parse(data, where)
        m = RESOLUTION_NAME.match(p.name)
        if m is None or int(m.group(1)) != res.patch:
            raise CarryError(f"{where}: records patch {res.patch:04d} but is named for "
                             "another", hint="fix the file name or remove the file")
        if m.group(2) != res.conflict_id[:16]:  # prune and status know a file by its name
            raise CarryError(f"{where}: records conflict {res.conflict_id[:16]} but is "
                             "named for another",
                             hint=f"rename it to {res.file_name}, or remove it")
        files.append(res)
    return Recorded(files, auto)
