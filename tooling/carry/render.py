"""Printing results: JSON for machines, rich tables for people, progress on stderr."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any


def to_data(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        data = {f.name: to_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
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


def emit_json(obj: Any) -> None:
    json.dump(to_data(obj), sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def console() -> Any:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True, markup=False)


def table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for i, c in enumerate(columns):
        # The first column names things (series, targets): keep it whole for copy and paste.
        t.add_column(c, overflow="fold", no_wrap=i == 0)
    for r in rows:
        t.add_row(*r)
    console().print(t)


def say(text: str) -> None:
    console().print(text)


def progress(label: str) -> Callable[[int, int, str], None] | None:
    """A one-line counter on stderr when it is a terminal; silent for pipes and CI logs."""
    if not sys.stderr.isatty():
        return None

    def update(i: int, n: int, what: str) -> None:
        end = "\n" if i == n else ""
        sys.stderr.write(f"\r\033[K{label} {i}/{n} {what}"[:200] + end)
        sys.stderr.flush()

    return update
