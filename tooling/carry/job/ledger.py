"""The ledger: what the CI job already validated, kept between runs by the workflow.

A hosted runner starts from nothing, so the results cache in a clone's `.git` is gone on every
run. The ledger is the small file the workflow keeps (see ci/README.md): one record per
(series, version, target, upstream commit, result tree, plan, image, outcome, time). A run
skips a cell whose (series, target, upstream commit) the ledger holds, unless forced.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from carry.base import untrusted
from carry.base.atomic import write_json
from carry.base.errors import CarryError
from carry.base.flock import flocked

SCHEMA = 1
DEFAULT = Path("carry-ledger.json")


@dataclass(frozen=True)
class Record:
    series: str
    version: int  # the series version that was validated
    target: str  # the manifest target name
    ref: str  # the tag or branch that target resolved to
    upstream: str  # the commit the series was replayed onto
    tree: str  # the result tree ("" when the rebase stopped)
    plan: str  # hash of the test plan
    image: str  # the image digest ("" for a local engine)
    outcome: str  # passed | failed | conflict | error
    time: str  # ISO 8601, UTC


@dataclass
class Ledger:
    path: Path
    records: list[Record]
    _index: dict[tuple[str, str, str], Record] | None = field(default=None, repr=False)

    def holds(self, series: str, target: str, upstream: str) -> Record | None:
        if self._index is None:  # built once: a late watcher asks about hundreds of tags
            self._index = {(r.series, r.target, r.upstream): r for r in self.records}
        return self._index.get((series, target, upstream))

    def for_target(self, series: str, target: str) -> list[Record]:
        return [r for r in self.records if (r.series, r.target) == (series, target)]


def load(path: Path) -> Ledger:
    """A missing ledger is an empty one; a ledger that does not parse is refused, never reset,
    so a corrupted cache cannot make the job forget and re-validate everything silently."""
    raw = untrusted.read_bytes(path, missing_ok=True)  # a FIFO or a link is refused
    if raw is None:
        return Ledger(path, [])
    try:
        data = untrusted.loads_json(raw, dict)
        if data.get("schema") != SCHEMA or not isinstance(data.get("records"), list):
            raise ValueError(f"expected an object with schema {SCHEMA} and its records")
        records = [_record(r) for r in data["records"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise CarryError(f"the ledger {path} is not a carry ledger: {exc}",
                         hint="restore it from the workflow cache, or move it away to start "
                              "over") from None
    return Ledger(path, records)


def _record(raw: Any) -> Record:
    names = {f.name: f.type for f in fields(Record)}
    if not isinstance(raw, dict) or set(raw) != set(names):
        raise ValueError(f"a record must have exactly the keys {', '.join(sorted(names))}")
    if not isinstance(raw["version"], int) or not all(
            isinstance(raw[k], str) for k in names if k != "version"):
        raise ValueError("a record's version is a number and its other fields are strings")
    return Record(**raw)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Two cells on one machine append in turn; neither loses the other's record."""
    with flocked(Path(f"{path}.lock"), f"the ledger {path}", wait=True):
        yield


def append(path: Path, record: Record) -> None:
    with _locked(path):
        ledger = load(path)
        rows = [asdict(r) for r in [*ledger.records, record]]
        write_json(path, {"schema": SCHEMA, "records": rows})


def merge(path: Path, others: list[Path]) -> int:
    """Fold the ledgers that matrix cells wrote on separate runners into one; returns how many
    records were new. Records are facts, so the union (oldest first) is the merge."""
    with _locked(path):
        mine = load(path)
        seen = set(mine.records)
        added: list[Record] = []
        for other in others:
            if not os.path.lexists(other):  # a cell's ledger that is not there is not empty
                raise CarryError(f"{other}: no such ledger file")
            for r in load(other).records:
                if r not in seen:
                    seen.add(r)
                    added.append(r)
        rows = sorted([*mine.records, *added], key=lambda r: r.time)
        write_json(path, {"schema": SCHEMA, "records": [asdict(r) for r in rows]})
    return len(added)
