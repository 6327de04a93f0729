"""The one reader for what carry did not just write itself: manifests, ledgers, CI summaries,
validation reports, rebase states, cache entries and package-index answers.

Any of them may come from elsewhere (an artifact another job uploaded, a file a user edited, a
server), so each is read the same careful way:

- the file: a regular file only, opened without following a link (and, with `inside`, no link
  on the way from a series directory to it) and without blocking, so a FIFO or a device is
  refused instead of hanging carry; its size is bounded;
- the document: nested at most `MAX_DEPTH` deep, checked before the parser recurses (a
  3,000-deep array would otherwise end in RecursionError), with the top-level type named;
- its fields: `build` makes a dataclass from it with every field's type checked, so a summary
  with `"series": null` is refused where it is read, not wherever the null is used.

Content problems raise `BadData` (a ValueError, so a caller can add what the file is for);
file problems raise CarryError naming the path.
"""

from __future__ import annotations

import enum
import errno
import json
import os
import re
import stat
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

from carry.base.errors import CarryError

if typing.TYPE_CHECKING:
    import dataclasses

MAX_BYTES = 64 << 20  # far above any file carry writes; a ledger of 100,000 cells is ~40 MB
MAX_DEPTH = 64  # carry's own documents nest 6 deep at most
T = TypeVar("T")


class BadData(ValueError):
    """A document that does not parse, nests too deep or has a field of the wrong type."""


# -- the file ----------------------------------------------------------------------------------


def refuse_links_between(inside: Path, path: Path) -> None:
    """No symbolic link on the way from `inside` down to `path`, `path` included (`inside`
    itself excepted): `.versions` linked out of a series must not be followed."""
    try:
        rel = path.relative_to(inside)
    except ValueError:
        return
    here = inside
    for part in rel.parts:
        here = here / part
        if here.is_symlink():
            raise CarryError(f"{here}: is a symbolic link; carry follows no link out of a "
                             "series directory", hint="replace the link with the directory "
                             "itself")


def read_bytes(path: Path, *, inside: Path | None = None, limit: int = MAX_BYTES,
               missing_ok: bool = False) -> bytes | None:
    """The bytes of the regular file `path`; None when it is absent and `missing_ok`."""
    if inside is not None:
        refuse_links_between(inside, path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise CarryError(f"{path}: no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CarryError(f"{path}: is a symbolic link; carry reads only regular files "
                             "here", hint="replace the link with the file itself") from None
        if exc.errno == errno.ENXIO:  # a socket
            raise CarryError(f"{path}: not a regular file") from None
        raise CarryError(f"{path}: cannot read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # a directory, FIFO or device: never read, never wait
            raise CarryError(f"{path}: not a regular file ({_kind(st.st_mode)})")
        if st.st_size > limit:
            raise CarryError(f"{path}: {st.st_size} bytes, more than carry reads "
                             f"({limit} bytes)")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise CarryError(f"{path}: more than {limit} bytes")
    return data


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"


def read_text(path: Path, *, inside: Path | None = None, limit: int = MAX_BYTES,
              missing_ok: bool = False) -> str | None:
    data = read_bytes(path, inside=inside, limit=limit, missing_ok=missing_ok)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CarryError(f"{path}: not UTF-8") from None


# -- the document ------------------------------------------------------------------------------

# What a JSON document says outside its strings: brackets only count there.
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_BRACKETS = re.compile(rb"[\[\]{}]")


def _json_depth(data: bytes) -> int:
    depth = deepest = 0
    for m in _BRACKETS.finditer(_JSON_STRING.sub(b'""', data)):
        if m.group() in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_DEPTH:
                break
        else:
            depth -= 1
    return deepest


def loads_json(data: bytes | str, kind: type[T] | None = None) -> Any:
    """A JSON document of at most MAX_DEPTH levels; `kind` (dict or list) is its top level."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    if _json_depth(raw) > MAX_DEPTH:
        raise BadData(f"nested more than {MAX_DEPTH} levels deep")
    try:
        doc = json.loads(raw)
    except UnicodeDecodeError:
        raise BadData("not UTF-8") from None
    except RecursionError:  # a backstop: the depth is checked above
        raise BadData(f"nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:
        raise BadData(f"not JSON: {exc}") from None
    return _top(doc, kind)


def loads_toml(text: str) -> dict[str, Any]:
    """A TOML document of at most MAX_DEPTH levels (arrays, inline tables and dotted keys)."""
    import tomllib  # here: a reader of bytes alone (a kept `--skip`) need not load it

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadData(f"not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise BadData(f"nested more than {MAX_DEPTH} levels deep") from None
    except ValueError:  # int() of a 5,000-digit number, which TOMLDecodeError does not cover
        raise BadData("not valid TOML: a number of more than 4,300 digits") from None
    _top(doc, dict)
    return doc


def _top(doc: Any, kind: type | None) -> Any:
    if depth(doc) > MAX_DEPTH:
        raise BadData(f"nested more than {MAX_DEPTH} levels deep")
    if kind is not None and not isinstance(doc, kind):
        raise BadData(f"expected {_describe(kind)} at the top, got {_describe(type(doc))}")
    return doc


def depth(doc: Any) -> int:
    """How deep lists and dicts nest in `doc`, counted without recursion."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(doc, 1)]
    while todo:
        obj, level = todo.pop()
        if isinstance(obj, dict | list):
            deepest = max(deepest, level)
            if deepest > MAX_DEPTH:
                return deepest
            todo += [(v, level + 1) for v in (obj.values() if isinstance(obj, dict) else obj)]
    return deepest


def read_json(path: Path, kind: type[T] | None = None, *, inside: Path | None = None,
              limit: int = MAX_BYTES, missing_ok: bool = False) -> Any:
    """`read_bytes` then `loads_json`; None when absent and `missing_ok`."""
    data = read_bytes(path, inside=inside, limit=limit, missing_ok=missing_ok)
    return None if data is None else loads_json(data, kind)


# -- the fields --------------------------------------------------------------------------------


def build(cls: type[T], data: Any, where: str, strict: bool = False) -> T:
    """An instance of the dataclass `cls` from a parsed object, each field's type checked
    against its annotation (str, int, float, bool, None, list[X], dict[str, X], X | None,
    nested dataclasses, enums by value, Any). Unknown keys are ignored unless `strict`."""
    import dataclasses  # here, as tomllib: `read_bytes` alone imports neither

    if not isinstance(data, dict):
        raise BadData(f"{where}: expected an object, got {_describe(type(data))}")
    hints, known = _shape(cls)
    if strict and set(data) - set(known):
        raise BadData(f"{where}: unknown key {sorted(set(data) - set(known))[0]!r}")
    kw: dict[str, Any] = {}
    for name, f in known.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise BadData(f"{where}: no {name!r}")
            continue
        kw[name] = _value(hints[name], data[name], f"{where}.{name}")
    return cls(**kw)


_Shape = tuple[dict[str, Any], dict[str, "dataclasses.Field[Any]"]]
_SHAPES: dict[type, _Shape] = {}


def _shape(cls: type) -> _Shape:
    """A dataclass's resolved annotations and fields, worked out once per class: resolving
    the string annotations is most of a `build` (a rebase state holds 100 patch entries)."""
    import dataclasses

    if cls not in _SHAPES:
        _SHAPES[cls] = (typing.get_type_hints(cls),
                        {f.name: f for f in dataclasses.fields(cls)})
    return _SHAPES[cls]


def _value(hint: Any, value: Any, where: str) -> Any:
    if type(value) is hint and hint in _PLAIN:  # the commonest: exactly the type it says
        return value  # (what the last branch below returns; a state holds thousands)
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and _none_first(hint):
            return None  # what trying each option in turn comes to
        for option in typing.get_args(hint):
            try:
                return _value(option, value, where)
            except BadData:
                continue
        raise BadData(f"{where}: expected {_describe(hint)}, got {_describe(type(value))}")
    if origin is list:
        (item,) = typing.get_args(hint)
        if not isinstance(value, list):
            raise BadData(f"{where}: expected a list, got {_describe(type(value))}")
        return [_value(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        _, item = typing.get_args(hint)
        if not isinstance(value, dict):
            raise BadData(f"{where}: expected an object, got {_describe(type(value))}")
        return {str(k): _value(item, v, f"{where}.{k}") for k, v in value.items()}
    import dataclasses

    if dataclasses.is_dataclass(hint):
        return build(typing.cast("type[Any]", hint), value, where)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        known = [m.value for m in hint]  # its value only: not `1` for "1", not `True`
        if any(isinstance(value, type(k)) and type(value) is not bool and value == k
               for k in known):
            return hint(value)
        raise BadData(f"{where}: expected one of {', '.join(map(str, known))}, "
                      f"got {value!r:.60}")
    if hint is type(None):
        if value is None:
            return None
    elif hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif isinstance(hint, type) and isinstance(value, hint) and not (
            hint is int and isinstance(value, bool)):
        return value
    raise BadData(f"{where}: expected {_describe(hint)}, got {_describe(type(value))}")


_PLAIN = (str, int, bool)
_NONE_FIRST: dict[Any, bool] = {}


def _none_first(hint: Any) -> bool:
    """Whether None is what the options of the union `hint` give None, tried in turn: it is
    one of them, and none before it is an enum (whose member may have the value None)."""
    if hint not in _NONE_FIRST:
        options = typing.get_args(hint)
        _NONE_FIRST[hint] = type(None) in options and not any(
            isinstance(o, type) and issubclass(o, enum.Enum)
            for o in options[:options.index(type(None))])
    return _NONE_FIRST[hint]


def _describe(kind: Any) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
             list: "a list", dict: "an object", type(None): "null"}
    if kind in names:
        return names[kind]
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return " or ".join(_describe(k) for k in typing.get_args(kind))
    origin = typing.get_origin(kind)
    if origin is not None:
        return _describe(origin)
    import dataclasses

    return f"a {getattr(kind, '__name__', 'value')}" if dataclasses.is_dataclass(kind) \
        else getattr(kind, "__name__", str(kind))


# -- numbers -----------------------------------------------------------------------------------


def ascii_int(text: str, digits: int = 18) -> int | None:
    """`text` as a number when it is 1 to `digits` ASCII digits, else None. `str.isdigit` is
    true for `²` (which int() refuses) and int() refuses more than 4,300 digits: neither can
    reach int() through here."""
    if 0 < len(text) <= digits and text.isascii() and text.isdigit():
        return int(text)
    return None
