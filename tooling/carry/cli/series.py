"""`carry series list|show`: parse, call, print."""

from __future__ import annotations

import typer

from carry.cli.app import (
    Json,
    Name,
    SeriesDir,
    _root,
    series_app,
)


@series_app.command("list")
def series_list(series_dir: SeriesDir = None, json: Json = False) -> None:
    """A table of every series and where it was looked for.

    A manifest that does not load is a row with its error, and the exit code is 1.

    Example: carry series list --series-dir series
    """
    from carry.cli import views
    from carry.series import store as series

    listing = series.scan(_root(series_dir))
    views.show_series_list(listing, json)
    raise typer.Exit(listing.exit_code)


@series_app.command("show")
def series_show(name: Name, series_dir: SeriesDir = None, json: Json = False) -> None:
    """Everything the manifest says about one series.

    Example: carry series show mamba-sparse-retention
    """
    from carry.cli import views
    from carry.series import store as series

    views.show_series(series.find(_root(series_dir), name), json)
