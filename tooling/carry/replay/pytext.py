"""A Python file's project imports read from its text with a few regular expressions, before
any parse: the audit uses it to tell, in a millisecond, that every name a patch's added
lines use resolves at the result, and parses (`pyfacts`) only a file where one may not. It
keeps more than it needs (a name in a string counts): it only decides what gets parsed."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_IMPORT = re.compile(rb"(?m)^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+)?import[ \t]+([^\n]*)")
_WORD = re.compile(rb"[A-Za-z_]\w*")
_HEAD = re.compile(rb"\b([A-Za-z_]\w*)\s*\.")  # a word an attribute is read from
_NEVER = re.compile(rb"(?!)")


@dataclass
class Imports:
    """`bound`: each name an import of a project module binds, and the modules it may be;
    `statements`: each such import as (first row, last row, module or "" for `import`,
    names), rows 1-based."""

    bound: dict[str, set[str]] = field(default_factory=dict)
    statements: list[tuple[int, int, str, list[tuple[str, str]]]] = field(default_factory=list)

    _mention: re.Pattern[bytes] | None = None

    def rows(self) -> set[int]:
        return {n for first, last, _, _ in self.statements for n in range(first, last + 1)}

    def mentions(self, line: bytes) -> bool:
        """Whether `line` reads an attribute of a name these imports bind: each word before
        a dot is looked up (an alternation of every bound name cost 2 ms to compile per
        file); a name that is no plain identifier is searched for as it was."""
        if not self.bound:
            return False
        if any(m.group(1).decode() in self.bound for m in _HEAD.finditer(line)):
            return True
        if self._mention is None:
            odd = [re.escape(n.encode()) for n in sorted(self.bound)
                   if not (n.isascii() and n.isidentifier())]
            self._mention = re.compile(rb"\b(?:" + b"|".join(odd) + rb")\s*\.") if odd \
                else _NEVER
        return bool(self._mention.search(line))


def imports(text: bytes, tops: set[bytes] | None, path: str) -> Imports:
    """The imports of project modules (their first word one of `tops`, or relative), or of
    any module with `tops` None."""
    out = Imports()
    rows = text.split(b"\n")
    row, at = 0, 0
    for m in _IMPORT.finditer(text):
        module = (m.group(1) or b"").decode("ascii", "replace")
        first = (m.group(1) or m.group(2).split(b",")[0].strip()).split(b".")[0]
        if first and tops is not None and first not in tops:
            continue
        row, at = row + text.count(b"\n", at, m.start()), m.start()
        start = row
        end, body = start, m.group(2)
        while (b"(" in body and b")" not in body or body.rstrip().endswith(b"\\")) \
                and end + 1 < len(rows):
            end += 1
            body += b" " + rows[end]
        body = body.partition(b"#")[0].replace(b"(", b" ").replace(b")", b" ")
        body = body.replace(b"\\", b" ")
        names = []
        for item in body.split(b","):
            words = item.split()
            if not words:
                continue
            name = words[0].decode("ascii", "replace")
            local = words[2].decode("ascii", "replace") if len(words) == 3 and \
                words[1] == b"as" else ""
            names.append((name, local))
        if m.group(1):
            module = absolute(module, path)
            for name, local in names:
                out.bound.setdefault(local or name, set()).add(f"{module}.{name}")
        else:
            for name, local in names:
                out.bound.setdefault(local or name.partition(".")[0], set()).add(
                    name if local else name.partition(".")[0])
        out.statements.append((start + 1, end + 1, module, names))
    return out


def absolute(module: str, path: str) -> str:
    """`from .x import y` in `a/b/c.py` reads module `a.b.x`."""
    level = len(module) - len(module.lstrip("."))
    if not level:
        return module
    package = path.split("/")[:-1]
    base = package[:max(0, len(package) - (level - 1))]
    return ".".join([*base, *([module[level:]] if module[level:] else [])])


def attributes(line: bytes, bound: dict[str, set[str]]) -> list[list[str]]:
    """Each `name.attr.attr` on a line whose first word an import binds."""
    out = []
    for m in re.finditer(rb"\b([A-Za-z_]\w*)((?:\s*\.\s*[A-Za-z_]\w*)+)", line):
        head = m.group(1).decode("ascii", "replace")
        if head in bound:
            out.append([head, *(w.decode("ascii", "replace")
                                for w in _WORD.findall(m.group(2)))])
    return out
