""""Did you mean": the known names nearest to one that is not known, for every error that
reports an unknown ref, series, target or version.

Nearness is the Damerau-Levenshtein distance (optimal string alignment: an adjacent swap such
as `mian` for `main` costs one edit, as it costs a typist one slip), compared without case. A
name whose last `/` part is the word (`main` for `upstream/main`) counts as near too: that is
the ref a user meant when they left out the remote.
"""

from __future__ import annotations

from collections.abc import Iterable


def distance(a: str, b: str) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = ca != cb
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return prev[-1]


def nearest(word: str, names: Iterable[str], limit: int = 3) -> list[str]:
    """Up to `limit` of the names nearest to `word`; none when nothing is close. Close means
    within a third of the word's length (at least one edit, at most three), so that a short
    word is not matched with everything; only the nearest ones are given, so that one slip
    is not drowned by names three edits away."""
    key = word.casefold()
    most = max(1, min(3, len(key) // 3))
    scored: list[tuple[int, str]] = []
    for name in dict.fromkeys(names):
        if name == word or not name:
            continue
        folded = name.casefold()
        if folded.rsplit("/", 1)[-1] == key:
            scored.append((0, name))
        elif abs(len(folded) - len(key)) <= most:
            d = distance(key, folded)
            if d <= most:
                scored.append((d, name))
    best = min((d for d, _ in scored), default=0)
    return [name for d, name in sorted(scored) if d == best][:limit]


def did_you_mean(word: str, names: Iterable[str]) -> str | None:
    """`did you mean 'x'?` (or `'x' or 'y'?`), or None when no known name is near."""
    near = nearest(word, names)
    if not near:
        return None
    quoted = [repr(n) for n in near]
    shown = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f"did you mean {shown}?"


def join(*hints: str | None) -> str | None:
    """Several hints as one (`; `), or None when there is none."""
    given = [h for h in hints if h]
    return "; ".join(given) if given else None
