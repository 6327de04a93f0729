"""What a Python file says about names, read with the standard library's `ast` and never by
importing it: a module's top-level names (conditional ones too), the names a module-level
`__getattr__` declares, and the project names a file's lines use. `audit` asks these of the
trees a replay leaves. Everything here is a cautious reading: when a module may define names
no parser can see (a star import, `globals()`, a `__getattr__` with no declared names), it
says so, and the audit then says nothing."""

from __future__ import annotations

import ast
from dataclasses import dataclass

# Calls and names through which a module may define what no parser sees.
_DYNAMIC_CALLS = frozenset({"globals", "vars", "exec"})
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
_BLOCKS = (ast.If, ast.Try, ast.TryStar, ast.With, ast.AsyncWith, ast.For, ast.AsyncFor,
           ast.While, ast.Match)


@dataclass(frozen=True)
class Facts:
    """A module's top level: `names` it binds anywhere outside functions and classes (in
    if/try/with blocks too, `TYPE_CHECKING` included, and by `global` statements), `declared`
    the strings its dict, list, tuple and set literals name (what a `__getattr__` serves, as
    vLLM's `envs.environment_variables` does), and whether it may bind others unseen."""

    names: frozenset[str]
    declared: frozenset[str]
    getattr: bool
    unseen: bool  # a star import, globals(), vars(), exec, a write through sys.modules

    def defines(self, name: str) -> bool | None:
        """True, False, or None when no reading can tell."""
        if name in self.names or (self.getattr and name in self.declared):
            return True
        if self.unseen or (self.getattr and not self.declared):
            return None
        return False


def facts(tree: ast.Module) -> Facts:
    names: set[str] = set()
    declared: set[str] = set()
    unseen = False
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    unseen = True
                else:
                    names.add(alias.asname or alias.name.partition(".")[0])
            continue
        if isinstance(node, _BLOCKS):
            heads = [v for f, v in ast.iter_fields(node) if f not in _BODIES]
            for part in _BODIES:
                for child in getattr(node, part, ()):
                    if isinstance(child, ast.ExceptHandler) and child.name:
                        names.add(child.name)
                    stack.extend(child.body if isinstance(
                        child, ast.ExceptHandler | ast.match_case) else [child])
        else:
            heads = [node]
        for head in heads:
            for item in head if isinstance(head, list) else [head]:
                if isinstance(item, ast.AST):
                    _literals(item, names, declared)
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Global):
            names.update(sub.names)
        else:
            unseen = unseen or _dynamic(sub)
    return Facts(frozenset(names), frozenset(declared), "__getattr__" in names, unseen)


def _dynamic(node: ast.AST) -> bool:
    """globals(), vars(), exec(), or a write through `sys.modules`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in _DYNAMIC_CALLS or (
            node.func.id == "setattr" and bool(node.args) and _sys_module(node.args[0]))
    return isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
        _sys_module(node.value)


def _sys_module(node: ast.expr) -> bool:
    """`sys.modules[...]`: a module written to through it binds names no parser sees."""
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and \
        node.value.attr == "modules" and isinstance(node.value.value, ast.Name) and \
        node.value.value.id == "sys"


def _literals(node: ast.AST, names: set[str], declared: set[str]) -> None:
    """Add what one top-level statement (or a block's header) binds, and the strings its
    literals name. Lambdas and comprehensions in it are walked too: a name counted that is
    not really bound only makes the audit quieter."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, ast.Dict):
            declared.update(k.value for k in sub.keys
                            if isinstance(k, ast.Constant) and isinstance(k.value, str))
        elif isinstance(sub, ast.List | ast.Tuple | ast.Set):
            declared.update(e.value for e in sub.elts
                            if isinstance(e, ast.Constant) and isinstance(e.value, str))
        elif isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Store) and \
                isinstance(sub.slice, ast.Constant) and isinstance(sub.slice.value, str):
            declared.add(sub.slice.value)


@dataclass(frozen=True)
class Use:
    """One project name a line uses: `module` imported whole (`name` empty), or `name` read
    from `module` (`from module import name`, or `alias.name` with `alias` bound to the
    module: `attribute`, where `module` may turn out to be no module at all). `shown` is
    how the code writes it."""

    module: str
    name: str
    shown: str
    line: int
    attribute: bool = False


def uses(tree: ast.Module, path: str, lines: set[int]) -> list[Use]:
    """The imports and module attributes on `lines` (1-based) of the file at `path`."""
    bound = _bindings(tree, path)
    out: list[Use] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _line(alias, node) in lines:
                    out.append(Use(alias.name, "", alias.name, _line(alias, node)))
        elif isinstance(node, ast.ImportFrom):
            module = absolute(node, path)
            if module is None:
                continue
            for alias in node.names:
                at = _line(alias, node)
                if alias.name != "*" and (at in lines or node.lineno in lines):
                    out.append(Use(module, alias.name, f"{module}.{alias.name}", at))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and \
                node.lineno in lines:
            parts = _dotted(node.value)
            if parts and parts[0] in bound:
                module = ".".join([bound[parts[0]], *parts[1:]])
                out.append(Use(module, node.attr, ".".join([*parts, node.attr]), node.lineno,
                               attribute=True))
    return out


def absolute(node: ast.ImportFrom, path: str) -> str | None:
    """The module a `from` import names, relative ones made absolute from the file's path."""
    if not node.level:
        return node.module
    package = path.split("/")[:-1]
    if node.level - 1 > len(package):
        return None
    base = package[:len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])]) or None


def _line(alias: ast.alias, node: ast.stmt) -> int:
    return getattr(alias, "lineno", None) or node.lineno


def _dotted(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _bindings(tree: ast.Module, path: str) -> dict[str, str]:
    """Local names bound to a module by an import, and to nothing else anywhere in the file
    (a parameter or an assignment of the same name makes it unknown)."""
    bound: dict[str, str | None] = {}
    other: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.partition(".")[0]
                full = alias.name if alias.asname else local
                bound[local] = full if bound.get(local, full) == full else None
        elif isinstance(node, ast.ImportFrom):
            module = absolute(node, path)
            for alias in node.names:
                local = alias.asname or alias.name
                dotted = f"{module}.{alias.name}" if module else None
                bound[local] = dotted if dotted and bound.get(local, dotted) == dotted else None
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            other.add(node.id)
        elif isinstance(node, ast.arg):
            other.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            other.add(node.name)
    return {k: v for k, v in bound.items() if v and k not in other}
