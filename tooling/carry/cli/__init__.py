"""The command line: the typer app and shared options (app.py), one module per group of
commands, views and rendering. Imports every stage; nothing imports it."""
