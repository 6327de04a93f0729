"""Measures the package's shape from its source alone, so the layout test and a closing note
read the same numbers: `python tests/structure.py` prints them.

Imports are counted wherever they are written, inside functions too, because an import tucked
into a function is how a cycle hides from an import-order check."""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "tooling" / "carry"
MAX_FUNCTION_LINES = 80
MAX_PARAMS = 8


@dataclass(frozen=True)
class Function:
    module: str
    name: str
    lines: int
    params: int


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _resolve(current: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = current.split(".")
    base = base if is_pkg else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every carry module `name` imports, at any depth of its code."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = _resolve(name, path.name == "__init__.py", node)
            # `from pkg import submodule` is an edge to the submodule; any other name is
            # an edge to the module that defines it
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod
                       for a in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("carry"):
                out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    # A package's __init__ is imported with any of its modules; it is not an edge of a cycle
    # unless it imports something itself, which the graph then shows.
    return {name: imports(name, path, known) for name, path in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def functions() -> list[Function]:
    out = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args
                params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
                params = [a for a in params if a.arg not in ("self", "cls")]
                count = len(params) + bool(args.vararg) + bool(args.kwarg)
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                out.append(Function(name, node.name, lines, count))
    return out


def long_functions() -> list[Function]:
    return [f for f in functions() if f.lines > MAX_FUNCTION_LINES]


def wide_functions() -> list[Function]:
    return [f for f in functions()
            if f.params > MAX_PARAMS and not f.module.startswith("carry.cli")]


def loose_types() -> tuple[int, int]:
    """How many `Any` and `dict[str, Any]` the package spells out."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in modules().values())
    return len(re.findall(r"\bAny\b", text)), len(re.findall(r"dict\[str, Any\]", text))


def undocumented(doc: Path = ROOT / "docs" / "architecture.md") -> list[str]:
    """Modules docs/architecture.md never names (as `stage/module.py` or `module.py`)."""
    text = doc.read_text(encoding="utf-8") if doc.is_file() else ""
    missing = []
    for path in modules().values():
        if path.name == "__init__.py" or path.name == "__main__.py":
            continue
        rel = path.relative_to(PKG).as_posix()
        if rel not in text and f"`{path.name}`" not in text:
            missing.append(rel)
    return missing


def main() -> int:
    edges = graph()
    found = cycles(edges)
    anys, dicts = loose_types()
    print(f"modules: {len(edges)}; import cycles (imports inside functions counted): {len(found)}")
    for comp in found:
        print("  cycle: " + " <-> ".join(comp))
    longs = long_functions()
    print(f"functions over {MAX_FUNCTION_LINES} lines: {len(longs)}")
    for f in sorted(longs, key=lambda f: -f.lines):
        print(f"  {f.module}.{f.name}: {f.lines} lines")
    wides = wide_functions()
    print(f"functions outside cli/ with more than {MAX_PARAMS} parameters: {len(wides)}")
    for f in sorted(wides, key=lambda f: -f.params):
        print(f"  {f.module}.{f.name}: {f.params} parameters")
    print(f"`Any`: {anys}; `dict[str, Any]`: {dicts}")
    missing = undocumented()
    print(f"modules docs/architecture.md does not name: {len(missing)}")
    readme = ROOT / "README.md"
    if readme.is_file():
        print(f"README.md words: {len(readme.read_text(encoding='utf-8').split())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
