"""The plain format-patch mail, split in-process exactly as `git mailinfo -k` splits it.

mailinfo is a process per patch, which is most of what `carry import` and `carry apply` cost.
Most mails are plain: ASCII headers `From`, `Date` and `Subject` on one line each, a message
of printable ASCII lines with no trailing blanks, nothing mailinfo would take for an in-body
header, a patch break or a scissors line. For those the split is a few slices; for anything
else `plain` returns None and git's parser reads the mail. tests/test_mailsplit.py holds the
two to the same output.
"""

from __future__ import annotations

import re

_CARRY = (b"X-Carry-Message", b"X-Carry-Author", b"X-Carry-Encoding")
_HEADER = re.compile(rb"([A-Za-z][A-Za-z0-9-]*): ([\x20-\x7e]*)")
_FROM = re.compile(rb"([A-Za-z0-9](?:[A-Za-z0-9_-]| (?! ))*[A-Za-z0-9_-]|[A-Za-z0-9]) "
                   rb"<([A-Za-z0-9._+-]+@[A-Za-z0-9.-]+)>")
_TEXT = re.compile(rb"(?:[\x20-\x7e]*[\x21-\x7e])?")  # printable, no trailing blank
# What mailinfo would read at the top of a body as a header of its own, or a line it drops.
_INBODY = re.compile(rb"(?i)(?:from|subject|date)\s*:|>?from |\[patch\]|-- ?>8|--8<")
_BREAK = (b"---", b"diff -", b"Index: ")


def plain(mail: bytes) -> tuple[dict[str, str], bytes, bytes] | None:
    """(headers, body, diff) as mailinfo gives them, or None when the mail is not plain."""
    head_end = mail.find(b"\n\n")
    if head_end < 0 or not mail.startswith(b"From ") or b"\r" in mail:
        return None
    headers = _headers(mail[:head_end].split(b"\n")[1:])
    if headers is None:
        return None
    start = head_end + 2
    pos, body_lines = start, list[bytes]()
    while True:
        nl = mail.find(b"\n", pos)
        if nl < 0:
            return None  # no diff at all: mailinfo's business
        line = mail[pos:nl]
        if line.startswith(_BREAK):
            if line != b"---":
                return None
            break
        if not _TEXT.fullmatch(line) or (not body_lines and (not line or _INBODY.match(line))):
            return None
        if not line and body_lines and not body_lines[-1]:
            return None  # runs of blank lines: leave them to git
        body_lines.append(line)
        pos = nl + 1
    if body_lines and not body_lines[-1]:
        return None
    body = b"".join(ln + b"\n" for ln in body_lines)
    return headers, body, mail[pos:]


def _headers(lines: list[bytes]) -> dict[str, str] | None:
    """Author, Email, Subject and Date as mailinfo prints them, from one-line ASCII headers."""
    seen: dict[bytes, bytes] = {}
    current = b""
    for line in lines:
        if line[:1] == b" " and current in _CARRY:
            continue  # a folded carry header: base64, read by patches.py
        m = _HEADER.fullmatch(line)
        if m is None:
            return None
        current = m.group(1)
        if current in _CARRY:
            continue
        if current not in (b"From", b"Date", b"Subject") or current in seen:
            return None
        value = m.group(2)
        if b"=?" in value or value != value.strip() or b"  " in value or not value:
            return None
        seen[current] = value
    who = _FROM.fullmatch(seen.get(b"From", b""))
    if who is None or b"Date" not in seen or b"Subject" not in seen:
        return None
    return {"Author": who.group(1).decode(), "Email": who.group(2).decode(),
            "Subject": seen[b"Subject"].decode(), "Date": seen[b"Date"].decode()}
