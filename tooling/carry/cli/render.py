"""Printing results: JSON for machines, plain lines (rich tables on a terminal) for people,
progress on stderr."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any

from carry.base import notes, term
from carry.base.data import to_data


def emit_json(obj: Any) -> None:
    json.dump(to_data(obj), sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


@functools.cache
def console() -> Any:
    """One Console for the whole run: making one looks up the terminal and the environment,
    which per printed line cost more than the line."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True, markup=False)


def table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    """A rich table on a terminal; plain aligned columns when piped, so that nothing wraps
    mid-word and no box characters reach logs or `grep`."""
    if not sys.stdout.isatty():
        return _plain_table(title, columns, rows)
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for i, c in enumerate(columns):
        # The first column names things (series, targets): keep it whole for copy and paste.
        t.add_column(c, overflow="fold", no_wrap=i == 0)
    for r in rows:
        t.add_row(*r)
    console().print(t)


def _plain_table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    widths = _fit([max(len(str(r[i])) for r in [columns, *rows]) for i in range(len(columns))],
                  _columns())
    out = [title] if title else []
    for r in [columns, *rows]:
        cells = [_cut(str(c), w) for c, w in zip(r, widths, strict=True)]
        out.append("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
    sys.stdout.write("\n".join(out) + "\n")


def _columns() -> int:
    """The width to fit: $COLUMNS, else stdout's terminal; 0 (no limit) for a pipe or a file,
    whose reader may want every character (--json has them all in any case)."""
    import os
    import shutil

    if os.environ.get("COLUMNS", "").isdigit() or sys.stdout.isatty():
        return shutil.get_terminal_size((0, 0)).columns
    return 0


def _fit(widths: list[int], cols: int) -> list[int]:
    """Narrow the widest columns (never the first, which names things) until the row fits
    `cols`, each kept at least 12 wide."""
    if not cols:
        return widths
    out = list(widths)
    while sum(out) + 2 * (len(out) - 1) > cols:
        i = max(range(1, len(out)), key=lambda k: out[k], default=0)
        if i == 0 or out[i] <= 12:
            break
        out[i] -= min(out[i] - 12, sum(out) + 2 * (len(out) - 1) - cols)
    return out


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def human_date(raw: str) -> str:
    """git's raw `1710000000 -0700` as `2024-03-09 09:00 -0700` (the author's own clock)."""
    import datetime as dt

    try:
        secs, tz = raw.split()
        sign = -1 if tz.startswith("-") else 1
        offset = dt.timedelta(hours=int(tz[1:3]), minutes=int(tz[3:5])) * sign
        when = dt.datetime.fromtimestamp(int(secs), dt.timezone(offset))
    except (ValueError, IndexError, OverflowError, OSError):  # a date no calendar holds
        return raw
    return when.strftime("%Y-%m-%d %H:%M ") + tz


warn = notes.warn


def say(text: str) -> None:
    """A line for people on stdout, written as it is: importing rich and passing every line
    through a Console cost a command that prints 50 lines more than its own work, and it
    turned `:name:` in a commit subject into an emoji."""
    sys.stdout.write(text.translate(term.CONTROL) + "\n")


def width() -> int:
    """The terminal's columns (`base.term`); 80 when there is none."""
    return term.width()


def fit(text: str, cols: int = 0) -> str:
    """`text` cut to the terminal's width with an ellipsis: for subjects and reasons, never for
    a hash, path or command the user copies (those go on a line of their own)."""
    cols = cols or width()
    return text if len(text) <= cols else text[: cols - 1].rstrip() + "\u2026"


def wrap(text: str, indent: str = "  ", cols: int = 0) -> list[str]:
    """Prose folded at spaces to the terminal's width; a word longer than the line (a path),
    a `quoted` span and a `carry ...`/`git ...` command up to the next , ; ( or ) stay whole,
    so what the user copies is never split."""
    import re
    import textwrap

    keep = re.sub(r"`[^`]*`|\b(?:carry|git) [^;,()`]*[^;,()` ]",
                  lambda m: m.group(0).replace(" ", "\u00a0"), text)
    lines = textwrap.wrap(keep, cols or width(), initial_indent=indent,
                          subsequent_indent=indent + "  ", break_long_words=False,
                          break_on_hyphens=False) or [indent]
    return [line.replace("\u00a0", " ") for line in lines]


def progress(label: str) -> Callable[[int, int, str], None] | None:
    """A one-line counter on stderr when it is a terminal; silent for pipes and CI logs."""
    if not sys.stderr.isatty():
        return None

    def update(i: int, n: int, what: str) -> None:
        end = "\n" if i == n else ""
        sys.stderr.write(f"\r\033[K{label} {i}/{n} {what}"[:200] + end)
        sys.stderr.flush()

    return update
