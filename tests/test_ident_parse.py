"""An identity line is text a commit carries, so its parser must be linear: the old
`^(.*) <(.*)> (...)$` backtracked quadratically over a line of many " <" (minutes on 100 KB).
The linear parser reads every line the regex read, the same way."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from carry.git.base import GitError, Ident

OLD = re.compile(r"^(.*) <(.*)> ([0-9]{1,20} [+-][0-9]{4})$")


@given(st.lists(st.sampled_from(["A", " ", "<", ">", "@", "x", "1", "+", "-", "0", "\n"]),
                max_size=30).map("".join),
       st.sampled_from(["1 +0000", "1112911993 -0700", "x +0000", ""]))
def test_it_reads_what_the_regex_read(body: str, date: str) -> None:
    raw = f"{body} {date}" if date else body
    m = OLD.match(raw)
    if m is None or "\n" in raw:
        with pytest.raises(GitError):
            Ident.parse(raw)
    else:
        assert Ident.parse(raw) == Ident(m.group(1), m.group(2), m.group(3))


def test_a_hostile_line_is_refused_at_once() -> None:
    with pytest.raises(GitError, match="cannot parse identity line"):
        Ident.parse(" <" * 200_000 + " x")
    assert Ident.parse("N" + " <" * 200_000 + "e> 1 +0000").name.startswith("N <")
