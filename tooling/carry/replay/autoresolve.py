"""Conflicts that resolve themselves: a conflicted hunk whose answer its three texts decide,
asked for by `rerere.apply` when no recorded resolution covers the hunk. Three classes:

- both sides made the same change (and perhaps others, on lines the other side left alone);
- one side only re-formatted (whitespace, line wrapping, a trailing comma; not a statement's
  indentation) what the other changed: the other side's text wins (`pylayout`);
- both sides added distinct entries at one place of one collection (a dict, list, set or
  tuple literal, an import list, `__all__`, a call's arguments) or distinct definitions
  between the same two statements: upstream's first, then the patch's, each line once.

Everything else still stops, and so does a hunk over MAX_LINES lines, or one that is not
the same change by both and lies in a string that spans lines (a docstring). The last two
need Python, so they are tried in `.py` files only, and every Python file resolved so must
parse (`ast`, the interpreter's own parser: nothing
to install, exact for what it checks; it keeps no formatting, which is why the text is
assembled from the sides' own lines and the parser only judges it). The collection or the
definitions are found in the result's syntax tree and named: "both sides added entries to
KERNELS".
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from carry.replay import pylayout, pymerge
from carry.replay.recorded import Hunk, Lines, Marked

PYTHON = (".py", ".pyi")
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign,
         ast.Import, ast.ImportFrom)
_COLLECTIONS = (ast.Dict, ast.List, ast.Set, ast.Tuple, ast.ImportFrom, ast.Call)
# a longer side stops: the line diffs are quadratic in it (a hunk of 20,000 lines took over a
# minute, in every replay and `--furthest` probe), and a conflict that large wants a person
MAX_LINES = 1000


class Kind(StrEnum):
    SAME = "same"
    REFORMAT = "reformat"
    ENTRIES = "entries"


@dataclass(frozen=True)
class Candidate:
    """A hunk's text as its class gives it. ENTRIES: `spans` are where, in `text`, what
    upstream and what the patch added stand ((start, end) line indexes), checked and named
    in the result (`confirm`); REFORMAT: `side` is the side that only re-formatted."""

    text: Lines
    kind: Kind
    side: str = ""
    spans: tuple[tuple[int, int], tuple[int, int]] = ((0, 0), (0, 0))
    named: str = ""  # ENTRIES merged on the syntax tree (`pymerge`): the collection


def candidate(hunk: Hunk, python: bool) -> Candidate | None:
    """The hunk's text, when its three texts decide it (not yet checked in its file)."""
    o, b, t = hunk.ours, hunk.base, hunk.theirs
    if max(len(o), len(b), len(t)) > MAX_LINES:
        return None
    same = _same(b, o, t)
    if same is not None:
        return Candidate(same, Kind.SAME)
    if not python:
        return None
    layout = [pylayout.tokens(x) for x in (b, o, t)]
    if layout[0] is not None and (layout[1] == layout[0]) != (layout[2] == layout[0]):
        if layout[1] == layout[0]:
            return Candidate(t, Kind.REFORMAT, "upstream")
        return Candidate(o, Kind.REFORMAT, "the patch")
    merged = pymerge.merge(b, o, t)
    if merged is not None:
        return Candidate(merged.text, Kind.ENTRIES, named=merged.name)
    return _entries(b, o, t)


def confirm(data: bytes, marked: Marked, texts: Sequence[Lines],
            autos: dict[int, Candidate]) -> list[str] | None:
    """What each automatic hunk of a Python file did, said in words, or None when the file
    does not parse or an ENTRIES hunk's additions are not whole entries of one collection,
    nor whole definitions of one body."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    starts, line = [], len(marked.context[0]) + 1
    for text, after in zip(texts, marked.context[1:], strict=True):
        starts.append(line)
        line += len(text) + len(after)
    strings = pylayout.long_strings(data)
    if strings is None or any(a <= starts[i] + len(c.text) - 1 and starts[i] <= b
                              for i, c in autos.items() if c.kind != Kind.SAME
                              for a, b in strings):
        return None  # in a string, layout is content: a re-indent there is a change
    said = []
    for i, cand in sorted(autos.items()):
        if cand.kind != Kind.ENTRIES or cand.named:
            said.append(describe(cand))
            continue
        ranges = [_lines(cand.text, starts[i], span) for span in cand.spans]
        if any(r is None for r in ranges):
            return None
        name = _where(tree, [r for r in ranges if r is not None])
        if name is None:
            return None
        said.append(name)
    return said


def describe(cand: Candidate) -> str:
    if cand.kind == Kind.SAME:
        return "both sides made the same change"
    if cand.kind == Kind.ENTRIES:
        return f"both sides added entries to {cand.named}"
    return f"{cand.side} only re-formatted what the other side changed"


# -- the classes ------------------------------------------------------------------------------


def _changes(old: Lines, new: Lines) -> list[tuple[int, int, Lines]]:
    """What `new` changed in `old`; a block replaced by as many lines is a change per line,
    so that one side's change of two lines holds the other's change of one of them."""
    m = difflib.SequenceMatcher(None, old, new, autojunk=False)
    out: list[tuple[int, int, Lines]] = []
    for tag, i1, i2, j1, j2 in m.get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            out += [(i1 + k, i1 + k + 1, (new[j1 + k],)) for k in range(i2 - i1)
                    if old[i1 + k] != new[j1 + k]]
        elif tag != "equal":
            out.append((i1, i2, new[j1:j2]))
    return out


def _same(b: Lines, o: Lines, t: Lines) -> Lines | None:
    """Both sides' changes, when each group of changes that touch (overlap or adjoin) is one
    side's alone, or one side's changes are all the other's too (then the other's), and at
    least one change is made by both."""
    if o == t:
        return o
    changes = sorted([(c, 0) for c in _changes(b, o)] + [(c, 1) for c in _changes(b, t)],
                     key=lambda x: (x[0][0], x[0][1]))
    groups: list[list[tuple[tuple[int, int, Lines], int]]] = []
    for ch in changes:
        if groups and ch[0][0] <= max(c[0][1] for c in groups[-1]):
            groups[-1].append(ch)
        else:
            groups.append([ch])
    out, pos, shared = [], 0, False
    for group in groups:
        mine = [c for c, side in group if side == 0]
        theirs = [c for c, side in group if side == 1]
        if mine and theirs:  # one side's changes are all the other's too: the other's
            if not (set(mine) <= set(theirs) or set(theirs) <= set(mine)):
                return None
            shared = True
        for i1, i2, lines in mine if len(mine) > len(theirs) else theirs:
            out += [*b[pos:i1], *lines]
            pos = i2
    return tuple(out + list(b[pos:])) if shared else None


def _blank(line: bytes) -> bool:
    return not line.strip()


def _words(lines: Lines) -> set[bytes]:
    """The lines with a word in them (a closing `),` may end both sides' entries)."""
    return {x.strip() for x in lines if any(c.isalnum() for c in x.decode("latin-1"))}


def _bare(line: bytes) -> bytes:
    return line.strip().rstrip(b",")


def _entries(b: Lines, o: Lines, t: Lines) -> Candidate | None:
    """Both sides kept the base (a comma added after its last entry aside) and added lines
    of their own at one place, none added by both: upstream's, then the patch's."""
    p = 0
    while p < min(len(o), len(t)) and o[p] == t[p]:
        p += 1
    s = 0
    while s < min(len(o), len(t)) - p and o[-1 - s] == t[-1 - s]:
        s += 1
    mine, theirs = o[p:len(o) - s], t[p:len(t) - s]
    kept = o[:p] + o[len(o) - s:]
    if not any(not _blank(x) for x in mine) or not any(not _blank(x) for x in theirs):
        return None
    if _words(mine) & _words(theirs):  # a line both added would be kept twice
        return None
    if [_bare(x) for x in b if not _blank(x)] != [_bare(x) for x in kept if not _blank(x)]:
        return None
    gap: Lines = ()  # the blank lines that part what was added from what stood there
    if not _blank(mine[-1]) and not _blank(theirs[0]):
        before, after = o[:p], o[len(o) - s:]
        lead = next((k for k in range(len(before)) if not _blank(before[-1 - k])),
                    len(before))
        trail = next((k for k in range(len(after)) if not _blank(after[k])), len(after))
        gap = before[len(before) - lead:] if lead else after[:trail]
    if [x for x in b if not _blank(x)] != [x for x in kept if not _blank(x)]:
        # both put a comma after the base's last entry
        mine = _with_comma(mine)
    text = o[:p] + mine + gap + theirs + o[len(o) - s:]
    first = (p, p + len(mine))
    second = (first[1] + len(gap), first[1] + len(gap) + len(theirs))
    return Candidate(text, Kind.ENTRIES, spans=(first, second))


def _with_comma(mine: Lines) -> Lines:
    """Upstream's last entry followed by a comma, when both sides put one after the base's
    last entry (so that upstream's new last one has none): `"b": 2` + `"c": 3` needs
    `"b": 2,`. The result must still parse and hold whole entries (`confirm`)."""
    last = max(i for i, x in enumerate(mine) if not _blank(x))
    line = mine[last]
    body = line.rstrip(b"\r\n")
    ends = body.rstrip()
    if ends.endswith((b",", b"(", b"[", b"{", b":", b"\\")) or b"#" in body:
        return mine
    return (*mine[:last], ends + b"," + body[len(ends):] + line[len(body):], *mine[last + 1:])


# -- where the additions stand in the result --------------------------------------------------


def _lines(text: Lines, start: int, span: tuple[int, int]) -> tuple[int, int] | None:
    """The file lines (first, last, 1-based) of the non-blank lines of `text[span]`."""
    nonblank = [k for k in range(*span) if not _blank(text[k])]
    if not nonblank:
        return None
    return start + nonblank[0], start + nonblank[-1]


def _span(node: ast.AST) -> tuple[int, int]:
    first = min([getattr(node, "lineno", 0),
                 *(d.lineno for d in getattr(node, "decorator_list", ()))])
    return first, getattr(node, "end_lineno", None) or first


def _covers(parts: Sequence[ast.AST], ranges: Sequence[tuple[int, int]]) -> bool:
    """Each range holds at least one of `parts` and cuts none."""
    spans = [_span(x) for x in parts]
    for lo, hi in ranges:
        inside = [a for a, b in spans if lo <= a and b <= hi]
        if not inside or any(a <= hi and lo <= b and not (lo <= a and b <= hi)
                             for a, b in spans):
            return False
    return True


def _elements(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Dict):
        return [v if k is None else k for k, v in zip(node.keys, node.values, strict=True)]
    if isinstance(node, ast.List | ast.Set | ast.Tuple):
        return list(node.elts)
    if isinstance(node, ast.ImportFrom):
        return list(node.names)
    if isinstance(node, ast.Call):
        return [*node.args, *node.keywords]
    return []


def _where(tree: ast.Module, ranges: list[tuple[int, int]]) -> str | None:
    """Whether the additions are whole entries of one collection, or whole definitions of one
    body, said in words; None when they are not."""
    lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
    best: tuple[int, ast.AST, ast.AST | None] | None = None
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
        if isinstance(node, _COLLECTIONS):
            a, b = _span(node)
            if a < lo and hi < b and (best is None or b - a < best[0]):
                best = (b - a, node, None)
        if isinstance(node, ast.Module | ast.ClassDef):  # a function's body runs in order
            inside = [s for s in node.body if _span(s)[0] <= hi and lo <= _span(s)[1]]
            if inside and all(isinstance(s, _DEFS) for s in inside) \
                    and _covers(node.body, ranges):
                names = [n for s in inside for n in _names(s)]
                every = [n for s in node.body for n in _names(s)]
                if any(every.count(n) > 1 for n in names):
                    return None  # one would silently replace the other
                return "both sides added definitions (" + ", ".join(names) + ")"
    if best is None or not _covers(_elements(best[1]), ranges) or not _unique(best[1]) \
            or _twice(best[1], ranges):
        return None
    for elt in _elements(best[1]):  # each entry fully kept: nothing added inside another
        a, b = _span(elt)
        if any(a < r[0] <= b or a <= r[1] < b for r in ranges):
            return None
    return f"both sides added entries to {_name(best[1], parents)}"


def _unique(node: ast.AST) -> bool:
    """No key of a dict, nor keyword of a call, twice: the later would silently win."""
    if isinstance(node, ast.Dict):
        keys = [ast.dump(k) for k in node.keys if k is not None]
    elif isinstance(node, ast.Call):
        keys = [k.arg for k in node.keywords if k.arg is not None]
    else:
        return True
    return len(keys) == len(set(keys))


def _twice(node: ast.AST, ranges: Sequence[tuple[int, int]]) -> bool:
    """An entry both sides added, compared by value (`"b"` and `'b'  # why` are one; an
    import by the name it binds), which the merge would keep twice; or a `**` mapping added
    to a call (which may give a keyword twice: refused at run time) or to a dict (whose key
    the other side may add: one silently wins)."""
    added = [[e for e in _elements(node) if lo <= _span(e)[0] and _span(e)[1] <= hi]
             for lo, hi in ranges]
    spread = [v for k, v in zip(node.keys, node.values, strict=True) if k is None] \
        if isinstance(node, ast.Dict) else []  # `**m` in a dict: may hold a key added too
    if any(isinstance(e, ast.keyword) and e.arg is None or any(e is v for v in spread)
           for side in added for e in side) or isinstance(node, ast.Call) and all(
            any(not isinstance(e, ast.keyword) for e in side) for side in added):
        return True  # (both added positional arguments: each meant its own position)
    keys = [{_key(e) for e in side} for side in added]
    return len(keys) == 2 and bool(keys[0] & keys[1])


def _key(entry: ast.AST) -> str:
    if isinstance(entry, ast.alias):
        return entry.asname or entry.name
    return ast.dump(entry)


def _names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [stmt.name]
    if isinstance(stmt, ast.Assign):
        return [ast.unparse(t) for t in stmt.targets]
    if isinstance(stmt, ast.AnnAssign):
        return [ast.unparse(stmt.target)]
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return [a.asname or a.name for a in stmt.names]
    return []


def _name(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str:
    """The collection's name: what it is assigned to, the call or the import it is."""
    if isinstance(node, ast.ImportFrom):
        return f"the import list of {'.' * node.level}{node.module or ''}"
    if isinstance(node, ast.Call):
        return f"the arguments of {ast.unparse(node.func)}(...)"
    up = parents.get(node)
    if isinstance(up, ast.Assign):
        return ", ".join(ast.unparse(t) for t in up.targets)
    if isinstance(up, ast.AnnAssign | ast.AugAssign):
        return ast.unparse(up.target)
    if isinstance(up, ast.keyword) and up.arg:
        return f"the argument {up.arg}="
    kind = type(node).__name__.lower()
    return f"a {kind} at line {getattr(node, 'lineno', 0)}"
