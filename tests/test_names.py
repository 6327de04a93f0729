"""One series-name rule for every command, checked where the name is parsed, so no
name reads or rewrites a series outside --series-dir."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import CommitBuilder, run_carry

BAD = ["../outside/evil", "../../outside/evil", "/tmp/abs", "a" * 101, "a..b", ".hidden",
       "x/y", "name.lock", "trailing.", "spa ce", "ünïcode"]
COMMANDS = [
    ["check", "{n}"], ["series", "show", "{n}"], ["import", "{n}", "--repo", "{r}", "--branch",
                                                  "feature"],
    ["apply", "{n}", "--repo", "{r}", "--onto", "main", "--branch", "b"],
    ["rebase", "{n}", "--repo", "{r}", "--onto", "main", "--refresh"],
    ["range-diff", "{n}", "v1", "v2", "--repo", "{r}"],
    ["validate", "{n}", "--repo", "{r}", "--onto", "main", "--engine", "local"],
    ["init", "{n}", "--upstream", "o/u", "--fork", "o/f"],
]


@pytest.mark.parametrize("bad", BAD)
def test_bad_names_are_refused_by_every_command(bad: str, upstream: CommitBuilder,
                                                series_root: Path, tmp_path: Path) -> None:
    evil = tmp_path / "outside" / "evil"
    evil.mkdir(parents=True)
    (evil / "series.toml").write_text('schema = 1\nname = "evil"\ntitle = "x"\n')
    before = sorted(p.name for p in tmp_path.joinpath("outside").rglob("*"))
    for cmd in COMMANDS:
        args = [a.format(n=bad, r=upstream.path) for a in cmd]
        r = run_carry(*args, "--series-dir", str(series_root))
        assert r.code == 2, (args, r.out, r.err)
        lines = r.err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in r.err, (args, r.err)
        assert "not a series name" in lines[0] or "No such option" in lines[0], lines[0]
    assert sorted(p.name for p in tmp_path.joinpath("outside").rglob("*")) == before
    assert list(series_root.iterdir()) == []
    shutil.rmtree(tmp_path / "outside")


def test_a_good_name_of_100_characters_is_accepted(series_root: Path) -> None:
    name = "a" * 100
    r = run_carry("init", name, "--upstream", "o/u", "--fork", "o/f", "--series-dir",
                  str(series_root))
    assert r.code == 0, r.err
    assert (series_root / name / "series.toml").is_file()
