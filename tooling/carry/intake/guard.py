"""An import never silently goes back.

Importing the fork's range again after `rebase --refresh` would write a new version equal to
an old one, and drop the refresh: the rebased patches and the conflicts resolved in them. So
an import whose patches are an older version's (compared by content, every kept version: the
`From <sha>` line aside, which names the commit a patch was cut from, not what it does), or
that would change or drop a patch that a recorded resolution (`resolutions/`) names, is
refused in one line naming the versions, unless `--force`.
"""

from __future__ import annotations

from pathlib import Path

from carry.base.errors import CarryError
from carry.series import versions
from carry.series.store import RESOLUTION_DIR, RESOLUTION_NAME, Series, list_resolutions


def check(series: Series, files: dict[str, bytes]) -> None:
    """Raise when writing `files` as the next version of `series` would go back."""
    current = {p.name: content(p.read()) for p in series.patches()}
    found = []
    back = older(series, files, set(current.values()))
    if back:
        found.append(_going_back(series, files, current, back))
    named = resolutions(series.root, [n for n, c in current.items()
                                      if content(files.get(n, b"")) != c])
    if named:
        which = ", ".join(sorted({_num(n) for n, _ in named}))
        found.append(f"it would change {which}, for which {series.name} records a conflict "
                     f"resolution ({', '.join(sorted({f for _, f in named}))})")
    if found:
        raise CarryError("; ".join(found) + "; carry import --force to go back",
                         hint="range-diff the versions (carry range-diff NAME vA vB) to see "
                              "what going back would lose")


def content(patch: bytes) -> bytes:
    """A patch file without its first `From <sha> ...` line."""
    return patch.partition(b"\n")[2] if patch.startswith(b"From ") else patch


def older(series: Series, files: dict[str, bytes], current: set[bytes]) -> dict[str, list[int]]:
    """Each new patch the current version lacks but an older one has, with those versions
    (newest first). A version that cannot be read (no tag in this clone) is passed over."""
    fresh = {name: content(data) for name, data in files.items()}
    fresh = {name: c for name, c in fresh.items() if c not in current}
    held: dict[str, list[int]] = {}
    for v in range(series.manifest.version - 1, 0, -1) if fresh else ():
        try:
            old = {content(data) for data in versions.read(series, f"v{v}").patches.values()}
        except CarryError:
            continue
        for name, c in fresh.items():
            if c in old:
                held.setdefault(name, []).append(v)
    return held


def _going_back(series: Series, files: dict[str, bytes], current: dict[str, bytes],
                back: dict[str, list[int]]) -> str:
    """"these patches are v1's; the series is at v3 (rebased onto upstream-main abc…)"."""
    common = set.intersection(*(set(vs) for vs in back.values()))
    held = [max(common)] if common else sorted({v for vs in back.values() for v in vs})
    whose = " and ".join(f"v{v}'s" for v in held)
    now = set(current.values())
    everything = all(name in back or content(data) in now for name, data in files.items())
    what = "these patches are" if everything else (
        f"{', '.join(_num(n) for n in sorted(back))} {'is' if len(back) == 1 else 'are'}")
    m = series.manifest
    last = next((c.summary for c in reversed(m.changelog) if c.version == m.version), "")
    how = last.split(":", 1)[0] or f"base {m.base.ref or m.base.commit[:12]}"
    return f"{what} {whose}; {series.name} is at v{m.version} ({how})"


def resolutions(root: Path, patches: list[str]) -> list[tuple[str, str]]:
    """(patch, resolution file) for each recorded resolution (`resolutions/NNNN-<id>.txt`,
    named by its patch's number) of one of `patches`."""
    numbers = {_num(name): name for name in patches}
    out = []
    for f in list_resolutions(root / RESOLUTION_DIR):
        m = RESOLUTION_NAME.match(f.name)
        if m and m.group(1) in numbers:
            out.append((numbers[m.group(1)], f"{RESOLUTION_DIR}/{f.name}"))
    return out


def _num(name: str) -> str:
    return name.split("-", 1)[0]
