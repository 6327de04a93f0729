"""Finished reports, keyed by everything their outcome depends on.

The key is the result's tree, the onto tree (it decides the changed files), the plan, the
engine and the image digest (or the local interpreter). The same input validated again is
answered from here, without starting a container.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from carry.base.atomic import write_json

SCHEMA = 1


def key(parts: dict[str, Any]) -> str:
    blob = json.dumps({"schema": SCHEMA, **parts}, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


def _path(root: Path, k: str) -> Path:
    return root / (k.removeprefix("sha256:") + ".json")


def load(root: Path, k: str) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(_path(root, k).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return data if data.get("cache_key") == k else None


def store(root: Path, k: str, data: dict[str, Any]) -> None:
    write_json(_path(root, k), data)  # atomic: a crash never leaves half a report


def link(root: Path, early: str, k: str) -> None:
    """Remember that the inputs named by `early` (known before any replay) gave the report
    stored under `k`, so the next lookup needs no replay."""
    write_json(root / ("early-" + early.removeprefix("sha256:") + ".json"), {"key": k})


def follow(root: Path, early: str) -> dict[str, Any] | None:
    """The report `link` tied to `early`, if both are still there."""
    try:
        k = json.loads((root / ("early-" + early.removeprefix("sha256:") + ".json")).read_text(
            encoding="utf-8")).get("key")
    except (FileNotFoundError, ValueError, AttributeError):
        return None
    return load(root, k) if isinstance(k, str) else None

