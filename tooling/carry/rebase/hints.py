"""Hints for a conflict that is really a squash merge without provenance: an upstream commit
since the base whose subject is the patch's (ignoring a trailing `(#N)`) and that touched the
conflicting paths is probably the patch, merged; the manifest can then say so."""

from __future__ import annotations

import re

from carry.base.untrusted import ascii_int
from carry.git import Repo

_PR = re.compile(r"\(#([0-9]{1,10})\)\s*$")  # ASCII digits; no leading \s*: linear


def _key(subject: str) -> str:
    return " ".join(_PR.sub("", subject).split()).casefold()


def hints(repo: Repo, base: str, onto: str, patch: str, subject: str, paths: list[str],
          upstream: str) -> list[str]:
    """One line per matching upstream commit, with the provenance entry to add."""
    if not base or not paths or not repo.is_ancestor(base, onto):
        return []
    lines = []
    number = ascii_int(patch[:4], 4) or 0
    for entry in repo.commits_touching(base, onto, paths, limit=0):
        sha, subj = entry.sha, entry.subject
        if _key(subj) != _key(subject):
            continue
        m = _PR.search(subj)
        pr = f'pr = "{upstream or "OWNER/REPO"}#{m.group(1)}", ' if m else ""
        lines.append(f'upstream {sha[:12]} "{subj}" has this subject and touches '
                     f"{', '.join(paths)}: if it is this patch squash-merged, add to "
                     f"series.toml: [[provenance]] {pr}role = \"upstream-equivalent\", "
                     f'patches = [{number}], merged_as = "{sha[:12]}"; then rebase again')
    return lines
