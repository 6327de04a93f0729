"""Where the series folder is: the flag, the variable, then where users keep it (the series
checkout they run in, beside it, or the one sibling checkout that has series), and the hint
that says so when a series is not found."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from carry.base.errors import CarryError

MANIFEST = "series.toml"  # what makes a folder a series


def series_dir(explicit: str | Path | None = None) -> Path:
    """--series-dir, then $CARRY_SERIES_DIR, then `series/` in the current directory or a
    parent up to the top of its git checkout (the series checkout, run from anywhere in
    it), then `beside` the checkout; with none, `series/` of the current checkout (where
    `init` and `import` start one)."""
    given = explicit or os.environ.get("CARRY_SERIES_DIR")
    if given:
        root = Path(given).expanduser().resolve()
        if root.exists() and not root.is_dir():
            raise CarryError(f"--series-dir {root} is not a directory")
        return root
    here = Path.cwd().resolve()
    top = _checkout_top(here)
    near = [d / "series" for d in (here, *here.parents) if top and d.is_relative_to(top)]
    # In this checkout a series/ folder is the one, even empty (a new project's); beside it,
    # only a folder that holds a series is taken.
    found = next((d for d in near if _holds_series(d)), None) or next(
        (d for d in near if d.is_dir()), None)
    return found or next((d for d in beside(top) if _holds_series(d)), (top or here) / "series")


def beside(top: Path | None) -> Iterator[Path]:
    """Where else a user keeps series, looked at only when the current checkout has none:
    `series/` beside the checkout, then the `series/` of the one sibling checkout that has
    any (the README's layout: the series checkout next to the vLLM clone the user works
    in). Several sibling checkouts with series are not guessed between: the error names
    them."""
    if top is None:
        return
    yield top.parent / "series"
    siblings = sibling_series(top)
    if len(siblings) == 1:
        yield siblings[0]


def _checkout_top(here: Path) -> Path | None:
    return next((d for d in (here, *here.parents) if _has_git(d)), None)


def _has_git(d: Path) -> bool:
    try:
        return (d / ".git").exists()
    except OSError:  # a folder this user may not read is no checkout of theirs
        return False


def sibling_series(top: Path) -> list[Path]:
    """The `series/` folders of the checkouts beside `top` that hold a series."""
    try:
        entries = sorted(top.parent.iterdir())
    except OSError:
        return []
    return [d / "series" for d in entries
            if d != top and _holds_series(d / "series") and _has_git(d)]


def _holds_series(d: Path) -> bool:
    try:
        return d.is_dir() and any((c / MANIFEST).is_file() for c in d.iterdir() if c.is_dir())
    except OSError:
        return False


def where_hint(root: Path) -> str:
    """What to do when `root` is not where the series are: the flag, the variable, where
    carry looked by default, and the sibling series folders it would not guess between."""
    top = _checkout_top(Path.cwd().resolve())
    several = [str(p) for p in sibling_series(top)] if top else []
    shown = ", ".join(several[:3]) + (f" and {len(several) - 3} more" if len(several) > 3 else "")
    found = f"; series folders beside this checkout: {shown}" if len(several) > 1 else ""
    looked = ("series/ from here up to the top of this git checkout, beside it, and in the "
              "one sibling checkout that has one" if top else "./series (outside a git "
              "checkout)")
    return f"pass --series-dir DIR or set CARRY_SERIES_DIR; by default carry looks in {looked}" \
        + found
