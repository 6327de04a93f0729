"""The series on disk: `series/<name>/series.toml`, `patches/NNNN-*.patch`, `cover.md`, and
the recorded conflict resolutions, `resolutions/NNNN-<id>.txt`.

Order has one source of truth, the patch file names. A patch keeps its number for life: when
upstream absorbs patch 0001, the file goes and 0002 stays 0002, so the policy exceptions, the
expectations and the provenance that name patch numbers stay true across versions.

A whole series directory is replaced in one step: the new state is written to a sibling
temporary directory and exchanged with the old one (`renameat2(RENAME_EXCHANGE)` where Linux
has it), so a reader never sees half of a version and a crash never loses the old one.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from carry.base import atomic, redact, untrusted
from carry.base.atomic import refuse_link
from carry.base.errors import CarryError
from carry.series.locate import MANIFEST, beside, series_dir, where_hint
from carry.series.manifest import (
    SCHEMA,
    Base,
    ChangelogEntry,
    Expected,
    Hook,
    Manifest,
    ManifestError,
    Policy,
    Provenance,
    Repository,
    Target,
    TestPlan,
    check_name,
    check_repo,
    dump_manifest,
    parse_manifest,
)

# The manifest lives in carry.series.manifest; its names stay importable from here too.
__all__ = [
    "MANIFEST",
    "COVER",
    "PATCH_DIR",
    "PATCH_NAME",
    "RESOLUTION_DIR",
    "RESOLUTION_NAME",
    "PatchFile",
    "Series",
    "series_dir",
    "beside",
    "where_hint",
    "list_series",
    "BadSeries",
    "Listing",
    "scan",
    "find",
    "read_regular",
    "list_patches",
    "list_resolutions",
    "read_resolutions",
    "load",
    "loads_manifest",
    "write_series",
    "save_manifest",
    "SCHEMA",
    "Base",
    "ChangelogEntry",
    "Expected",
    "Hook",
    "Manifest",
    "ManifestError",
    "Policy",
    "Provenance",
    "Repository",
    "Target",
    "TestPlan",
    "check_name",
    "check_repo",
    "dump_manifest",
    "parse_manifest",
]

COVER = "cover.md"
PATCH_DIR = "patches"
PATCH_NAME = re.compile(r"^([0-9]{4})-[A-Za-z0-9._-]*\.patch\Z")
# Recorded conflict resolutions (carry.replay.rerere): one text file per conflicted path,
# NNNN (the patch) and the conflict's id; part of every version like the patches.
RESOLUTION_DIR = "resolutions"
RESOLUTION_NAME = re.compile(r"^([0-9]{4})-([0-9a-f]{16})\.txt\Z")  # ASCII: `\d` takes ٠٠٠٢
RESOLUTION_LIMIT = 4 << 20  # a resolution file is read whole; a larger one is refused


@dataclass
class PatchFile:
    number: int
    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    def read(self) -> bytes:
        data = read_regular(self.path)
        if data is None:
            raise CarryError(f"{self.path}: vanished while carry was reading the series")
        return data


@dataclass
class Series:
    """A loaded series directory."""

    root: Path
    manifest: Manifest
    cover: str = ""

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def manifest_path(self) -> Path:
        return self.root / MANIFEST

    def patches(self) -> list[PatchFile]:
        return list_patches(self.root / PATCH_DIR)


def list_series(root: Path) -> list[Series]:
    if not root.is_dir():
        return []
    out = []
    for d in sorted(root.iterdir()):
        if d.is_dir() and not d.name.startswith(".") and (d / MANIFEST).exists():
            out.append(load(d))
    return out


@dataclass
class BadSeries:
    name: str
    error: str


@dataclass
class Listing:
    """Every series folder under `root`: the ones that load, and the ones that don't with why."""

    root: Path
    series: list[Series]
    bad: list[BadSeries]

    @property
    def exit_code(self) -> int:
        return 1 if self.bad else 0


def scan(root: Path) -> Listing:
    out = Listing(root, [], [])
    if not root.is_dir():
        return out
    for d in sorted(root.iterdir()):
        if d.is_dir() and not d.name.startswith(".") and (d / MANIFEST).exists():
            try:
                out.series.append(load(d))
            except CarryError as exc:
                out.bad.append(BadSeries(d.name, exc.line()))
    return out


def find(root: Path, name: str) -> Series:
    d = root / check_name(name)
    if not (d / MANIFEST).exists():
        atomic.recover(d)  # a writer killed inside the swap's fallback
    if not (d / MANIFEST).exists():
        from carry.base.suggest import did_you_mean

        names = [s.name for s in list_series(root)]
        raise CarryError(f"unknown series {name!r} in {root} (known: "
                         f"{', '.join(names) or 'none'})",
                         hint=did_you_mean(name, names) or (
                             "pass --series-dir DIR or set CARRY_SERIES_DIR for another folder"
                             if names else where_hint(root)))
    return load(d)


def read_regular(path: Path, limit: int | None = None) -> bytes | None:
    """The bytes of a regular file, None when it is absent. A symlink is refused, dangling or
    not: a series is published (PR bodies, patches), so a `cover.md` linked to
    /proc/self/environ or to a file outside the series must never be read. A file larger
    than `limit` is refused before it is read."""
    if limit is None:
        return untrusted.read_bytes(path, missing_ok=True)
    return untrusted.read_bytes(path, missing_ok=True, limit=limit)


def _text(path: Path) -> str | None:
    data = read_regular(path)
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError:
        raise ManifestError(f"{path}: not UTF-8") from None


def list_patches(pdir: Path) -> list[PatchFile]:
    refuse_link(pdir)
    if pdir.exists() and not pdir.is_dir():
        raise CarryError(f"{pdir}: not a directory (patches/ holds one file per patch)")
    if not pdir.is_dir():
        return []
    out = []
    for p in sorted(pdir.iterdir()):
        if p.name.startswith("."):
            continue
        refuse_link(p)
        m = PATCH_NAME.match(p.name)
        if not m:
            raise CarryError(f"{p}: not a patch file name (expected NNNN-slug.patch)")
        if not p.is_file():
            raise CarryError(f"{p}: not a regular file (a patch is one file)")
        out.append(PatchFile(int(m.group(1)), p))
    numbers = [p.number for p in out]
    if len(set(numbers)) != len(numbers):
        raise CarryError(f"{pdir}: two patch files share a number")
    return out


def list_resolutions(rdir: Path) -> list[Path]:
    """The recorded resolutions' files, by name; a link, a folder or a stray name in
    `resolutions/` is refused as in `patches/`, so nothing outside the series is read."""
    refuse_link(rdir)
    if rdir.exists() and not rdir.is_dir():
        raise CarryError(f"{rdir}: not a directory (resolutions/ holds recorded resolutions)")
    if not rdir.is_dir():
        return []
    out = []
    for p in sorted(rdir.iterdir()):
        if p.name.startswith("."):
            continue
        refuse_link(p)
        if not RESOLUTION_NAME.match(p.name):
            raise CarryError(f"{p}: not a resolution file name (expected NNNN-<16 hex>.txt)")
        out.append(p)
    return out


def read_resolutions(root: Path) -> dict[str, bytes]:
    """The bytes of every resolution file of the series folder `root`, by file name."""
    out = {}
    for p in list_resolutions(root / RESOLUTION_DIR):
        data = read_regular(p, RESOLUTION_LIMIT)
        if data is not None:
            out[p.name] = data
    return out


def load(root: Path) -> Series:
    path = root / MANIFEST
    refuse_link(root)
    text = _text(path)
    if text is None:
        raise CarryError(f"{path}: no manifest")
    manifest = parse_manifest(path, loads_manifest(path, text))
    if manifest.name != root.name:
        raise ManifestError(f"{path}: key 'name': expected {root.name!r} (the directory), "
                            f"got {manifest.name!r}")
    series = Series(root, manifest, _text(root / COVER) or "")
    series.patches()  # validates the file names
    return series


def loads_manifest(path: Path, text: str) -> dict[str, Any]:
    """A manifest's TOML, through the one reader of untrusted documents (a kept version or a
    tag's manifest as much as the current one)."""
    try:
        return untrusted.loads_toml(text)
    except untrusted.BadData as exc:
        raise ManifestError(f"{path}: {exc}") from None


def write_series(
    root: Path, manifest: Manifest, patches: dict[str, bytes] | None, cover: str | None = None,
    also: dict[str, bytes] | None = None, resolutions: dict[str, bytes] | None = None,
) -> bool:
    """Write a whole series directory atomically; returns False when no byte would change.

    `patches` maps file names to bytes and replaces the patch set; None keeps the current one.
    `resolutions` does the same for `resolutions/` (None keeps the folder as it is).
    `also` adds files (by path in the directory) in the same step: a version kept aside.
    """
    check_name(root.name)
    manifest_text = redact.scrub(dump_manifest(manifest))  # a URL is stored without its token
    parse_manifest(root / MANIFEST, tomllib.loads(manifest_text))  # never write what we can't read
    old_patches = {p.name: p.read() for p in list_patches(root / PATCH_DIR)}
    new_patches = old_patches if patches is None else patches
    for fname in new_patches:
        if not PATCH_NAME.match(fname):
            raise CarryError(f"{root}: cannot write {fname!r}: not a NNNN-slug.patch name")
    refuse_link(root)
    old_cover = _text(root / COVER)
    new_cover = old_cover if cover is None else redact.scrub(cover)
    old_manifest = _text(root / MANIFEST)
    for fname in resolutions or {}:
        if not RESOLUTION_NAME.match(fname):
            raise CarryError(f"{root}: cannot write {fname!r}: not a resolution file name")
    same = resolutions is None or resolutions == read_resolutions(root)
    if same and (old_manifest, old_patches, old_cover) == (manifest_text, new_patches,
                                                           new_cover):
        return False
    files = {f"{PATCH_DIR}/{fname}": data for fname, data in new_patches.items()}
    if new_cover is not None:
        files[COVER] = new_cover.encode("utf-8")
    files[MANIFEST] = manifest_text.encode("utf-8")
    files.update({f"{RESOLUTION_DIR}/{fname}": data
                  for fname, data in (resolutions or {}).items()})
    written = (MANIFEST, COVER, PATCH_DIR) + (() if resolutions is None else (RESOLUTION_DIR,))
    atomic.write_dir(root, {**files, **(also or {})}, [PATCH_DIR],
                     keep=lambda name: name not in written)
    return True


def save_manifest(series: Series) -> bool:
    return write_series(series.root, series.manifest, None)
