"""The audit's text readings (issue 28: the finishing skip's audit spent 0.15 s compiling a
regex per name and per file): each shortcut answers exactly what the regex it replaced
answered, on drawn text full of the cases that tell them apart (prefixes, underscores,
digits, non-ASCII bytes, dots after spaces), and a file that compiles is judged as its
parse judges it."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from carry.git import Repo
from carry.replay import pyblobs, pytext
from tests.conftest import git

NAMES = ["a", "ab", "a_b", "_a", "a1", "envs", "envs2", "x", "caf\u00e9", "a.b", "*"]
PIECES = [*NAMES, " ", ".", " . ", "\n", "(", ")", "=", ":", "def ", "class ", "async def ",
          "\u00e9", "1", "_", "'", '"', "__getattr__", "\t"]
TEXT = st.lists(st.sampled_from(PIECES), max_size=30).map("".join).map(str.encode)


def _old_mentions(bound: dict[str, set[str]], line: bytes) -> bool:
    names = b"|".join(re.escape(n.encode()) for n in sorted(bound))
    return bool(re.search(rb"\b(?:" + names + rb")\s*\.", line))


@settings(max_examples=400, derandomize=True)
@given(st.sets(st.sampled_from(NAMES), min_size=1), TEXT)
@example({"ab"}, b"abc.")
@example({"a"}, b"x_a.b")
@example({"a"}, b"1a.b")
@example({"caf\u00e9"}, "caf\u00e9 .x".encode())
def test_mentions_is_the_alternation_it_replaced(names: set[str], line: bytes) -> None:
    found = pytext.Imports(bound={n: {n} for n in names})
    assert found.mentions(line) == _old_mentions(found.bound, line)


@settings(max_examples=400, derandomize=True)
@given(st.sampled_from(NAMES), TEXT)
@example("a", b"a_b = 1\nab: int\n")
@example("a", b"def a1():\n")
@example("ab", b"class ab(x):\n")
def test_top_definitions_and_words_are_the_regexes_they_replaced(name: str,
                                                                 text: bytes) -> None:
    w = re.escape(name.encode())
    heads = {a or b for a, b in pyblobs._HEADS.findall(text)}
    old_top = re.search(rb"(?m)^(?:(?:async\s+)?def|class)\s+" + w + rb"\b|^" + w +
                        rb"\s*[:=]", text)
    assert pyblobs._at_top(text, name.encode(), heads) == bool(old_top)
    assert pyblobs._has_word(text, name.encode()) == bool(re.search(rb"\b" + w + rb"\b", text))


SOURCES = [
    b"x = 1\n",
    b"def f(:\n",
    b"nonlocal x\n",  # parses; its symbol table refuses it: the parse's verdict stands
    b"x = 'a\\d' is 1\n",  # warnings only
    b"\x00",
    b"(" * 300 + b")" * 300,
    b"# -*- coding: latin-1 -*-\nx = '\xe9'\n",
]


def test_error_judges_as_the_parse_does(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    blobs = [git(tmp_path, "hash-object", "-w", "--stdin", input=data) for data in SOURCES]
    parsed = pyblobs.Parsed(Repo.open(tmp_path))
    for blob, data in zip(blobs, SOURCES, strict=True):
        want = pyblobs.parse(data)
        assert parsed.error(blob) == (want if isinstance(want, str) else None), data
    assert parsed.error(blobs[2]) is None and parsed._compiles[blobs[2]] is False
