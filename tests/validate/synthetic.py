"""A synthetic upstream project that stands in for vLLM, and fork series carried on it.

Upstream `calc` has three pytest suites, a `.pre-commit-config.yaml` with `repo: local` hooks
(`language: system`, one at the manual stage) and two releases: `v1`, whose manual hook is
`typecheck-3.12`, and `v2`, which renames it `typecheck` (as vLLM 0.32 did with mypy-3.12).
`retained()` has a bug; the fork branches fix it in different ways:

- fork/fix:    the fix, then a test that fails without it (the good series)
- fork/broken: the fix, then a test that fails even with it
- fork/sloppy: the fix with a tab and a trailing blank, so a hook and the diff check fail
- fork/weak:   the fix, then a test that passes without it
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from pathlib import Path

from carry.intake import importer
from carry.series import store as seriesmod
from carry.series.store import Hook

try:  # tests/ on sys.path (rootdir conftest), or tests/ as a package
    from conftest import LOGPROBZ, TOBY, CommitBuilder
except ImportError:
    from tests.conftest import LOGPROBZ, TOBY, CommitBuilder

SUITES = ["tests/test_core.py", "tests/unit", "tests/test_util.py"]
WHEEL = "vendor/carry_tinydep-1.0-py3-none-any.whl"

CORE = '''"""Replay boundaries: which block states a cache keeps (a stand-in for vLLM's)."""


def boundaries(n: int, block: int) -> list[int]:
    """Every block boundary at or below n."""
    return list(range(block, n + 1, block))


def retained(n: int, block: int) -> list[int]:
    """The last boundary and the one below it: an EAGLE lookup may need either."""
    return boundaries(n, block){fix}
'''
BUG, FIX = "[-1:]", "[-2:]"

TEST_CORE = '''from calc.core import boundaries, retained


def test_boundaries():
    assert boundaries(64, 16) == [16, 32, 48, 64]


def test_boundaries_partial_block():
    assert boundaries(70, 16) == [16, 32, 48, 64]


def test_retained_is_a_subset():
    assert set(retained(64, 16)) <= set(boundaries(64, 16))
'''
NEW_TEST = '''

def test_retained_keeps_the_state_below_the_last_boundary():
    assert retained(64, 16) == [48, 64]
'''
BROKEN_TEST = '''

def test_retained_keeps_three_states():
    assert retained(64, 16) == [32, 48, 64]
'''
WEAK_TEST = '''

def test_retained_keeps_the_last_boundary():
    assert retained(64, 16)[-1] == 64
'''

CONFIG = '''default_stages: [pre-commit, manual]
repos:
  - repo: local
    hooks:
      - id: no-tabs
        name: no tabs in Python files
        entry: python tools/no_tabs.py
        language: system
        types: [python]
      - id: spdx
        name: SPDX header on library files
        entry: python tools/spdx.py
        language: system
        files: ^calc/
        types: [python]
      - id: {typecheck}
        name: typecheck (manual, CI-style)
        entry: python tools/typecheck.py
        language: system
        types: [python]
        stages: [manual]
'''
NO_TABS = '''import sys

bad = [p for p in sys.argv[1:] if "\\t" in open(p, encoding="utf-8").read()]
for p in bad:
    print(f"{p}: contains a tab")
sys.exit(1 if bad else 0)
'''
SPDX = '''import sys

bad = [p for p in sys.argv[1:] if "SPDX-License-Identifier" not in open(p).read()]
for p in bad:
    print(f"{p}: no SPDX-License-Identifier")
sys.exit(1 if bad else 0)
'''
TYPECHECK = '''import ast
import sys

for p in sys.argv[1:]:
    ast.parse(open(p, encoding="utf-8").read(), p)
print(f"typecheck: {len(sys.argv) - 1} files")
'''
SPDX_LINE = "# SPDX-License-Identifier: Apache-2.0\n"


def tiny_wheel() -> bytes:
    """A real, dependency-free wheel, so a plan's requirements install with no network."""
    files = {
        "carry_tinydep/__init__.py": b"VALUE = 42\n",
        "carry_tinydep-1.0.dist-info/METADATA":
            b"Metadata-Version: 2.1\nName: carry-tinydep\nVersion: 1.0\n",
        "carry_tinydep-1.0.dist-info/WHEEL":
            b"Wheel-Version: 1.0\nGenerator: carry-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n",
    }
    record = ""
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{name},sha256={digest},{len(data)}\n"
    record += "carry_tinydep-1.0.dist-info/RECORD,,\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("carry_tinydep-1.0.dist-info/RECORD", record)
    return buf.getvalue()


def upstream_project(path: Path) -> CommitBuilder:
    b = CommitBuilder.init(path)
    b.commit("Initial calc", {
        "pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
        "calc/__init__.py": SPDX_LINE,
        "calc/core.py": SPDX_LINE + CORE.format(fix=BUG),
        "calc/util.py": SPDX_LINE + "def clamp(x: int, lo: int, hi: int) -> int:\n"
                        "    return max(lo, min(x, hi))\n",
        "tests/test_core.py": TEST_CORE,
        "tests/test_util.py": "from calc.util import clamp\n\n\n"
                              "def test_clamp_low():\n    assert clamp(-1, 0, 9) == 0\n\n\n"
                              "def test_clamp_high():\n    assert clamp(10, 0, 9) == 9\n",
        "tests/unit/test_blocks.py": "import pytest\n\nfrom calc.core import boundaries\n\n\n"
                                     "@pytest.mark.parametrize('n', [16, 32, 48])\n"
                                     "def test_aligned(n):\n"
                                     "    assert boundaries(n, 16)[-1] == n\n",
        "tests/unit/test_dep.py": "import pytest\n\n\ndef test_tinydep():\n"
                                  "    dep = pytest.importorskip('carry_tinydep')\n"
                                  "    assert dep.VALUE == 42\n",
        WHEEL: tiny_wheel(),
        ".pre-commit-config.yaml": CONFIG.format(typecheck="typecheck-3.12"),
        "tools/no_tabs.py": NO_TABS, "tools/spdx.py": SPDX, "tools/typecheck.py": TYPECHECK,
    })
    b.tag("v1")
    b.commit("Release 2: one typecheck hook", {
        ".pre-commit-config.yaml": CONFIG.format(typecheck="typecheck"),
        "calc/util.py": SPDX_LINE + "def clamp(x: int, lo: int, hi: int) -> int:\n"
                        "    \"\"\"x, limited to [lo, hi].\"\"\"\n"
                        "    return max(lo, min(x, hi))\n",
    })
    b.tag("v2")
    for branch, core, test in (
        ("fix", CORE.format(fix=FIX), NEW_TEST),
        ("broken", CORE.format(fix=FIX), BROKEN_TEST),
        ("sloppy", CORE.format(fix=FIX) + "# keeps\tboth states \n", NEW_TEST),
        ("weak", CORE.format(fix=FIX), WEAK_TEST),
    ):
        b.checkout("v1")
        b.commit(f"[BugFix] retained() keeps the state below the last boundary ({branch})",
                 {"calc/core.py": SPDX_LINE + core}, author=TOBY)
        b.commit("Test the state below the last boundary",
                 {"tests/test_core.py": TEST_CORE + test}, author=LOGPROBZ)
        b.branch(f"fork/{branch}")
    b.checkout("main")
    return b


def import_series(root: Path, repo: Path, name: str, branch: str, python: str,
                  hooks: list[Hook] | None = None, requirements: list[str] | None = None,
                  image: str = "") -> None:
    """`carry import` the fork branch, then write the [test] table #643-style."""
    importer.run(root, name,
        importer.Source(str(repo), range=f"v1..fork/{branch}"), title=f"calc {branch}")
    s = seriesmod.find(root, name)
    t = s.manifest.test
    t.python, t.image, t.suites = python, image, list(SUITES)
    t.requirements = list(requirements or [])
    t.hooks = hooks if hooks is not None else [
        Hook(), Hook(id="typecheck-3.12", stage="manual", fallback="typecheck")]
    seriesmod.save_manifest(s)
