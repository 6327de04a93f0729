"""The environment of every process carry starts.

git hands its hooks and aliases the variables that locate a repository (GIT_DIR, GIT_WORK_TREE,
GIT_INDEX_FILE, ...). Passed on, they make carry's git read and write the repository they name
instead of `--repo`: a `reset --hard` in the user's own work tree. git clears them for the
hooks it runs, and carry clears them for every child it starts. Code that carry does not trust
(the validated tree's tests and hooks) also gets no credential.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from carry.base import redact

# `git rev-parse --local-env-vars` of git 2.39 (a test checks this still covers the list of the
# git installed), plus GIT_NAMESPACE (which refs a repository shows) and GIT_QUARANTINE_PATH
# (where a pre-receive hook's new objects are).
LOCATING = frozenset({
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT", "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE", "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_QUARANTINE_PATH",
})
_CONFIG_PAIR = re.compile(r"GIT_CONFIG_(?:KEY|VALUE)_[0-9]+")  # read only with GIT_CONFIG_COUNT


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """carry's environment without git's repository-locating variables, then `extra` (carry's
    own private GIT_INDEX_FILE, say, which it sets per command)."""
    env = {k: v for k, v in os.environ.items()
           if k not in LOCATING and not _CONFIG_PAIR.fullmatch(k)}
    env.update(extra or {})
    return env


def untrusted_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """`git_env` without any credential carry knows of (`redact.credential`), for the
    processes that run a target tree's code: its conftest.py or a `repo: local` hook would
    read a token as easily as carry does."""
    env = {k: v for k, v in git_env().items() if not redact.credential(k, v)}
    env.update(extra or {})
    return env
