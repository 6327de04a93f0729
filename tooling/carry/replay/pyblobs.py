"""The Python blobs an audit reads, each read and judged once per run: its lines, its
imports, whether it parses, its top-level names. A blob's verdict is its parse's; the
cheaper readings (a symbol table for "it parses", a word search for "it never names it")
stand in only where they answer the same, which `tests/test_audit_text.py` checks."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from carry.git import Repo
from carry.replay import pyfacts, pytext

MAX_BYTES = 4 << 20  # a larger .py file is reported as not audited, never parsed
# What in a module's text may define a name no definition names: then it is parsed.
_OPEN = (b"import *", b"__getattr__", b"globals", b"vars(", b"exec(", b"modules[")
_HEADS = re.compile(rb"(?m)^(?:(?:async\s+)?def|class)\s+(\w+)\b|^(\w+)\s*[:=]")


class Parsed:
    """Blobs parsed once per run, by blob id: a module many patches use is read once."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.trees: dict[str, ast.Module | str] = {}  # blob -> tree, or why it is not one
        self.facts: dict[str, pyfacts.Facts | None] = {}
        self.bytes: dict[str, bytes] = {}
        self._rows: dict[str, list[bytes]] = {}
        self._imports: dict[tuple[str, str], pytext.Imports] = {}
        self._defines: dict[tuple[str, str], bool | None] = {}
        self._compiles: dict[str, bool] = {}
        self._heads: dict[str, set[bytes]] = {}  # blob -> the names defined at column 0

    def rows(self, blob: str) -> list[bytes]:
        """The blob's lines, `\r` stripped (ast counts lines the same way)."""
        got = self._rows.get(blob)
        if got is None:
            got = self._rows[blob] = lines(self.bytes[blob]) if blob else []
        return got

    def imports(self, blob: str, path: str, tops: set[bytes] | None) -> pytext.Imports:
        key = (blob, path if tops is not None else "")
        got = self._imports.get(key)
        if got is None:
            got = self._imports[key] = pytext.imports(self.bytes[blob], tops, key[1])
        return got

    def load(self, blobs: Sequence[str]) -> None:
        """Read the blobs not read yet, in one cat-file exchange."""
        missing = [b for b in dict.fromkeys(blobs) if b and b not in self.bytes]
        for blob, (_, _, body) in zip(missing, self.repo.read_objects(missing), strict=True):
            self.bytes[blob] = body

    def tree(self, blob: str) -> ast.Module | str:
        got = self.trees.get(blob)
        if got is None:
            self.load([blob])
            got = self.trees[blob] = parse(self.bytes[blob])
        return got

    def error(self, blob: str, parse: bool = False) -> str | None:
        """Why the blob is no module (as `tree` says it), or None. A file that compiles is
        one, and compiling without building ast's objects costs half as much; only a file
        that fails, or with `parse`, is parsed."""
        if parse or blob in self.trees:
            got = self.tree(blob)
            return got if isinstance(got, str) else None
        if blob not in self._compiles:
            self.load([blob])
            self._compiles[blob] = _compiles(self.bytes[blob])
        return None if self._compiles[blob] else self.error(blob, parse=True)

    def module_facts(self, blob: str) -> pyfacts.Facts | None:
        if blob not in self.facts:
            tree = self.tree(blob)
            self.facts[blob] = pyfacts.facts(tree, self.bytes[blob]) \
                if isinstance(tree, ast.Module) else None
        return self.facts[blob]

    def defines(self, blob: str, name: str) -> bool | None:
        key = (blob, name)
        if key not in self._defines:
            self._defines[key] = self._define(blob, name)
        return self._defines[key]

    def _define(self, blob: str, name: str) -> bool | None:
        """Whether the module in `blob` defines `name`, from its text where that is sure (a
        definition at column 0; no mention at all in a module with no way to define names
        unseen), else from its parse."""
        self.load([blob])
        text = self.bytes[blob]
        word = name.encode()
        if blob not in self._heads:
            self._heads[blob] = {a or b for a, b in _HEADS.findall(text)}
        if _at_top(text, word, self._heads[blob]) or (b"__getattr__" in text and any(
                q + word + e in text for q in (b'"', b"'") for e in (b'"', b"'"))):
            return True  # defined at column 0, or a string a __getattr__ module may serve
        if name in self.imports(blob, "", None).bound:
            return True  # imported or re-exported (an import in a function counts too)
        if not _has_word(text, word) and not any(m in text for m in _OPEN):
            return False
        facts = self.module_facts(blob)
        return None if facts is None else facts.defines(name)


def parse(data: bytes) -> ast.Module | str:
    """The module, or one line on why it is none (a hostile file never raises here)."""
    if len(data) > MAX_BYTES:
        return f"unaudited: larger than {MAX_BYTES >> 20} MiB"
    try:
        return ast.parse(data)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except ValueError as exc:  # null bytes, on some versions
        return f"{exc}"
    except (RecursionError, MemoryError):
        return "unaudited: nested too deeply to parse"


def _compiles(data: bytes) -> bool:
    """Whether `data` parses, read by building its symbol table: that parses it without
    making ast's Python objects, in about half the time. False says only "parse it to
    know" (the table also refuses some files that parse): the parse gives the verdict."""
    import symtable
    import warnings

    if len(data) > MAX_BYTES:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a SyntaxWarning is the target's, not ours
            symtable.symtable(data, "<audit>", "exec")  # type: ignore[arg-type]
    except Exception:
        return False
    return True


def _at_top(text: bytes, word: bytes, heads: set[bytes]) -> bool:
    """Whether a `def`, `class` or assignment at column 0 binds `word` (`heads`: what the
    text's column-0 definitions bind, read once per blob)."""
    if _plain(word):
        return word in heads
    w = re.escape(word)
    return bool(re.search(rb"(?m)^(?:(?:async\s+)?def|class)\s+" + w + rb"\b|^" + w +
                          rb"\s*[:=]", text))


def _has_word(text: bytes, word: bytes) -> bool:
    """Whether `word` stands in `text` as a whole word, as the regex `\\bword\\b` finds."""
    if not _plain(word):
        return bool(re.search(rb"\b" + re.escape(word) + rb"\b", text))
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        if not _is_word(text[at - 1:at] if at else b"") and not _is_word(text[end:end + 1]):
            return True
        at = text.find(word, at + 1)
    return False


def _plain(word: bytes) -> bool:
    return word.isascii() and word.decode().isidentifier()


def _is_word(char: bytes) -> bool:
    return char.isalnum() or char == b"_"


def lines(data: bytes) -> list[bytes]:
    rows = data.split(b"\n")
    return [line.rstrip(b"\r") for line in rows] if b"\r" in data else rows
