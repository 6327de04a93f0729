"""The package's layout is a contract (docs/architecture.md): stages import only the stages
below them, every module imports alone in a fresh interpreter (no cycle hidden by import
order), no module is over 400 lines, the package's top holds at most four modules, no function
is over 80 lines and none outside cli/ takes more than 8 parameters."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests import structure

PKG = Path(__file__).resolve().parent.parent / "tooling" / "carry"

# What each stage may import, besides itself. Read bottom-up, it is the flow:
# base < git < series < replay < intake, rebase, validate < publish < job < status < cli.
ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "git": {"base"},
    "series": {"base", "git"},
    "replay": {"base", "git", "series"},
    "intake": {"base", "git", "series", "replay"},
    "rebase": {"base", "git", "series", "replay"},
    "validate": {"base", "git", "series", "replay"},
    "publish": {"base", "git", "series", "validate"},
    "job": {"base", "git", "series", "replay", "rebase", "validate", "publish"},
    "status": {"base", "git", "series", "replay", "rebase", "validate"},
    "cli": {"base", "git", "series", "replay", "intake", "rebase", "validate", "publish",
            "job", "status"},
    "__main__": {"cli"},
    "__init__": set(),
}


def _modules() -> list[Path]:
    return sorted(PKG.rglob("*.py"))


def _stage(path: Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    return rel.parts[0]


def _imported_stages(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] if node.module != "carry" else \
                [f"carry.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "carry" and len(parts) > 1:
                out.add(parts[1])
    return out


def test_stages_import_only_the_stages_below_them() -> None:
    wrong = []
    for path in _modules():
        stage = _stage(path)
        assert stage in ALLOWED, f"{path}: a new stage; add it to ALLOWED and the docs"
        for other in _imported_stages(path) - {stage}:
            if other not in ALLOWED[stage]:
                wrong.append(f"{path.relative_to(PKG)} imports carry.{other}")
    assert not wrong, wrong


def test_every_module_imports_alone() -> None:
    names = []
    for path in _modules():
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        if parts[-1] != "__main__":
            names.append(".".join(parts))

    def alone(name: str) -> tuple[str, int, str]:
        proc = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True,
                              text=True)
        return name, proc.returncode, proc.stderr.strip().splitlines()[-1:]  # type: ignore[return-value]

    with ThreadPoolExecutor(4) as pool:
        failed = [r for r in pool.map(alone, names) if r[1] != 0]
    assert not failed, failed


def test_no_module_over_400_lines_and_a_small_top() -> None:
    long = [f"{p.relative_to(PKG)}: {n}" for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400]
    assert not long, long
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= 4, top


def test_every_stage_says_what_it_imports_and_the_docs_name_every_module() -> None:
    """A stage's docstring states the stages it may import, exactly as ALLOWED has them, and
    docs/architecture.md names every module: words that drift from the code fail here."""
    wrong = []
    for pkg in sorted(p for p in PKG.iterdir() if (p / "__init__.py").is_file()):
        doc = ast.get_docstring(ast.parse((pkg / "__init__.py").read_text(encoding="utf-8")))
        said = re.search(r"Imports ([^.]*)\.", " ".join((doc or "").split()))
        assert said, f"{pkg.name}/__init__.py: its docstring must say what the stage imports"
        words = set(re.findall(r"[a-z_]+", said.group(1)))
        named = set(ALLOWED) & words if "every" not in words else ALLOWED[pkg.name]
        if named != ALLOWED[pkg.name] and not ("nothing" in words and not ALLOWED[pkg.name]):
            wrong.append(f"{pkg.name}: says {sorted(named)}, imports {sorted(ALLOWED[pkg.name])}")
    assert not wrong, wrong
    assert structure.undocumented() == [], "docs/architecture.md must name these modules"



def test_no_import_cycle_counting_imports_inside_functions() -> None:
    """An import tucked into a function is how a cycle hides from an import-order check:
    the graph counts every import wherever it is written (tests/structure.py)."""
    assert structure.cycles(structure.graph()) == []


def test_no_function_over_80_lines_and_none_outside_cli_over_8_parameters() -> None:
    """A function a reader cannot hold in one screen, or one whose call needs a dozen
    positional values, is where the next engineer trips (F19): split it by concept, or give
    what travels together a dataclass."""
    assert [f"{f.module}.{f.name}: {f.lines} lines" for f in structure.long_functions()] == []
    assert [f"{f.module}.{f.name}: {f.params} parameters"
            for f in structure.wide_functions()] == []
