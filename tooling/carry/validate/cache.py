"""Finished reports, keyed by everything their outcome depends on.

The key is the result's tree, the onto tree (it decides the changed files), the plan, the
engine and the image digest (or the local interpreter). The same input validated again is
answered from here, without starting a container.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from carry.base import untrusted
from carry.base.atomic import write_json
from carry.base.data import to_data
from carry.base.errors import CarryError

if TYPE_CHECKING:
    from carry.validate.results import Report

SCHEMA = 2  # 2: the plan holds env and allow_empty; the baseline proves less


def key(parts: dict[str, Any]) -> str:
    blob = json.dumps({"schema": SCHEMA, **parts}, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


def _path(root: Path, k: str) -> Path:
    return root / (k.removeprefix("sha256:") + ".json")


def load(root: Path, k: str) -> Report | None:
    """The report stored under `k`; a missing, damaged or foreign entry is a miss (the run
    then stores a good one over it), never an error."""
    from carry.validate.results import Report

    try:
        data = untrusted.read_json(_path(root, k), dict, missing_ok=True)
        if data is None or data.get("cache_key") != k:
            return None
        return Report.from_data(data)  # every field of its type
    except (CarryError, ValueError):
        return None


def store(root: Path, k: str, report: Report) -> None:
    """`report` under `k`, which it names as its key."""
    write_json(_path(root, k), to_data(replace(report, cache_key=k)))  # atomic: never half


def link(root: Path, early: str, k: str) -> None:
    """Remember that the inputs named by `early` (known before any replay) gave the report
    stored under `k`, so the next lookup needs no replay."""
    write_json(root / ("early-" + early.removeprefix("sha256:") + ".json"), {"key": k})


def follow(root: Path, early: str) -> Report | None:
    """The report `link` tied to `early`, if both are still there."""
    try:
        link = untrusted.read_json(root / ("early-" + early.removeprefix("sha256:") + ".json"),
                                   dict, missing_ok=True)
    except (CarryError, ValueError):
        return None
    k = link.get("key") if link is not None else None
    return load(root, k) if isinstance(k, str) else None

