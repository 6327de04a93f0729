"""Getting a series in and checking it: init, import, check, apply. Imports base, git,
series and replay."""
