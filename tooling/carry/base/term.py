"""The terminal's width, read with nothing but `os`: what every view cuts its lines to, and
what a kept `--skip` output (`rebase.skipmemo`) was cut to."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

# What rich dropped from a printed line before plain lines stopped going through it: bell,
# backspace, vertical tab, form feed and carriage return, which move the cursor over output.
CONTROL = dict.fromkeys((7, 8, 11, 12, 13))


def width(environ: Mapping[str, str] = os.environ) -> int:
    """The terminal's columns, read as `shutil.get_terminal_size` reads them (COLUMNS first,
    then stdout's terminal); 80 when there is none, never under 40."""
    try:
        cols = int(environ.get("COLUMNS", ""))
    except ValueError:
        cols = 0
    if cols <= 0:
        try:
            cols = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            cols = 0
    return max(40, cols or 80)
