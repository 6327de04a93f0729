"""Results as plain data (dicts, lists, strings) for JSON: what `--json` prints, and what a
report, a cache entry or a summary file holds. Stages write such files themselves, so this
lives below them rather than with the printing in `cli`."""

from __future__ import annotations

import dataclasses
import types
from typing import Any

# a dataclass field's metadata: None is written `{}`, as the dict the field once was
EMPTY_WHEN_NONE = types.MappingProxyType({"empty_when_none": True})


def to_data(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        data = {f.name: _field(f, getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        for name in getattr(obj, "json_extra", ()):
            data[name] = to_data(getattr(obj, name))
        return data
    if isinstance(obj, dict):
        return {str(k): to_data(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_data(v) for v in obj]
    if hasattr(obj, "__fspath__"):
        return str(obj)
    return obj


def _field(f: dataclasses.Field[Any], value: Any) -> Any:
    if value is None and f.metadata.get("empty_when_none"):
        return {}
    return to_data(value)
