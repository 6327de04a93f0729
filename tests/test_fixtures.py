"""Sample patch files (tests/fixtures/patches) parse to their recorded expectations.

The `NNNN-*.patch` files were written by `carry import` from commits that `generate.py`
builds; their JSON comes from git's view of those commits. The `b4-*` ones are mails as a
list and b4 deliver them, with hand-written expectations.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from carry.series import patches

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "patches"
CASES = sorted(p.stem for p in FIXTURES.glob("*.json"))


def test_every_fixture_has_its_expectation() -> None:
    assert len(CASES) >= 7
    assert sorted(p.stem for p in FIXTURES.glob("*.patch")) == CASES


@pytest.mark.parametrize("case", CASES)
def test_fixture_parses_as_expected(case: str) -> None:
    want = json.loads((FIXTURES / f"{case}.json").read_text(encoding="utf-8"))
    path = FIXTURES / f"{case}.patch"
    got = patches.load(path, want["number"])
    assert got.origin == want["origin"]
    assert (got.author.name, got.author.email, got.author.date) == (
        want["author"]["name"], want["author"]["email"], want["author"]["date"])
    message = want["message"]
    expected = (message["text"].encode() if "text" in message
                else base64.b64decode(message["base64"]))
    assert got.message == expected
    assert [[t.key, t.value] for t in got.trailers] == want["trailers"]
    for name in want["files"]:
        assert f" b/{name}\n".encode() in got.diff
    for fragment in want.get("diff_contains", []):
        assert fragment.encode() in got.diff
    assert ("message" in got.verbatim) is want["verbatim_message"]
