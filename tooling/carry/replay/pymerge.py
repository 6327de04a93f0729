"""The syntax-aware part of `autoresolve`: a conflicted Python hunk whose three sides are the
same statements but for the entries of one collection (a call's arguments, a list, tuple or
set; a dict's are left to the line merge), each side adding entries of its own at its end,
merged on the syntax tree rather than on lines, so that a side that also re-wrapped the
collection (one argument a line, a trailing comma) does not make it a conflict. Upstream's
text is kept as it is, and the patch's new entries are put after its last one, in its layout.

The sides are parsed with `ast` under an `if 1:` so that an indented fragment parses; a
side that does not parse alone, an entry added by both, an entry that spans lines, or any
other difference says nothing, and the hunk stops as before."""

from __future__ import annotations

import ast
from dataclasses import dataclass

Lines = tuple[bytes, ...]
_PREFIX = b"if 1:\n"


@dataclass(frozen=True)
class Merged:
    text: Lines
    name: str  # "the arguments of BatchDescriptor(...)"


def merge(base: Lines, ours: Lines, theirs: Lines) -> Merged | None:
    """Upstream's text (`ours`) with the entries the patch (`theirs`) added to the one
    collection where the three differ; None unless that is all that differs."""
    trees = [_parse(x) for x in (base, ours, theirs)]
    if any(t is None for t in trees) or not base:
        return None
    b, o, t = (x[0] for x in trees if x is not None)
    off_o, off_t = (x[1] for x in trees[1:] if x is not None)
    found: list[tuple[ast.AST, ast.AST, ast.AST]] = []
    if not _walk(b, o, t, found) or len(found) != 1:
        return None
    nb, no, nt = found[0]
    if isinstance(nb, ast.Dict):  # an entry is two nodes: left to the line merge
        return None
    eb, eo, et = (_dumps(n) for n in (nb, no, nt))
    added_o, added_t = eo[len(eb):], et[len(eb):]
    if eo[:len(eb)] != eb or et[:len(eb)] != eb or not added_o or not added_t \
            or set(added_o) & set(added_t):
        return None
    new = _elements(nt)[len(eb):]
    if any(isinstance(e, ast.keyword) and e.arg is None for e in [*_elements(no), *new]):
        return None  # a `**` mapping may give a keyword the other side added
    if isinstance(no, ast.Call) and all(any(not isinstance(e, ast.keyword) for e in side)
                                        for side in (_elements(no)[len(eb):], new)):
        return None  # both added positional arguments: each meant its own position
    if any(e.lineno != e.end_lineno for e in new):
        return None
    if isinstance(no, ast.Call):  # a keyword given twice: the call is refused at run time
        names = [k.arg for k in [*no.keywords, *new] if isinstance(k, ast.keyword) and k.arg]
        if len(names) != len(set(names)):
            return None
    text = _insert(ours, off_o, no, [_segment(theirs, off_t, e) for e in new])
    if text is None or _parse(text) is None:
        return None
    return Merged(text, _name(o, no))


def _parse(lines: Lines) -> tuple[ast.Module, int] | None:
    """The fragment's tree, and the line number of its first line (2 when an indented
    fragment is parsed under an `if 1:`)."""
    indented = bool(lines) and lines[0][:1] in (b" ", b"\t")
    try:
        return ast.parse((_PREFIX if indented else b"") + b"".join(lines)), 1 + indented
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _elements(node: ast.AST) -> list[ast.expr | ast.keyword]:
    if isinstance(node, ast.Call):
        return sorted([*node.args, *node.keywords], key=lambda e: (e.lineno, e.col_offset))
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return list(node.elts)
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return list(node.values)  # a value's position is the end of its entry
    return []


def _dumps(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Dict):
        return [ast.dump(k) + ":" + ast.dump(v) if k else ast.dump(v)
                for k, v in zip(node.keys, node.values, strict=True)]
    return [ast.dump(e) for e in _elements(node)]


def _walk(b: ast.AST, o: ast.AST, t: ast.AST,
          found: list[tuple[ast.AST, ast.AST, ast.AST]]) -> bool:
    """Whether the three trees are the same but for the entries of collections (each such
    triple added to `found`)."""
    if type(b) is not type(o) or type(b) is not type(t):
        return False
    if isinstance(b, ast.Call | ast.List | ast.Tuple | ast.Set | ast.Dict) \
            and not (_dumps(b) == _dumps(o) == _dumps(t)):
        if isinstance(b, ast.Call) and isinstance(o, ast.Call) and isinstance(t, ast.Call) \
                and not (ast.dump(b.func) == ast.dump(o.func) == ast.dump(t.func)):
            return False
        if isinstance(b, ast.Dict) and not _elements(b) and b.keys:
            return False
        found.append((b, o, t))
        return True
    for name in b._fields:
        vb, vo, vt = getattr(b, name), getattr(o, name, None), getattr(t, name, None)
        if isinstance(vb, list):
            if not (isinstance(vo, list) and isinstance(vt, list) and len(vb) == len(vo) ==
                    len(vt)):
                return False
            for xb, xo, xt in zip(vb, vo, vt, strict=True):
                if isinstance(xb, ast.AST):
                    if not _walk(xb, xo, xt, found):
                        return False
                elif not (xb == xo == xt):
                    return False
        elif isinstance(vb, ast.AST):
            if not (isinstance(vo, ast.AST) and isinstance(vt, ast.AST)
                    and _walk(vb, vo, vt, found)):
                return False
        elif not (vb == vo == vt):
            return False
    return True


def _segment(lines: Lines, off: int, node: ast.AST) -> bytes:
    line = lines[node.lineno - off]  # type: ignore[attr-defined]
    return line[node.col_offset:node.end_col_offset]  # type: ignore[attr-defined]


def _insert(lines: Lines, off: int, node: ast.AST, new: list[bytes]) -> Lines | None:
    """`lines` with `new` entries after the last entry of `node`, in its layout: each on a
    line of its own, indented as the last entry, when the collection spans lines (so no
    line grows), else after a comma on the same line."""
    entries = _elements(node)
    last = entries[-1]
    row, col = last.end_lineno - off, last.end_col_offset  # type: ignore[operator]
    if row < 0 or row >= len(lines):
        return None
    line = lines[row]
    rest, end = line[col:].rstrip(b"\r\n"), line[len(line.rstrip(b"\r\n")):]
    alone = last.lineno != node.lineno and rest.strip() in (b"", b",")  # type: ignore[attr-defined]
    if not alone:
        return (*lines[:row], line[:col] + b"".join(b", " + x for x in new) + line[col:],
                *lines[row + 1:])
    indent = line[:len(line) - len(line.lstrip())]
    comma = b"," if rest.strip() else b""  # upstream's trailing comma, or none, after all
    added = [indent + x + b"," + end for x in new[:-1]] + [indent + new[-1] + comma + end]
    return (*lines[:row], line[:col] + b"," + end, *added, *lines[row + 1:])


def _name(tree: ast.AST, node: ast.AST) -> str:
    """The call's arguments, or the name the collection is assigned to."""
    if isinstance(node, ast.Call):
        return f"the arguments of {ast.unparse(node.func)}(...)"
    for up in ast.walk(tree):
        if isinstance(up, ast.Assign) and up.value is node:
            return ", ".join(ast.unparse(x) for x in up.targets)
        if isinstance(up, ast.AnnAssign | ast.AugAssign) and up.value is node:
            return ast.unparse(up.target)
        if isinstance(up, ast.keyword) and up.value is node and up.arg:
            return f"the argument {up.arg}="
    return f"a {type(node).__name__.lower()}"
