"""The audit after a clean replay (issue 29, part 1): a patch git applies without a conflict
can still break the result. Real git repositories, the real CLI: a name only a skipped patch
defines, a module upstream moved, a syntax error a clean merge makes, a hostile file; and no
finding for names the target defines, names a `__getattr__` module declares, or non-Python
files."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from carry.replay import pyblobs
from tests.conftest import CommitBuilder, git, run_carry

MakeSeries = Callable[..., Any]

ENVS = '''import os

environment_variables = {
    "PKG_ALPHA": lambda: os.getenv("PKG_ALPHA", "1"),
    "PKG_BETA": lambda: os.getenv("PKG_BETA", "0"),
    "PKG_GAMMA": lambda: os.getenv("PKG_GAMMA", "0"),
}


def __getattr__(name):
    if name in environment_variables:
        return environment_variables[name]()
    raise AttributeError(name)
'''
RUNNER = "from pkg import envs\n\n\ndef run():\n    return 0\n"
UTIL = "".join(f"def h{i}():\n    return {i}\n\n\n" for i in range(8))


def _carry(up: CommitBuilder, root: Path, *args: str) -> Any:
    return run_carry(*args, "--repo", str(up.path), "--series-dir", str(root))


def _project(tmp_path: Path) -> CommitBuilder:
    up = CommitBuilder.init(tmp_path / "upstream")
    up.commit("Initial import", {"pkg/__init__.py": "", "pkg/envs.py": ENVS,
                                 "pkg/runner.py": RUNNER, "pkg/util.py": UTIL,
                                 "pkg/old.py": "def helper():\n    return 1\n",
                                 "pkg/app.py": "import os\n\n\ndef main():\n    return 0\n"})
    up.tag("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    return up


def test_a_clean_patch_using_a_name_only_a_skipped_patch_defines_is_named(
        tmp_path: Path, make_series: MakeSeries, series_root: Path) -> None:
    up = _project(tmp_path)
    up.commit("envs: add PKG_NEW", {"pkg/envs.py": ENVS.replace(
        '    "PKG_BETA": lambda: os.getenv("PKG_BETA", "0"),\n',
        '    "PKG_BETA": lambda: os.getenv("PKG_BETA", "0"),\n'
        '    "PKG_NEW": lambda: os.getenv("PKG_NEW", "0"),\n')})
    up.commit("runner: use PKG_NEW", {"pkg/runner.py": RUNNER.replace(
        "    return 0\n", "    if envs.PKG_NEW and envs.PKG_ALPHA:\n        return 1\n"
        "    from pkg.util import h3\n    return h3()\n")})
    up.checkout("main")  # upstream rewrites the line 0001 added beside: 0001 conflicts
    up.commit("envs: BETA defaults on", {"pkg/envs.py": ENVS.replace(
        'os.getenv("PKG_BETA", "0")', 'os.getenv("PKG_BETA", "1")')})
    make_series(up, "feature")
    assert _carry(up, series_root, "rebase", "demo", "--onto", "main").code == 1
    res = _carry(up, series_root, "rebase", "--skip", "-v")
    assert res.code == 0, res.out + res.err
    want = "0002 applies cleanly but uses envs.PKG_NEW, which only the skipped 0001 defines"
    assert f"main: {want}" in res.out
    # envs.PKG_ALPHA is declared to the module's __getattr__, h3 is defined: no finding
    assert "PKG_ALPHA" not in res.out and "h3" not in res.out
    status = _carry(up, series_root, "status", "demo")
    said = " ".join(status.out.split())  # folded to the terminal's width, never cut
    assert status.code == 0 and f"audit: {want}" in said, status.out + status.err
    data = json.loads(_carry(up, series_root, "status", "demo", "--json").out)
    assert data["series"][0]["audit"] == {"carry/demo/main": [want]}

    dry = _carry(up, series_root, "rebase", "demo", "--onto", "main", "--dry-run", "--json")
    assert dry.code == 1  # a conflict, so no audit of a replay that did not finish
    assert json.loads(dry.out)[0]["audit"] == []


def test_an_import_of_a_module_upstream_moved_is_named_and_a_defined_name_is_not(
        tmp_path: Path, make_series: MakeSeries, series_root: Path) -> None:
    up = _project(tmp_path)
    up.commit("app: use helpers", {"pkg/app.py": "import os\n\nfrom pkg.old import helper\n"
                                   "from pkg.util import h2\nimport pkg.util\n\n\n"
                                   "def main():\n    return helper() + h2() + "
                                   "pkg.util.h5()\n"})
    up.checkout("main")
    up.mv("pkg/old.py", "pkg/moved.py")
    up.commit("Move old to moved")
    make_series(up, "feature")
    res = _carry(up, series_root, "rebase", "demo", "--onto", "main", "--json")
    assert res.code == 0, res.err
    (result,) = json.loads(res.out)
    (finding,) = result["audit"]
    assert finding["kind"] == "module" and finding["name"] == "pkg.old"
    assert finding["path"] == "pkg/app.py" and finding["defined_by"] is None
    assert finding["line"] == ("0001 applies cleanly but imports pkg.old, a module the "
                               "target does not have")
    human = _carry(up, series_root, "rebase", "demo", "--onto", "main", "--dry-run")
    assert "pkg.old, a module the target does not have" in human.out


def test_a_syntax_error_made_by_a_clean_merge_is_named(
        tmp_path: Path, make_series: MakeSeries, series_root: Path) -> None:
    """Upstream turns a block of lines into a triple-quoted string; the patch adds, far away
    inside that block, a line whose comment holds three quotes. Each side compiles, git
    merges them cleanly, and the result does not compile."""
    body = "".join(f"V{i} = {i}\n" for i in range(12))
    up = CommitBuilder.init(tmp_path / "upstream")
    up.commit("Initial import", {"pkg/__init__.py": "", "pkg/table.py": "# table\n" + body,
                                 "README": "readme\n"})
    up.tag("base")
    git(up.path, "checkout", "-q", "-b", "feature")
    up.commit("table: add Q", {"pkg/table.py": "# table\n" + body.replace(
        "V6 = 6\n", 'V6 = 6\nQ = 1  # """\n'), "NOTES.txt": 'import nowhere """\n'})
    up.checkout("main")
    lines = body.splitlines(keepends=True)
    up.commit("table: keep the values as text", {"pkg/table.py": 'DOC = """\n' + "".join(
        lines[:11]) + '"""\n' + lines[11]})
    make_series(up, "feature")
    res = _carry(up, series_root, "rebase", "demo", "--onto", "main", "--json")
    assert res.code == 0, res.err
    (finding,) = json.loads(res.out)[0]["audit"]  # the text file is not Python: ignored
    assert finding["kind"] == "syntax" and finding["path"] == "pkg/table.py"
    assert finding["line"].startswith("0001 applies cleanly but pkg/table.py does not "
                                      "compile: line ")


def test_a_hostile_file_is_reported_not_audited_never_a_traceback(
        tmp_path: Path, make_series: MakeSeries, series_root: Path) -> None:
    up = _project(tmp_path)
    use = "from pkg.util import h99\n"  # a name the text cannot settle: the file is parsed
    up.commit("Deep", {"pkg/deep.py": use + "x = 1" + " + 1" * 150_000 + "\n",
                       "pkg/neg.py": use + "y = " + "-" * 150_000 + "1\n",
                       "pkg/plain.py": "z = " + "-" * 150_000 + "1\n"})  # never parsed
    make_series(up, "feature")
    res = _carry(up, series_root, "rebase", "demo", "--onto", "main", "-v")
    assert res.code == 0 and "Traceback" not in res.err, res.err
    assert "main: 0001: could not audit pkg/deep.py: nested too deeply to parse" in res.out
    assert "main: 0001: could not audit pkg/neg.py: nested too deeply to parse" in res.out
    assert "plain.py" not in res.out
    assert pyblobs.parse(b"#" * (pyblobs.MAX_BYTES + 1)) == "unaudited: larger than 4 MiB"


def test_a_ci_cell_with_a_finding_is_not_validated(tmp_path: Path, series_root: Path) -> None:
    """The series' tests pass on upstream's renamed module, but its new file still imports
    the old name: `carry ci` says the cell is not validated, and why."""
    from carry.series import store as seriesmod
    from carry.series.store import Target
    from tests.conftest import TOBY
    from tests.validate import synthetic

    up = synthetic.upstream_project(tmp_path / "calc")
    up.checkout("fork/fix")
    up.commit("Pin helper", {"calc/extra.py": synthetic.SPDX_LINE + "from calc.util import "
                             "clamp\n\n\ndef pinned(x: int) -> int:\n    return clamp(x, 0, 9)\n"},
              author=TOBY)
    up.branch("fork/extra")
    up.checkout("main")
    up.mv("calc/util.py", "calc/limits.py")
    test_util = (up.path / "tests/test_util.py").read_text()
    up.commit("Rename util to limits",
              {"tests/test_util.py": test_util.replace("calc.util", "calc.limits")})
    synthetic.import_series(series_root, up.path, "extra", "extra", sys.executable)
    s = seriesmod.find(series_root, "extra")
    s.manifest.targets = [Target(name="main", ref="main")]
    seriesmod.save_manifest(s)
    r = run_carry("ci", "--repo", str(up.path), "--engine", "local", "--out",
                  str(tmp_path / "out"), "--json", env={"CARRY_SERIES_DIR": str(series_root)})
    assert r.code == 1, r.err
    (row,) = json.loads(r.out)["rows"]
    assert row["rebase"] == "applied" and row["validate"] == "passed, audit failed"
    want = "0003 applies cleanly but imports calc.util, a module the target does not have"
    assert row["audit"] == [want]
    assert json.loads(Path(row["report"]).read_text())["audit"] == [want]  # validate's report
    assert f"<br>audit: {want}" in (tmp_path / "out" / "summary.md").read_text()
    git(up.path, "branch", "carry/extra/checked", row["head"])  # the PR carries that head
    pr = run_carry("pr", "extra", "--repo", str(up.path), "--branch", "carry/extra/checked",
                   "--forge-repo", "lab/fork", "--base", "main", "--dry-run", "--force",
                   "--validation", row["report"], "--json",
                   env={"CARRY_SERIES_DIR": str(series_root)})
    assert pr.code == 0, pr.out + pr.err
    (line,) = [x for x in json.loads(pr.out)["body"].splitlines() if "0003-Pin-helper" in x]
    assert line.endswith(f": audit: {want}"), line  # said on its patch's line


def test_a_module_s_names_are_read_cautiously() -> None:
    """Conditional, TYPE_CHECKING and `global` definitions count as defined; a star import,
    a `__getattr__` that declares nothing, or globals() leave a missing name unknown."""
    import ast

    from carry.replay import pyfacts

    def facts(text: str) -> pyfacts.Facts:
        return pyfacts.facts(ast.parse(text), text.encode())

    mod = facts("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from a import B\n"
                "try:\n    import foo\nexcept ImportError:\n    foo = None\n"
                "def f():\n    global Z\n    Z = 1\n"
                "for I in range(3):\n    pass\nwith open('x') as W:\n    pass\n")
    assert all(mod.defines(n) for n in ("B", "foo", "Z", "I", "W", "f"))
    assert mod.defines("missing") is False
    assert facts("from x import *\n").defines("Y") is None
    assert facts("def __getattr__(name):\n    return 1\n").defines("Y") is None
    assert facts("globals()['Y'] = 1\n").defines("Y") is None
    declared = facts("NAMES = {'A': 1}\ndef __getattr__(name):\n    return NAMES[name]\n")
    assert declared.defines("A") is True and declared.defines("Q") is False
