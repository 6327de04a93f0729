"""`carry releases`: what upstream published that a series has not been validated against.

Two sources, because each misses something: the repository's tags (every one since the last
validated version, not only the newest, so two releases between runs are both seen) and the
package index (PEP 691 JSON), which knows yanked releases and releases whose tag has not been
fetched yet. Dev-branch targets contribute their head when the ledger does not hold it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from carry.base import redact, untrusted
from carry.base.errors import CarryError
from carry.git import Repo
from carry.job.ledger import Ledger
from carry.job.ledger import load as load_ledger
from carry.series.store import Series, Target

PEP691 = "application/vnd.pypi.simple.v1+json"


class Seen(StrEnum):
    """Where a release of upstream stands for a series' target."""

    PENDING = "pending"  # tagged, not validated yet
    VALIDATED = "validated"  # the ledger holds it
    WAITING = "waiting for the tag"  # on the package index, not tagged yet
    YANKED = "yanked"
    MISSING = "missing"  # a branch target that is not in the repository


@dataclass
class Release:
    series: str
    target: str
    kind: str  # release | main | dev | ...
    version: str  # "" for a branch head
    ref: str  # the tag or branch ("" while waiting for the tag)
    commit: str
    status: Seen


@dataclass
class IndexRelease:
    version: Version
    yanked: bool


def index_url(explicit: str | None) -> str | None:
    """--index-url, then what pip itself would use: its configuration as `pip config list`
    reports it (PIP_INDEX_URL, then the [install] and [global] sections, in pip's own file
    order), then pip's default as its `--help` states it. Both are pip's public command line,
    so this repository names no index host and reads none of pip's internals."""
    if explicit:
        return explicit
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"]
    found = {k: v for k, v in _pip("config", "list") if k.endswith(".index-url")}
    for key in (":env:.index-url", "install.index-url", "global.index-url"):
        if key in found:
            return found[key]
    help_text = " ".join(line for _, line in _pip("download", "--help"))
    m = re.search(r"--index-url <url>\s.*?\(default\s+(\S+?)\)", help_text)
    return m.group(1) if m else None


def _pip(*args: str) -> list[tuple[str, str]]:
    """`python -m pip ARGS`'s lines, as (key, 'value') for `config list` and ('', line)
    otherwise; nothing when pip is missing or fails."""
    proc = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL,
                          env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    if proc.returncode != 0:
        return []
    out = []
    for line in proc.stdout.splitlines():
        key, eq, value = line.partition("=")
        out.append((key, value.strip("'\"")) if eq and args[0] == "config" else ("", line))
    return out


def _scheme(url: str) -> str:
    try:
        return urllib.parse.urlsplit(url).scheme
    except ValueError:  # `http://[::1/simple`: urllib refuses a bracket left open
        return ""


def fetch_index(url: str, package: str) -> list[IndexRelease]:
    """The package's releases from a PEP 691 JSON simple index; a version is yanked when every
    file of it is."""
    if _scheme(url) not in ("http", "https", "file"):
        raise CarryError(f"the index URL {redact.url(url)} is not an http(s) URL",
                         hint="pass --index-url")
    page = url.rstrip("/") + "/" + canonicalize_name(package) + "/"
    req = urllib.request.Request(page, headers={"Accept": PEP691})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 - scheme checked
            body = resp.read(untrusted.MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise CarryError(f"the package index answered {exc.code} for {redact.url(page)}"
                         ) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CarryError(f"cannot reach the package index {redact.url(page)}: {reason}"
                         ) from None
    try:
        if len(body) > untrusted.MAX_BYTES:
            raise ValueError(f"more than {untrusted.MAX_BYTES} bytes")
        files = untrusted.loads_json(body, dict)["files"]
        if not isinstance(files, list):
            raise TypeError("files is not a list")
        return _versions(package, files)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CarryError(f"the package index {redact.url(page)} did not answer in PEP 691 "
                         f"JSON ({exc})") from None


def _versions(package: str, files: list[dict[str, object]]) -> list[IndexRelease]:
    seen: dict[Version, bool] = {}
    for f in files:
        version = _file_version(package, str(f["filename"]))
        if version is None:
            continue
        yanked = f.get("yanked", False) not in (False, None)
        seen[version] = seen.get(version, True) and yanked
    return [IndexRelease(v, y) for v, y in sorted(seen.items())]


def _file_version(package: str, filename: str) -> Version | None:
    """The version a distribution file's name states, read by packaging's own parsers; None for
    another project's file or a name that is not a distribution's."""
    try:
        if filename.endswith(".whl"):
            name, version, _, _ = parse_wheel_filename(filename)
        elif filename.endswith((".tar.gz", ".zip")):
            name, version = parse_sdist_filename(filename)
        else:
            return None
    except (InvalidSdistFilename, InvalidWheelFilename, InvalidVersion):
        return None
    return version if name == canonicalize_name(package) else None


_MAX_VERSION = 200


def parse_version(text: str) -> Version | None:
    """A PEP 440 version, or None: what a tag, an index or --since says is not trusted to be
    one, and `Version("1" * 5000)` raises ValueError from int(), not InvalidVersion."""
    if len(text) > _MAX_VERSION:
        return None
    try:
        return Version(text)
    except ValueError:  # InvalidVersion is one
        return None


def _tag_version(pattern: str, tag: str) -> Version | None:
    prefix, _, suffix = pattern.partition("*")
    if not tag.startswith(prefix) or not tag.endswith(suffix):
        return None
    return parse_version(tag[len(prefix): len(tag) - len(suffix)] if suffix
                         else tag[len(prefix):])


def pending(series: Series, repo: Repo, ledger: Ledger, index: list[IndexRelease] | None,
            since: str | None = None) -> list[Release]:
    """Every tag and branch head of the series' targets, oldest first, with whether the ledger
    holds it; index releases with no tag yet, and yanked ones, are listed too."""
    out: list[Release] = []
    floor = _version(since) if since else None
    for t in series.manifest.targets:
        if t.tags:
            out += _tag_releases(series, repo, ledger, t, index or [], floor)
        else:
            out.append(_branch_release(series, repo, ledger, t))
    return out


def _version(text: str) -> Version:
    version = parse_version(text.removeprefix("v"))
    if version is None:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise CarryError(f"--since {shown!r} is not a version")
    return version


def _tag_releases(series: Series, repo: Repo, ledger: Ledger, t: Target,
                  index: list[IndexRelease], floor: Version | None) -> list[Release]:
    name = series.name
    commits = _tag_commits(repo, t.tags)
    tags = {v: tag for tag in commits
            if (v := _tag_version(t.tags, tag)) is not None
            and (t.prereleases or not v.is_prerelease)}
    if floor is None:
        done = [v for r in ledger.for_target(name, t.name)
                if r.ref in tags.values() and (v := _tag_version(t.tags, r.ref)) is not None]
        floor = max(done) if done else None
    newest = sorted(tags)[-t.latest:] if t.latest > 0 else sorted(tags)
    chosen = [v for v in sorted(tags) if v > floor] if floor is not None else newest
    yanked = {r.version for r in index if r.yanked}
    rows: list[Release] = []
    for v in chosen:
        commit = commits[tags[v]]
        status = (Seen.YANKED if v in yanked else
                  Seen.VALIDATED if ledger.holds(name, t.name, commit) else Seen.PENDING)
        rows.append(Release(name, t.name, t.kind, str(v), tags[v], commit, status))
    low = floor if floor is not None else max(tags, default=None)
    for r in index:
        wanted = t.prereleases or not r.version.is_prerelease
        if r.version not in tags and not r.yanked and wanted and (low is None or r.version > low):
            rows.append(Release(name, t.name, t.kind, str(r.version), "", "", Seen.WAITING))
    return sorted(rows, key=lambda r: Version(r.version))


def _tag_commits(repo: Repo, pattern: str) -> dict[str, str]:
    """Every matching tag and the commit it names, in one process (not one per tag: a
    watcher that starts late sees hundreds)."""
    rows = repo.for_each_ref(f"refs/tags/{pattern}",
                             "%(refname:strip=2) %(objectname) %(*objectname)")
    out: dict[str, str] = {}
    for row in rows:
        name, obj, peeled = (row.split(" ") + [""])[:3]
        out[name] = peeled or obj
    return out


def _branch_release(series: Series, repo: Repo, ledger: Ledger, t: Target) -> Release:
    commit = repo.try_rev_parse(t.ref)
    if commit is None:
        return Release(series.name, t.name, t.kind, "", t.ref, "", Seen.MISSING)
    status = Seen.VALIDATED if ledger.holds(series.name, t.name, commit) else Seen.PENDING
    return Release(series.name, t.name, t.kind, "", t.ref, commit, status)


def run(series: Series, repo: Repo, ledger_path: Path, explicit_index: str | None,
        package: str | None, since: str | None) -> list[Release]:
    """The index is asked only when the series names its package (or --package does)."""
    pkg = package or series.manifest.upstream.package
    url = index_url(explicit_index) if pkg else None
    index = fetch_index(url, pkg) if url and pkg else None
    return pending(series, repo, load_ledger(ledger_path), index, since)
