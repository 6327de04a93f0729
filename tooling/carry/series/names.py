"""The two name rules every command shares, matched whole: a series name (one plain path
component) and a GitHub repository (OWNER/REPO). A name is checked where it is parsed, so a
bad one never reaches a path, a git argv or an API URL."""

from __future__ import annotations

import re

from carry.base.errors import CarryError

NAME_RULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_name(name: str) -> str:
    """One rule for every command: a series name is one plain path component, so that no name
    (`../x`, `/abs`, `-x`, a 300-character one) reaches outside --series-dir or git's options."""
    if not NAME_RULE.fullmatch(name) or name.endswith((".lock", ".")) or ".." in name:
        shown = name if len(name) <= 40 else name[:40] + "..."
        raise CarryError(f"{shown!r} is not a series name: use letters, digits, '.', '_' and "
                         "'-', starting with a letter or digit, at most 100 characters")
    return name


REPO_RULE = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")


def check_repo(value: str, what: str = "the repository") -> str:
    """One rule for a GitHub repository name, OWNER/REPO, matched whole: `a/b\n` (which a `$`
    anchor lets through) or `../../x` (which the API's URL would resolve to another
    endpoint) never names one."""
    if not REPO_RULE.fullmatch(value) or any(p in (".", "..") for p in value.split("/")):
        shown = value if len(value) <= 60 else value[:60] + "..."
        raise CarryError(f"{what} must be OWNER/REPO, got {shown!r}")
    return value
