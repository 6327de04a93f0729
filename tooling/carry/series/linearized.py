"""The manifest's `[[linearized]]` records: the patches the merge-linearizing import changed
from their fork commits, and why (`carry.intake.changes` writes them), so that `carry check
--against-repo` reports such a patch as linearized rather than as a patch-id difference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Linearized:
    """Patch file `patch`, changed from fork commit `commit` for `why`; `patch_id` is the
    imported patch's, so that a patch changed since is compared as any other."""

    patch: str
    commit: str
    patch_id: str
    why: str

    @classmethod
    def read(cls, r: Any) -> Linearized:
        """From the manifest's reader of one `[[linearized]]` table."""
        return cls(r.text("patch", required=True), r.text("commit", required=True),
                   r.text("patch_id"), r.text("why"))
