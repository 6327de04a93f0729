"""Series versions as tags in the toolkit repository (like git-pile's pile history).

`series/<name>/vN` is a lightweight tag that points at a *tree*: a snapshot of the series
directory made through a private index. No commit is needed, so a version can be tagged the
moment it is written, before the maintainer commits anything.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

from carry.base import untrusted
from carry.base.errors import CarryError
from carry.base.suggest import did_you_mean
from carry.git import Repo
from carry.series.store import (
    MANIFEST,
    PATCH_DIR,
    PATCH_NAME,
    RESOLUTION_DIR,
    RESOLUTION_NAME,
    ChangelogEntry,
    Manifest,
    Series,
    read_resolutions,
)


@dataclass(frozen=True)
class Snapshot:
    """One version's files: the manifest text, the patches and the recorded resolutions, by
    file name."""

    version: str
    manifest: str
    patches: dict[str, bytes]
    resolutions: dict[str, bytes] = field(default_factory=dict)


def tag_name(series: str, version: int) -> str:
    return f"series/{series}/v{version}"


def toolkit_repo(series: Series) -> Repo | None:
    try:
        return Repo.open(series.root)
    except CarryError:
        return None


def tag(series: Series) -> str | None:
    """Tag the current state as its version; returns the tag, or None outside a checkout.

    An existing tag with other content is never moved: versions are immutable.
    """
    return _tag(series, toolkit_repo(series))


def _tag(series: Series, repo: Repo | None, replace: str = "") -> str | None:
    """`replace`: the tag's old value, a discarded version's tree `write_next` writes the
    number of again (`reusable`), which the new one takes."""
    if series.manifest.version == 0:
        return None
    if repo is None:
        return _keep_outside_git(series)
    tree = repo.snapshot_tree(series.root)
    name = tag_name(series.name, series.manifest.version)
    existing = repo.try_rev_parse(f"refs/tags/{name}", "tree")
    if existing == tree:
        return name
    if existing and existing == replace:
        repo.set_ref(f"refs/tags/{name}", tree, replace, reflog=False)
        return name
    if existing:
        raise CarryError(f"tag {name} already holds other content; bump the version instead")
    repo.create_tag(name, tree)
    return name


def reusable(repo: Repo | None, root: Path, version: int) -> str:
    """Whether carry may write version `version` of the series folder `root` when its tag
    exists already: yes (the tag's tree is returned, for `_tag` to move) when the tag is
    carry's own (a tag of a tree, not of a commit) and names a version no commit of any ref
    ever held: one written, then discarded (`git checkout -- series/NAME`) before it was
    committed. A committed version, or a tag carry did not make, is refused in one line,
    before anything is written; "" when there is no such tag."""
    name = tag_name(root.name, version)
    if repo is None or not repo.ref_exists(f"refs/tags/{name}"):
        return ""
    sha, kind, _ = repo.read_object(f"refs/tags/{name}")
    try:
        rel = root.resolve().relative_to(repo.path).as_posix()
    except ValueError:
        rel = ""
    if kind == "tree" and rel and sha not in repo.committed_trees(rel):
        return sha
    what = "a committed version" if kind == "tree" else f"a {kind or 'missing object'}"
    raise CarryError(f"cannot write v{version} of {root.name}: tag {name} already names "
                     f"{what}, and versions are never rewritten",
                     hint=f"commit or restore the series folder at its latest version, or "
                          f"`git tag -d {name}` if that tag is not carry's")


def read(series: Series, version: str) -> Snapshot:
    """Files of `vN` from its tag, or of the working directory for 'current' or the
    current version when that is not tagged yet."""
    # ASCII digits only: `v²` is isdigit() but no int(), and 5,000 digits are no version.
    number = untrusted.ascii_int(version.removeprefix("v"), 9)
    if version == "current" or (number == series.manifest.version
                                and not _has_tag(series, number)):
        current = {p.name: p.read() for p in series.patches()}
        return Snapshot(version, _text(series.manifest_path, series.root), current,
                        read_resolutions(series.root))
    if number is None:
        shown = version if len(version) <= 40 else version[:40] + "..."
        raise CarryError(f"bad version {shown!r}: expected vN or 'current'",
                         hint=did_you_mean(version, ["current"]))
    repo = toolkit_repo(series)
    if repo is None:
        return _read_outside_git(series, version, number)
    name = tag_name(series.name, number)
    tree = repo.try_rev_parse(f"refs/tags/{name}", "tree")
    if tree is None:
        known = [t.rsplit("/", 1)[-1] for t in repo.version_tags(f"series/{series.name}/v*")]
        raise CarryError(f"no version {version} of {series.name} (known: "
                         f"{', '.join(known) or 'none'})",
                         hint=did_you_mean(version, [*known, "current"]))
    files = _tree_files(repo, tree, PATCH_DIR, PATCH_NAME)
    try:
        manifest = (repo.show_file(tree, MANIFEST) or b"").decode("utf-8")
    except UnicodeDecodeError:
        raise CarryError(f"{name}: {MANIFEST} is not UTF-8") from None
    return Snapshot(version, manifest, files,
                    _tree_files(repo, tree, RESOLUTION_DIR, RESOLUTION_NAME))


def _tree_files(repo: Repo, tree: str, folder: str, names: re.Pattern[str]) -> dict[str, bytes]:
    """The regular files of `folder` in a version's tree whose names fit, by name."""
    files: dict[str, bytes] = {}
    sub = repo.tree_lookup(tree, folder.encode())
    for raw, (mode, sha) in (repo.tree_items(sub[1]) if sub else {}).items():
        fname = raw.decode("utf-8", "surrogateescape")
        if names.match(fname) and mode in (b"100644", b"100755"):
            files[fname] = repo.read_object(sha)[2]
    return dict(sorted(files.items()))


def _text(path: Path, root: Path) -> str:
    """A file of the series or of a version kept in it, read as the one reader reads: no link
    on the way from the series directory (`.versions` linked out of it is refused)."""
    return untrusted.read_text(path, inside=root) or ""


def _has_tag(series: Series, number: int) -> bool:
    repo = toolkit_repo(series)
    if repo is None:
        return (series.root / KEPT / f"v{number}" / MANIFEST).is_file()
    return bool(repo.ref_exists(f"refs/tags/{tag_name(series.name, number)}"))


# -- outside a git checkout: `.versions/vN/` in the series directory ---------------------------

KEPT = ".versions"


def _keep_outside_git(series: Series) -> str:
    """With no repository to tag in, copy the version's manifest, patches and resolutions to
    `.versions/vN/` (written aside, then renamed in), so `--refresh` never loses it."""
    import shutil
    import tempfile

    dest = series.root / KEPT / f"v{series.manifest.version}"
    untrusted.refuse_links_between(series.root, dest)  # never write through a link
    if dest.is_dir():
        return f"{KEPT}/{dest.name}"
    dest.parent.mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=str(dest.parent)))
    try:
        (tmp / PATCH_DIR).mkdir()
        shutil.copyfile(series.manifest_path, tmp / MANIFEST)
        for p in series.patches():
            shutil.copyfile(p.path, tmp / PATCH_DIR / p.name)
        resolutions = read_resolutions(series.root)
        if resolutions:
            (tmp / RESOLUTION_DIR).mkdir()
        for name, data in resolutions.items():
            (tmp / RESOLUTION_DIR / name).write_bytes(data)
        tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return f"{KEPT}/{dest.name}"


def _set_aside(root: Path, version: int) -> Path | None:
    """A kept `.versions/vN` for the number about to be written is a version written and
    then put back by hand (a series and its kept copy are swapped in together, and an
    --abort removes both): it is moved aside as `.versions/.vN-discarded-<time>`, never
    deleted, so that the new vN is kept in its place and range-diff reads the new one."""
    stale = root / KEPT / f"v{version}"
    untrusted.refuse_links_between(root, stale)
    if not stale.is_dir():
        return None
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    return stale.rename(stale.parent / f".v{version}-discarded-{stamp}")


def _read_outside_git(series: Series, version: str, number: int) -> Snapshot:
    d = series.root / KEPT / f"v{number}"
    untrusted.refuse_links_between(series.root, d / MANIFEST)
    if not (d / MANIFEST).is_file():
        kept = sorted(p.name for p in (series.root / KEPT).glob("v*")) if (
            series.root / KEPT).is_dir() else []
        raise CarryError(f"no version {version} of {series.name} in {series.root / KEPT} "
                         f"(kept: {', '.join(kept) or 'none'})",
                         hint=did_you_mean(version, kept) or "outside a git checkout, "
                         "`rebase --refresh` keeps old versions there")
    pdir = d / PATCH_DIR
    untrusted.refuse_links_between(series.root, pdir)
    files = {p.name: untrusted.read_bytes(p, inside=series.root) or b""
             for p in sorted(pdir.iterdir() if pdir.is_dir() else [])
             if PATCH_NAME.match(p.name)}
    return Snapshot(version, _text(d / MANIFEST, series.root), files, read_resolutions(d))


def write_next(root: Path, manifest: Manifest, files: dict[str, bytes], summary: str,
               today: str | None = None, resolutions: dict[str, bytes] | None = None
               ) -> tuple[int, str]:
    """The one way a new version of a series is made, by import, refresh and a recorded
    resolution alike: the version before it is tagged (so range-diff can reach it), the
    number goes up by one with one changelog line, the directory is swapped in atomically,
    and the new version tagged. `resolutions` replaces `resolutions/` (None keeps it).
    Outside a checkout the new version's kept copy is written in the same swap as the
    series. Returns the version and its tag ("" when there is nowhere to keep one)."""
    from carry.series.store import dump_manifest, find, write_series

    root.parent.mkdir(parents=True, exist_ok=True)
    try:
        repo: Repo | None = Repo.open(root if root.is_dir() else root.parent)
    except CarryError:
        repo = None
    try:
        if (root / MANIFEST).exists():
            with contextlib.suppress(CarryError):
                _tag(find(root.parent, root.name), repo)
        replace = reusable(repo, root, manifest.version + 1)
        aside = _set_aside(root, manifest.version + 1) if repo is None else None
        manifest.version += 1
        date = today or dt.datetime.now(dt.UTC).date().isoformat()
        manifest.changelog.append(ChangelogEntry(manifest.version, date, summary))
        kept_dir = f"{KEPT}/v{manifest.version}"
        also = {} if repo is not None or (root / kept_dir).is_dir() else {
            f"{kept_dir}/{MANIFEST}": dump_manifest(manifest).encode("utf-8"),
            **{f"{kept_dir}/{PATCH_DIR}/{name}": data for name, data in files.items()},
            **{f"{kept_dir}/{RESOLUTION_DIR}/{name}": data for name, data in (
                read_resolutions(root) if resolutions is None else resolutions).items()}}
        try:
            write_series(root, manifest, files, also=also, resolutions=resolutions)
        except BaseException:  # refused (or interrupted): the kept copy goes back as it was
            if aside is not None:
                aside.rename(root / KEPT / f"v{manifest.version}")
            raise
        kept = ""
        with contextlib.suppress(CarryError):
            kept = f"{KEPT}/v{manifest.version}" if repo is None else (
                _tag(find(root.parent, root.name), repo, replace) or "")
        return manifest.version, kept
    finally:
        if repo is not None:
            repo.close()


def restore(series: Series, version: int) -> bool:
    """Put the series back to `version` (kept by `write_next`) and forget the versions after
    it, which never became real: what `rebase --abort` does to a refresh a kill interrupted."""
    import shutil

    from carry.git import ANY
    from carry.series.store import loads_manifest, parse_manifest, write_series

    snap = read(series, f"v{version}")
    manifest = parse_manifest(series.manifest_path,
                              loads_manifest(series.manifest_path, snap.manifest))
    newer = range(version + 1, series.manifest.version + 1)
    write_series(series.root, manifest, snap.patches, resolutions=snap.resolutions)
    repo = toolkit_repo(series)
    for n in newer:
        if repo is None:
            shutil.rmtree(series.root / KEPT / f"v{n}", ignore_errors=True)
        elif repo.ref_exists(f"refs/tags/{tag_name(series.name, n)}"):
            repo.set_ref(f"refs/tags/{tag_name(series.name, n)}", None, ANY, reflog=False)
    return True


def commit_command(root: Path | str, version: int) -> str:
    """The git command that commits series folder `root` at `version` in its checkout (a new
    version is written, and tagged, but left uncommitted: the maintainer commits it), or ""
    outside a git checkout."""
    import shlex

    root = Path(root)
    try:
        repo = Repo.open(root)
    except CarryError:
        return ""
    try:
        rel = shlex.quote(str(root.resolve().relative_to(repo.path)))
    except ValueError:
        return ""
    finally:
        repo.close()
    top = shlex.quote(str(repo.path))
    message = shlex.quote(f"{root.name} v{version}")
    return f"git -C {top} add -- {rel} && git -C {top} commit -m {message} -- {rel}"
