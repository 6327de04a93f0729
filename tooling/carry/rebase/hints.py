"""Hints for a conflict that is really a squash merge without provenance: an upstream commit
since the base whose subject is the patch's (ignoring a trailing `(#N)`) and that touched the
conflicting paths is probably the patch, merged; the manifest can then say so.

Which of the series' subjects any upstream commit since the base has at all is worked out once
per base, target and series, and kept (`.git/carry/squash/`): a stop whose patch has none of
them has no hint, and a loop of `--skip`s then starts no git process for it."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from contextlib import suppress

from carry.base.untrusted import ascii_int
from carry.git import Repo

_PR = re.compile(r"\(#([0-9]{1,10})\)\s*$")  # ASCII digits; no leading \s*: linear


def _key(subject: str) -> str:
    return " ".join(_PR.sub("", subject).split()).casefold()


def hints(repo: Repo, base: str, onto: str, patch: str, subject: str, paths: list[str],
          upstream: str, subjects: Sequence[str] = ()) -> list[str]:
    """One line per matching upstream commit, with the provenance entry to add. `subjects`,
    the series' patches' subjects, lets a patch no upstream commit shares a subject with
    go without a look at the history (`_shared`)."""
    if not base or not paths:
        return []
    if subjects and _key(subject) not in _shared(repo, base, onto, subjects):
        return []  # no commit of base..onto has its subject: the log below would find none
    if not repo.is_ancestor(base, onto):
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


def _shared(repo: Repo, base: str, onto: str, subjects: Sequence[str]) -> set[str]:
    """The keys of `subjects` that some commit of base..onto (merges left out) has: from the
    kept answer when there is a sound one (commits never change), else from one `git log`,
    then kept (without a sync: a lost or damaged answer is worked out again)."""
    keys = sorted({_key(s) for s in subjects})
    name = hashlib.sha256("\0".join(["carry-squash-1", base, onto, *keys]).encode()
                          ).hexdigest()[:40]
    path = repo.carry_dir() / "squash" / name
    with suppress(OSError, ValueError):
        digest, _, raw = path.read_bytes().partition(b"\n")
        found = json.loads(raw)
        if hashlib.sha256(raw).hexdigest().encode() == digest and isinstance(found, list) \
                and all(isinstance(k, str) for k in found):
            return set(found)
    wanted = set(keys)
    found = sorted({k for k in map(_key, repo.subjects(base, onto)) if k in wanted})
    raw = json.dumps(found).encode()
    with suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".{name}.{os.getpid()}"
        tmp.write_bytes(hashlib.sha256(raw).hexdigest().encode() + b"\n" + raw)
        os.replace(tmp, path)
        entries = [e for e in path.parent.iterdir() if not e.name.startswith(".")]
        if len(entries) > 256:
            for old in sorted(entries, key=lambda e: e.stat().st_mtime)[:-256]:
                old.unlink()
    return set(found)
