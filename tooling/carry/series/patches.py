"""Patch files: git format-patch bytes in, exact commits out.

git reads and writes the patches (`format-patch`, `mailinfo`), so a file is exactly what
`git am` would see. Some commits cannot survive that trip: `git am` cuts a message at a `---`
or `diff -` line, folds a multi-line subject, and trims whitespace. For those, and only those,
the patch carries the exact message or author line in an extra `X-Carry-Message:` or
`X-Carry-Author:` header (base64, folded), and a message kept in another encoding than UTF-8
names it in `X-Carry-Encoding:`. Every git tool ignores these headers; carry prefers them.
`carry check` lists the patches that needed it, so nothing is hidden.
"""

from __future__ import annotations

import base64
import email.utils
import re
from dataclasses import dataclass, field
from pathlib import Path

from carry.base.errors import CarryError
from carry.git import GitError, Ident, RawCommit, mailinfo
from carry.series import mailsplit, trailers

_HEADER_MESSAGE = b"X-Carry-Message"
_HEADER_AUTHOR = b"X-Carry-Author"
_HEADER_ENCODING = b"X-Carry-Encoding"
_FROM = re.compile(rb"^From ([0-9a-f]{40}) ")
# format-patch's separator: `---`, the diffstat, a blank line, then the first diff.
_STAT_END = re.compile(
    rb"^---\n(?: [^\n]*\n)*? \d+ files? changed[^\n]*\n\n(?=diff --git )", re.M
)
_PATCH_BREAK = re.compile(rb"^(?=diff -|Index: |---)", re.M)
_SUMMARY = re.compile(rb"^ ([0-9]+) files? changed(?:, ([0-9]+) insertions?\(\+\))?"
                      rb"(?:, ([0-9]+) deletions?\(-\))?$", re.M)
_HUNK = re.compile(rb"^@@ -[0-9]+(?:,([0-9]+))? \+[0-9]+(?:,([0-9]+))? @@")
_MAX_DIGITS = 10  # int() refuses 4,300 digits and more; no patch counts 10**10 lines
_INDEX = re.compile(rb"^index ([0-9a-f]+)\.\.([0-9a-f]+)")
# What a section may carry instead of hunks: a mode, a rename or copy, an empty file.
_NO_HUNK_NEEDED = (b"old mode ", b"new mode ", b"new file mode ", b"deleted file mode ",
                   b"rename from ", b"copy from ", b"similarity index ")
_EMPTY_BLOBS = ("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
                "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813")


class PatchError(CarryError):
    """A patch file that cannot be read as a commit."""


class MissingAuthor(PatchError):
    """A patch with no author: `carry check` names it apart from unreadable files."""


@dataclass(frozen=True)
class Patch:
    number: int
    file: str
    origin: str
    author: Ident
    message: bytes
    diff: bytes
    verbatim: tuple[str, ...] = field(default=())
    encoding: str | None = None  # the original's `encoding` header, for messages not in UTF-8

    @property
    def subject(self) -> str:
        return self.message.split(b"\n", 1)[0].decode("utf-8", "replace")

    @property
    def trailers(self) -> list[trailers.Trailer]:
        return trailers.parse(self.message)


def parse(number: int, file: str, data: bytes) -> Patch:
    """Read one patch file the way `git am` would, then apply any exact-value headers."""
    head_end = data.find(b"\n\n")
    if not data.startswith(b"From ") or head_end < 0:
        raise PatchError(f"{file}: not a git format-patch file (no mail header)")
    m = _FROM.match(data)
    origin = m.group(1).decode() if m else ""
    extra = _extra_headers(data[:head_end])
    try:
        headers, body, diff = split_mail(data)
    except GitError as exc:
        raise PatchError(f"{file}: git mailinfo cannot read it: {exc}") from None
    if not diff.strip():
        raise PatchError(f"{file}: contains no diff")
    if not diff.startswith((b"diff --git ", b"---", b"Index: ", b"GIT binary patch")) and (
        b"\ndiff --git " not in diff
    ):
        raise PatchError(f"{file}: the diff is not in git format")
    check_diff(file, diff)
    verbatim = []
    if _HEADER_AUTHOR in extra:
        author = Ident.parse(extra[_HEADER_AUTHOR].decode("utf-8", "surrogateescape"))
        verbatim.append("author")
    else:
        author = _author(file, headers)
    if _HEADER_MESSAGE in extra:
        message = extra[_HEADER_MESSAGE]
        verbatim.append("message")
    else:
        message = am_message(headers, body)
    encoding = extra[_HEADER_ENCODING].decode() if _HEADER_ENCODING in extra else None
    return Patch(number, file, origin, author, message, diff, tuple(verbatim), encoding)


def load(path: Path, number: int) -> Patch:
    from carry.series.store import PatchFile

    return parse(number, path.name, PatchFile(number, path).read())


def am_message(headers: dict[str, str], body: bytes) -> bytes:
    subject = headers.get("Subject", "").encode()
    return subject + b"\n" + (b"\n" + body if body.strip() else b"")


def render(commit: RawCommit, formatted: bytes) -> bytes:
    """Return the patch file for a commit: format-patch bytes, plus exact-value headers if the
    plain file would not give back this commit's author or message."""
    headers, body, diff = split_mail(formatted)
    extra: list[tuple[bytes, bytes]] = []
    if am_message(headers, body) != commit.message:
        extra.append((_HEADER_MESSAGE, commit.message))
        formatted, diff = _safe_body(formatted, diff)
    check_diff(f"commit {commit.sha[:12]}", diff)  # what apply will read: import writes no less
    try:
        seen: Ident | None = _author("patch", headers)
    except PatchError:
        seen = None
    if seen != commit.author:
        extra.append((_HEADER_AUTHOR, commit.author.line().encode("utf-8", "surrogateescape")))
    if commit.encoding and commit.encoding.upper().replace("-", "") != "UTF8":
        extra.append((_HEADER_ENCODING, commit.encoding.encode()))
    if not extra:
        return formatted
    head_end = formatted.index(b"\n\n")
    lines = b"".join(_fold(name, value) for name, value in extra)
    return formatted[:head_end + 1] + lines + formatted[head_end + 1 :]


def with_message(data: bytes, patch: Patch, message: bytes) -> bytes:
    """The patch file `data` (read as `patch`) with its commit message replaced by `message`
    (same subject), every other byte kept: the `From` line, author, date and diff. The
    visible body is rewritten for `git am`; a patch that already kept its exact message in
    X-Carry-Message, or whose new body `git am` would not give back exactly, gets `message`
    there instead, and keeps its visible body. The result is read back before it is used."""
    head_end = data.index(b"\n\n") + 1
    seps = list(_STAT_END.finditer(data, head_end))
    if not seps:
        raise PatchError(f"{patch.file}: no diffstat after the message; import it again")
    sep = seps[-1].start()
    if "message" not in patch.verbatim:
        _, _, rest = message.partition(b"\n")
        plain = data[:head_end] + b"\n" + rest.removeprefix(b"\n") + data[sep:]
        if _reads_as(plain, patch, message):
            return plain
    head = _drop_header(data[:head_end], _HEADER_MESSAGE)
    exact = head + _fold(_HEADER_MESSAGE, message) + data[head_end:]
    if not _reads_as(exact, patch, message):
        raise PatchError(f"{patch.file}: cannot write the new message so that it reads back")
    return exact


def _reads_as(data: bytes, patch: Patch, message: bytes) -> bool:
    try:
        new = parse(patch.number, patch.file, data)
    except PatchError:
        return False
    return (new.message, new.author, new.diff, new.origin, new.encoding) == (
        message, patch.author, patch.diff, patch.origin, patch.encoding)


def _drop_header(head: bytes, name: bytes) -> bytes:
    """The header block without header `name` and its folded continuation lines."""
    out: list[bytes] = []
    dropping = False
    for line in head.splitlines(keepends=True):
        if line[:1] in (b" ", b"\t") and dropping:
            continue
        dropping = line.startswith(name + b": ")
        if not dropping:
            out.append(line)
    return b"".join(out)


def split_mail(mail: bytes) -> tuple[dict[str, str], bytes, bytes]:
    """(headers, message body, diff) as `git mailinfo -k` gives them: read in-process when
    the mail is plain (`mailsplit.plain`), so that neither import nor apply starts a process
    per patch for it; any other mail goes to git's own parser."""
    return mailsplit.plain(mail) or mailinfo(mail)


def _safe_body(formatted: bytes, diff: bytes) -> tuple[bytes, bytes]:
    """Indent the body lines that `git mailinfo` would take for the start of the diff.

    A message that quotes a diff (`diff --git`, `--- a/x`) would otherwise hand `git apply`
    a broken patch. The exact message is in X-Carry-Message, so only the visible copy changes;
    the result is kept only if mailinfo then finds exactly format-patch's own diff part.
    Returns the file and the diff mailinfo finds in it.
    """
    head_end = formatted.index(b"\n\n") + 2
    seps = list(_STAT_END.finditer(formatted, head_end))
    if not seps:
        return formatted, diff
    sep = seps[-1].start()
    body = _PATCH_BREAK.sub(b" ", formatted[head_end:sep])
    safe = formatted[:head_end] + body + formatted[sep:]
    try:
        _, _, safe_diff = mailinfo(safe)
    except GitError:
        return formatted, diff
    return (safe, safe_diff) if safe_diff == formatted[sep:] else (formatted, diff)


@dataclass
class _Section:
    name: bytes
    heads: list[bytes] = field(default_factory=list)
    hunks: int = 0
    binary: bool = False

    def promise(self) -> str | None:
        """What the section's own header says it changes but its body does not carry."""
        if self.hunks or self.binary:
            return None
        index = next((m for h in self.heads if (m := _INDEX.match(h))), None)
        if index is not None:
            old, new = (x.decode() for x in index.groups())
            if not all(_nothing(x) for x in (old, new)):
                return f"its index line promises a change ({old[:12]}..{new[:12]}) but no hunk"
            return None
        if any(h.startswith(_NO_HUNK_NEEDED) for h in self.heads):
            return None
        return "it has a header and nothing else"


def _nothing(blob: str) -> bool:
    """No content: the null id or the empty blob (either hash), possibly abbreviated."""
    return set(blob) == {"0"} or any(e.startswith(blob) for e in _EMPTY_BLOBS)


def check_diff(file: str, diff: bytes) -> None:
    """Refuse a diff that was cut short or whose own header lines promise more than it holds.

    `git apply` takes a patch cut between `---` and its first hunk as an empty change, so such
    a file would become an empty commit in `apply` and a silent drop in `rebase`. Every hunk
    must hold the lines its `@@` header counts, every `diff --git` section its change, and
    the totals must match format-patch's diffstat when there is one.
    """
    first = re.search(rb"^diff --git ", diff, re.M)
    stats = list(_SUMMARY.finditer(diff, 0, first.start() if first else len(diff)))
    sections: list[_Section] = []
    plus = minus = hunks = 0
    # Before the first `diff --git` git apply reads nothing: a message cut at `---` may sit there.
    lines = diff[first.start() if first else 0:].split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the end of the last line, not an empty context line
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith(b"diff --git "):
            sections.append(_Section(line[11:].rsplit(b" b/", 1)[-1]))
        elif (m := _HUNK.match(line)) is not None:
            hunks += 1
            old, new = (_count(file, x) if x is not None else 1 for x in m.groups())
            while old > 0 or new > 0:
                body = lines[i] if i < len(lines) else None
                i += 1
                if body is None or body[:1] not in (b" ", b"-", b"+", b"\\", b""):
                    raise PatchError(f"{file}: malformed: hunk {hunks} is cut short",
                                     hint="the patch file was truncated; import it again")
                kind = body[:1]
                if kind != b"\\":
                    old -= kind != b"+"
                    new -= kind != b"-"
                    plus += kind == b"+"
                    minus += kind == b"-"
            if sections:
                sections[-1].hunks += 1
        elif sections and line.startswith((b"GIT binary patch", b"Binary files ")):
            sections[-1].binary = True
        elif sections and not sections[-1].hunks and not sections[-1].binary:
            sections[-1].heads.append(line)
    for s in sections:
        why = s.promise()
        if why:
            name = s.name.decode("utf-8", "replace")
            raise PatchError(f"{file}: malformed: {name}: {why}",
                             hint="the patch file was cut short; import it again")
    if not sections and not hunks:
        raise PatchError(f"{file}: malformed: no file changes after the '---' line",
                         hint="the patch file was cut short; import it again")
    if stats:
        want = tuple(_count(file, x or b"0") for x in stats[-1].groups())
        # a path whose type changes (file to symlink) is two sections under one stat line
        have = (len({sec.name for sec in sections}) or 1, plus, minus)
        if want != have:
            raise PatchError(
                f"{file}: malformed: its diffstat promises {want[0]} file(s), {want[1]} "
                f"insertion(s), {want[2]} deletion(s); the diff carries {have[0]}, {have[1]}, "
                f"{have[2]}", hint="the patch file was cut short or edited; import it again")


def _count(file: str, digits: bytes) -> int:
    if len(digits) > _MAX_DIGITS:
        raise PatchError(f"{file}: malformed: a count of {len(digits)} digits",
                         hint="the patch file was damaged; import it again")
    return int(digits)


def file_name(number: int, subject: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", subject).strip("-.")[:52].rstrip("-.")
    return f"{number:04d}-{slug or 'patch'}.patch"


def _author(file: str, headers: dict[str, str]) -> Ident:
    name, addr, date = headers.get("Author", ""), headers.get("Email", ""), headers.get("Date")
    if not name or not addr:
        raise MissingAuthor(f"{file}: the patch has no author")
    if not date:
        raise PatchError(f"{file}: the patch has no author date")
    return Ident(name, addr, git_date(file, date))


def git_date(file: str, rfc2822: str) -> str:
    """`Thu, 3 Dec 2026 08:02:56 +0100` -> `1796281376 +0100`, keeping the author's zone."""
    parsed = email.utils.parsedate_tz(rfc2822)
    if parsed is None or parsed[9] is None:
        raise PatchError(f"{file}: cannot read the date {rfc2822!r}")
    try:
        epoch = email.utils.mktime_tz(parsed)
    except (ValueError, OverflowError):  # year 99999999: no calendar date
        raise PatchError(f"{file}: cannot read the date {rfc2822!r}") from None
    offset = parsed[9]
    sign = "-" if offset < 0 or rfc2822.rstrip().endswith("-0000") else "+"
    hours, minutes = divmod(abs(offset) // 60, 60)
    return f"{epoch} {sign}{hours:02d}{minutes:02d}"


def _fold(name: bytes, value: bytes) -> bytes:
    encoded = base64.b64encode(value)
    chunks = [encoded[i : i + 76] for i in range(0, len(encoded), 76)] or [b""]
    return name + b": " + b"\n ".join(chunks) + b"\n"


def _extra_headers(head: bytes) -> dict[bytes, bytes]:
    out: dict[bytes, bytes] = {}
    current: bytes | None = None
    for line in head.split(b"\n"):
        if line[:1] in (b" ", b"\t") and current is not None:
            out[current] += line.strip()
            continue
        key, sep, value = line.partition(b": ")
        current = key if sep and key in (_HEADER_MESSAGE, _HEADER_AUTHOR, _HEADER_ENCODING) \
            else None
        if current is not None:
            out[current] = value.strip()
    decoded = {}
    for key, value in out.items():
        try:
            decoded[key] = base64.b64decode(value, validate=True)
        except ValueError:
            raise PatchError(f"header {key.decode()} is not valid base64") from None
    return decoded
