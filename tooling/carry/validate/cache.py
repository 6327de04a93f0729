"""Finished reports, keyed by everything their outcome depends on.

The key is the result's tree, the onto tree (it decides the changed files), the plan, the
engine and the image digest (or the local interpreter). The same input validated again is
answered from here, without starting a container.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

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
    write_atomic(_path(root, k), data)


def write_atomic(path: Path, data: dict[str, Any]) -> None:
    """Written atomically, so a crash never leaves a half report that a later run trusts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".report-", dir=str(path.parent))
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, path)
