"""Property: for any small series, import then apply onto the same base loses nothing."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import CommitBuilder
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


_name = st.text(st.sampled_from("abcXYZ ._-'\"éü山 "), min_size=1, max_size=16).filter(
    lambda s: s.strip(" .,:;'\"") != "")
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


def _apply(b: CommitBuilder, c: dict[str, object], serial: int) -> None:
    files: dict[str, bytes | str | None] = {}
    for path, content in c["changes"].items():  # type: ignore[attr-defined]
        exists = (b.path / path).exists()
        if content is None and not exists:
            continue
        files[path] = content
    # Every commit must change something: format-patch omits empty commits.
    files[f"serial/{serial}"] = f"{serial}\n"
    epoch, tz = c["date"]  # type: ignore[misc]
    b.commit(c["message"], files, author=c["author"], date=f"@{epoch} {tz}")  # type: ignore[arg-type]


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(commits(), min_size=1, max_size=4))
def test_round_trip_loses_nothing(series: list[dict[str, object]]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="carry-prop-"))
    try:
        b = CommitBuilder.init(tmp / "repo")
        b.commit("base", {"a.txt": "base\n", "c": b"\x00\x01"})
        b.tag("base")
        for i, c in enumerate(series):
            _apply(b, c, i)
        assert_same(roundtrip(b.path, "base", tmp / "series"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
