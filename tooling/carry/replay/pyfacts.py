"""What a Python file says about names, read with the standard library's `ast` and never by
importing it: a module's top-level names (conditional ones too), the names a module-level
`__getattr__` declares, and the project names a file's lines use. `audit` asks these of the
trees a replay leaves. Everything here is a cautious reading: when a module may define names
no parser can see (a star import, `globals()`, a `__getattr__` with no declared names), it
says so, and the audit then says nothing."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

# What in a module's text may define names no parser sees: globals(), vars(), exec(), a
# write through sys.modules.
_DYNAMIC = re.compile(rb"\b(?:globals|vars|exec)\s*\(|setattr\(\s*sys\.modules|"
                      rb"sys\.modules\[[^\]\n]*\]\.\w+\s*=[^=]")
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


def facts(tree: ast.Module, text: bytes) -> Facts:
    """A module's facts, from its statements (never a walk of every expression) and, for
    what may define names unseen, its text."""
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
            heads: list[ast.AST] = list(_targets(node))
            for part in _BODIES:
                for child in getattr(node, part, ()):
                    if isinstance(child, ast.ExceptHandler) and child.name:
                        names.add(child.name)
                    stack.extend(child.body if isinstance(
                        child, ast.ExceptHandler | ast.match_case) else [child])
        else:
            heads = [node]
        for head in heads:
            _literals(head, names, declared)
    for stmt in statements(tree.body):
        if isinstance(stmt, ast.Global):
            names.update(stmt.names)
    unseen = unseen or bool(_DYNAMIC.search(text))
    return Facts(frozenset(names), frozenset(declared), "__getattr__" in names, unseen)


def _literals(node: ast.AST, names: set[str], declared: set[str]) -> None:
    """Add what one top-level statement (or a block's header) binds, and the strings that
    the literals it assigns or updates with name (the keys of a dict, the items of a list):
    only targets and the literals themselves are read, never a lambda inside a literal."""
    values: list[ast.expr] = []
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets, values = node.targets, [node.value]
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets, values = [node.target], [node.value] if node.value else []
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        values = [*node.value.args, *(k.value for k in node.value.keywords)]
    elif isinstance(node, ast.expr):
        targets = [node]  # a loop or `with` target
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
                names.add(sub.id)
            elif isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Constant) and \
                    isinstance(sub.slice.value, str):
                declared.add(sub.slice.value)
    for value in values:
        items = value.keys if isinstance(value, ast.Dict) else \
            value.elts if isinstance(value, ast.List | ast.Tuple | ast.Set) else []
        declared.update(k.value for k in items
                        if isinstance(k, ast.Constant) and isinstance(k.value, str))


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
    """The imports and module attributes on `lines` (1-based) of the file at `path`. Only
    the statements whose span holds such a line are walked into: a patch that adds one line
    to a 7,000-line module costs its statement, not the module."""
    bound = _bindings(tree, path)
    out: list[Use] = []
    for stmt in statements(tree.body):
        end = stmt.end_lineno or stmt.lineno
        if not any(stmt.lineno <= n <= end for n in lines):
            continue
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if _line(alias, stmt) in lines:
                    out.append(Use(alias.name, "", alias.name, _line(alias, stmt)))
        elif isinstance(stmt, ast.ImportFrom):
            module = absolute(stmt, path)
            for alias in stmt.names if module else ():
                at = _line(alias, stmt)
                if module and alias.name != "*" and (at in lines or stmt.lineno in lines):
                    out.append(Use(module, alias.name, f"{module}.{alias.name}", at))
        else:
            for head in _heads(stmt):
                out.extend(_attributes(head, bound, lines))
    return out


def _attributes(node: ast.AST, bound: dict[str, str], lines: set[int]) -> list[Use]:
    out = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Load) and \
                sub.lineno in lines:
            parts = _dotted(sub.value)
            if parts and parts[0] in bound:
                module = ".".join([bound[parts[0]], *parts[1:]])
                out.append(Use(module, sub.attr, ".".join([*parts, sub.attr]), sub.lineno,
                               attribute=True))
    return out


def statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Every statement, nested ones too, without walking into expressions."""
    out: list[ast.stmt] = []
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        out.append(stmt)
        for part in _BODIES:
            for child in reversed(getattr(stmt, part, ())):
                if isinstance(child, ast.ExceptHandler | ast.match_case):
                    stack.extend(reversed(child.body))
                else:
                    stack.append(child)
    return out


def _heads(stmt: ast.stmt) -> list[ast.AST]:
    """A statement's own expressions: all of a simple one, the header of a compound one."""
    out: list[ast.AST] = []
    for field, value in ast.iter_fields(stmt):
        if field in _BODIES:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.AST):
                out.append(item)
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
    """Local names bound to a module by an import, and to nothing else by any statement of
    the file (a parameter, an assignment, a loop or `with` target of the same name makes it
    unknown)."""
    bound: dict[str, str | None] = {}
    other: set[str] = set()
    for stmt in statements(tree.body):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                local = alias.asname or alias.name.partition(".")[0]
                full = alias.name if alias.asname else local
                bound[local] = full if bound.get(local, full) == full else None
        elif isinstance(stmt, ast.ImportFrom):
            module = absolute(stmt, path)
            for alias in stmt.names:
                local = alias.asname or alias.name
                dotted = f"{module}.{alias.name}" if module else None
                bound[local] = dotted if dotted and bound.get(local, dotted) == dotted else None
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            other.add(stmt.name)
            a = stmt.args
            other.update(x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs,
                                         *filter(None, [a.vararg, a.kwarg])])
        elif isinstance(stmt, ast.ClassDef):
            other.add(stmt.name)
        else:
            for target in _targets(stmt):
                other.update(n.id for n in ast.walk(target)
                             if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load))
        for handler in getattr(stmt, "handlers", ()):
            other.add(handler.name or "")
    return {k: v for k, v in bound.items() if v and k not in other}


def _targets(stmt: ast.stmt) -> list[ast.expr]:
    """What a statement assigns to (walrus and comprehension names are not looked for)."""
    if isinstance(stmt, ast.Assign):
        return stmt.targets
    if isinstance(stmt, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
        return [stmt.target]
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return [i.optional_vars for i in stmt.items if i.optional_vars]
    if isinstance(stmt, ast.Delete):
        return stmt.targets
    return []
