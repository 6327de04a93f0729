"""carry splits a plain mail in-process: whenever it does, the split must be exactly what
`git mailinfo -k` gives for the same bytes, and a real format-patch mail must be plain."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from carry.git import mailinfo
from carry.series import mailsplit
from tests.conftest import CommitBuilder, git

EXAMPLES = int(os.environ.get("CARRY_PROPERTY_EXAMPLES", "30")) * 4

HEAD = b"From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n"
DIFF = (b"---\n a | 1 +\n 1 file changed, 1 insertion(+)\n\n"
        b"diff --git a/a b/a\nindex e69de29bb2d1d6434b8b29ae775ad8c2e48c5391.."
        b"d00491fd7e5bb6fa28c517a0bb32b8b506539d4d 100644\n--- a/a\n+++ b/a\n@@ -0,0 +1 @@\n+1\n")
PIECES = [b"---", b"--- a", b"---x", b"--", b"diff -u", b"Index: x", b"From x", b">From x",
          b"From: E <e@x>", b"from :x", b"Subject: s", b"DATE: d", b"[PATCH] p", b"-- >8 --",
          b"--8<--", b"", b" ", b"\t", b"x ", b"Signed-off-by: A U Thor <author@example.com>",
          b"caf\xc3\xa9", b"=?UTF-8?q?x?=", b"a\rb", b"  two", b"Key: value", b"plain words"]
_ascii = st.one_of(st.sampled_from(PIECES), st.from_regex(rb"\A[ -~]{0,12}\Z"))
_line = st.one_of(_ascii, st.binary(max_size=12).map(
    lambda b: b.replace(b"\n", b"").replace(b"\0", b"")))
_value = st.one_of(st.sampled_from([b"A U Thor <author@example.com>", b"Thu, 3 Dec 2026 "
                                    b"08:02:56 +0100", b"[BugFix] a subject", b"x  y", b" x",
                                    b"\"Q, N\" <q@e.x>", b"=?UTF-8?q?x?=", b""]), _line)
_headers = st.lists(st.tuples(st.sampled_from([b"From", b"Date", b"Subject", b"X-Carry-Author",
                                               b"MIME-Version", b"X-Other", b"from"]),
                              _value), max_size=5)


def _mail(headers: list[tuple[bytes, bytes]], body: list[bytes]) -> bytes:
    head = b"".join(k + b": " + v + b"\n" for k, v in headers)
    return HEAD + head + b"\n" + b"".join(ln + b"\n" for ln in body) + DIFF


def _same(mail: bytes) -> bool:
    got = mailsplit.plain(mail)
    if got is not None:
        assert got == mailinfo(mail), mail
    return got is not None


@settings(max_examples=EXAMPLES, deadline=None)
@given(headers=_headers, body=st.lists(_line, max_size=6))
def test_a_plain_split_is_mailinfos(headers: list[tuple[bytes, bytes]], body: list[bytes]
                                    ) -> None:
    _same(_mail(headers, body))


@settings(max_examples=EXAMPLES, deadline=None)
@given(subject=_ascii, body=st.lists(_ascii, max_size=6))
def test_a_plain_split_is_mailinfos_under_plain_headers(subject: bytes, body: list[bytes]
                                                        ) -> None:
    _same(_mail([(b"From", b"A U Thor <author@example.com>"),
                 (b"Date", b"Thu, 3 Dec 2026 08:02:56 +0100"), (b"Subject", subject)], body))


def test_format_patch_mails_are_plain(upstream: CommitBuilder) -> None:
    """The shapes a real series has are read in-process: subject only, a body with trailers,
    carry's own folded exact-value header."""
    upstream.commit("[BugFix] one\n", {"a": "1\n"})
    upstream.commit("Two\n\nWhy two.\n\nSigned-off-by: A U Thor <author@example.com>\n",
                    {"b/c": "2\n"})
    out = git(upstream.path, "format-patch", "-k", "--stdout", "--full-index", "base..HEAD")
    mails = ["From " + m for m in out.split("\nFrom ") if m]
    mails[0] = mails[0].removeprefix("From ")
    assert len(mails) == 2
    for m in mails:
        assert _same(m.encode() + b"\n")
    carried = mails[1].replace("\n\n", "\nX-Carry-Author: QSBVIFRob3IgPGF1dGhvckBleGFtcGxlLmNv\n"
                               " bT4gMSArMDAwMA==\n\n", 1)
    assert _same(carried.encode() + b"\n")
