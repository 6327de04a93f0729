"""Property: for any small series, import then apply onto the same base loses nothing."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import CommitBuilder, git
from tests.roundtrip import assert_same, roundtrip

EXAMPLES = int(os.environ.get("CARRY_PROPERTY_EXAMPLES", "30"))

TRICKY_LINES = [
    "---", "--- a/file", "diff --git a/x b/x", "Index: x", "From the start", "From: Someone <s@e>",
    "Subject: not a header", "-- ", "-- >8 --", "# comment", "    indented", "\t", "", " ",
    "Signed-off-by: A U Thor <author@example.com>", "Assisted-by: OpenAI Codex",
    "Co-authored-by: Toby Mao <toby@example.com>", "(cherry picked from commit "
    "0123456789abcdef0123456789abcdef01234567)", "Key: value", "  continued value",
    "Date: yesterday", "=?UTF-8?q?encoded?=", "trailing space   ", "café ☕",
]

_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30)
_line = st.one_of(st.sampled_from(TRICKY_LINES), _text)
_eol = st.sampled_from([b"\n", b"\r\n"])


@st.composite
def messages(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 9)) == 0:  # raw bytes, possibly not UTF-8 (no NUL: git refuses)
        return draw(st.binary(max_size=80)).replace(b"\0", b"")
    eol = draw(_eol)
    lines = [draw(_text.filter(lambda s: "\n" not in s and "\r" not in s))]
    lines += [ln.replace("\r", "").replace("\n", "") for ln in draw(st.lists(_line, max_size=8))]
    msg = eol.join(ln.encode() for ln in lines)
    return msg + draw(st.sampled_from([b"", eol, eol + eol]))


# Names git's own identity parsing would alter (it strips quotes, dots and commas at the
# ends): the commits are written by fast-import, which keeps them, not by carry's path.
_name = st.one_of(
    st.sampled_from(['"Quoted, Name" Jr.', "'single'", "Dot.", ",comma,", "A U Thor"]),
    st.text(st.sampled_from("abcXYZ ._-,;:'\"éü山"), min_size=1, max_size=16)
    .map(str.strip).filter(bool),
)
_email = st.from_regex(r"\A[a-z0-9.+_-]{1,10}@[a-z0-9-]{1,8}\.example\Z")
_date = st.tuples(st.integers(86_400, 2**31 - 1),  # git rejects local times before 1970
                  st.sampled_from(["+0000", "-0000", "+0100", "-0730", "+0545", "+1400", "-1200"]))
_paths = st.sampled_from(["a.txt", "dir/b.py", "c", "bin.dat", "ü dir/f.txt", "d/e/f"])
_content = st.one_of(
    st.binary(max_size=120),
    st.lists(st.sampled_from(["x", "y", "zz", "", "é", "---", "diff --git a/q b/q"]), max_size=8)
    .map(lambda ls: "".join(ln + "\n" for ln in ls).encode()),
    st.just(b"line\r\nline\r\n"),
)


@st.composite
def commits(draw: st.DrawFn) -> dict[str, object]:
    changes = draw(st.dictionaries(_paths, st.one_of(st.none(), _content), max_size=3))
    return {"message": draw(messages()), "author": (draw(_name), draw(_email)),
            "date": draw(_date), "changes": changes}


def _fast_import(b: CommitBuilder, series: list[dict[str, object]]) -> None:
    """Write the commits with `git fast-import`: a path carry never uses, which records
    authors and zones (`-0000`) exactly as given, so the round trip is checked against
    commits that carry's own writer did not make."""
    stream = bytearray(b"reset refs/heads/main\nfrom " + b.rev().encode() + b"\n")
    present = {"a.txt", "c"}
    for serial, c in enumerate(series):
        name, email = c["author"]  # type: ignore[misc]
        epoch, tz = c["date"]  # type: ignore[misc]
        msg: bytes = c["message"]  # type: ignore[assignment]
        stream += f"commit refs/heads/main\nauthor {name} <{email}> {epoch} {tz}\n".encode()
        stream += b"committer C O Mitter <committer@example.com> 1790000000 +0000\n"
        stream += b"data %d\n%s\n" % (len(msg), msg)
        changes = dict(c["changes"])  # type: ignore[call-overload]
        # Every commit must change something: carry refuses empty commits.
        changes[f"serial/{serial}"] = f"{serial}\n".encode()
        for path, content in changes.items():
            if content is None:
                if path in present:
                    stream += f"D {path}\n".encode()
                    present.discard(path)
                continue
            present.add(path)
            stream += f"M 100644 inline {path}\n".encode() + b"data %d\n%s\n" % (
                len(content), content)
        stream += b"\n"
    git(b.path, "fast-import", "--quiet", input=bytes(stream))


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(commits(), min_size=1, max_size=4))
def test_round_trip_loses_nothing(series: list[dict[str, object]]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="carry-prop-"))
    try:
        b = CommitBuilder.init(tmp / "repo")
        b.commit("base", {"a.txt": "base\n", "c": b"\x00\x01"})
        b.tag("base")
        _fast_import(b, series)
        assert_same(roundtrip(b.path, "base", tmp / "series"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_quoted_author_and_minus_zero_zone_survive_apply(tmp_path: Path) -> None:
    """The issue's example, always run: `"Quoted, Name" Jr.` and `-0000` come back exact."""
    b = CommitBuilder.init(tmp_path / "repo")
    b.commit("base", {"a.txt": "base\n", "c": b"\x00\x01"})
    b.tag("base")
    _fast_import(b, [{"message": b"Quoted\n", "author": ('"Quoted, Name" Jr.', "q@example.com"),
                      "date": (1790000000, "-0000"), "changes": {"a.txt": b"new\n"}}])
    pairs = roundtrip(b.path, "base", tmp_path / "series")
    assert pairs[0][1].author == b'"Quoted, Name" Jr. <q@example.com> 1790000000 -0000'
    assert_same(pairs)
