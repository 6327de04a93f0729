"""Talking to GitHub: the one client (github.py), the PR and its body, supersede.
Imports base, git and series; validate only for the report a PR cites."""
