"""Carry finds the series where a user keeps them (anywhere in the series checkout, beside the
checkout, in the one sibling checkout that has series), says so when it finds none, naming
--series-dir and CARRY_SERIES_DIR; `status` with no series fails; and `series list` prints no
stray line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import CommitBuilder, run_carry

MANIFEST = 'schema = 1\nname = "{name}"\ntitle = "t"\n'


def _series(root: Path, name: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "series.toml").write_text(MANIFEST.format(name=name))


def _checkout(path: Path) -> Path:
    CommitBuilder.init(path).commit("root", {"README": "x\n"})
    return path


def test_no_series_anywhere_names_the_flag_and_the_variable(tmp_path: Path) -> None:
    clone = _checkout(tmp_path / "vllm")
    r = run_carry("check", "my-fix", cwd=clone)
    assert r.code == 2
    [line] = r.err.splitlines()
    assert "unknown series 'my-fix'" in line
    assert "--series-dir" in line and "CARRY_SERIES_DIR" in line
    st = run_carry("status", cwd=clone)
    assert st.code == 2 and st.out == ""
    [line] = st.err.splitlines()
    assert line.startswith("carry: error: no series in ") and "--series-dir" in line
    js = run_carry("status", "--json", cwd=clone)
    assert js.code == 2 and "CARRY_SERIES_DIR" in json.loads(js.out)["hint"]


def test_the_series_checkout_beside_the_clone_is_found(tmp_path: Path) -> None:
    clone = _checkout(tmp_path / "vllm")
    carry = _checkout(tmp_path / "carry")
    _series(carry / "series", "my-fix")
    for where in (clone, clone / "src", carry, carry / "series" / "my-fix"):
        where.mkdir(parents=True, exist_ok=True)
        r = run_carry("series", "show", "my-fix", "--json", cwd=where)
        assert r.code == 0, (where, r.err)
    listed = run_carry("series", "list", cwd=clone)
    assert listed.out.splitlines()[0] == f"series in {carry / 'series'}"
    # a series/ folder beside the checkout (not a checkout itself) is found too
    shutil.move(str(carry / "series"), str(tmp_path / "series"))
    r = run_carry("series", "show", "my-fix", cwd=clone)
    assert r.code == 0, r.err


def test_two_sibling_checkouts_with_series_are_not_guessed_between(tmp_path: Path) -> None:
    clone = _checkout(tmp_path / "vllm")
    for name in ("carry-a", "carry-b"):
        _series(_checkout(tmp_path / name) / "series", "my-fix")
    r = run_carry("check", "my-fix", cwd=clone)
    assert r.code == 2
    assert str(tmp_path / "carry-a" / "series") in r.err
    assert str(tmp_path / "carry-b" / "series") in r.err
    ok = run_carry("check", "my-fix", cwd=clone,
                   env={"CARRY_SERIES_DIR": str(tmp_path / "carry-b" / "series")})
    assert ok.code == 0, ok.err


def test_the_series_checkouts_own_folder_wins_even_empty(tmp_path: Path) -> None:
    """A new project's series/ is where `init` writes, never a sibling's."""
    _series(_checkout(tmp_path / "other") / "series", "theirs")
    mine = _checkout(tmp_path / "mine")
    (mine / "series").mkdir()
    r = run_carry("init", "new", "--upstream", "a/b", "--fork", "c/b", cwd=mine)
    assert r.code == 0, r.err
    assert (mine / "series" / "new" / "series.toml").is_file()
    assert not (tmp_path / "other" / "series" / "new").exists()


def test_series_list_prints_no_stray_line(tmp_path: Path) -> None:
    root = tmp_path / "s"
    _series(root, "one")
    r = run_carry("series", "list", "--series-dir", str(root))
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == f"series in {root}"
    assert lines[1].split() == ["name", "version", "patches", "base", "targets"]
    assert "series" not in [ln.strip() for ln in lines]
    assert len(lines) == 3
    helped = " ".join(run_carry("check", "--help").out.split())
    assert "nearest series/ from here up to the top of this git checkout" in helped
    assert "beside the checkout" in helped


def test_beside_two_series_checkouts_every_command_names_the_series_folder(
        tmp_path: Path) -> None:
    """F16 #9: from the clone beside two series checkouts, the problem is which series folder
    to use, and every command says so (not "no manifest names a remote")."""
    clone = _checkout(tmp_path / "vllm")
    for name in ("carry-a", "carry-b"):
        _series(_checkout(tmp_path / name) / "series", "my-fix")
    for argv in (("rebase", "my-fix"), ("edit", "my-fix", "1"), ("ci",),
                 ("status", "--prune"), ("check", "my-fix"), ("status",)):
        r = run_carry(*argv, cwd=clone)
        assert r.code == 2, (argv, r.err)
        [line] = r.err.splitlines()
        assert "manifest names" not in line and "--repo" not in line, (argv, line)
        assert "series" in line and "CARRY_SERIES_DIR" in line, (argv, line)
        assert str(tmp_path / "carry-a" / "series") in line, (argv, line)
        assert str(tmp_path / "carry-b" / "series") in line, (argv, line)
