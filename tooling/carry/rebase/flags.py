"""What `carry rebase` is asked to do: start, or one of git's ways to go on from a stop
(`--continue`, `--skip`, `--abort`, `--quit`, `--show-current-patch`), read once from the
flags into an `Action`. Finding the stopped rebase (`resume.locate`), the dispatch
(`action.run`) and going on (`onward`) all take it, so none can read the flags differently;
it imports nothing of the rebase, so every one of them can. The options a new rebase takes
(`Options`) and what `--abort` reports (`Aborted`) are here too: the command line and the
report use them without importing the rebase's machinery."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from carry.base.errors import CarryError


class Action(enum.Enum):
    START = ""
    CONTINUE = "--continue"
    RESOLVE = "--resolve"
    SKIP = "--skip"
    ABORT = "--abort"
    QUIT = "--quit"
    SHOW = "--show-current-patch"

    @classmethod
    def parse(cls, *, continue_: bool = False, skip: bool = False, abort: bool = False,
              quit_: bool = False, show: bool = False, resolve: bool = False) -> Action:
        given = [a for a, on in ((cls.CONTINUE, continue_), (cls.RESOLVE, resolve),
                                 (cls.SKIP, skip),
                                 (cls.ABORT, abort), (cls.QUIT, quit_), (cls.SHOW, show)) if on]
        if len(given) > 1:
            raise CarryError(f"give at most one of {', '.join(a.value for a in given)}")
        return given[0] if given else cls.START

    @property
    def resumes(self) -> bool:
        """It acts on a stopped rebase, found from its saved state."""
        return self is not Action.START

    @property
    def writes(self) -> bool:
        """It changes refs, states or the series (and so takes the locks)."""
        return self is not Action.SHOW


@dataclass(kw_only=True)
class Options:
    onto: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    branch: str | None = None
    refresh: bool = False
    fetch: bool = False
    dry_run: bool = False
    force: bool = False
    target_names: bool = False  # `carry rebase`: --onto v1.1.0 writes the release target's branch
    auto_resolve: bool = True  # False: --no-auto-resolve (replay.autoresolve)
    furthest: bool = False  # each target pinned to the furthest commit it replays onto


@dataclass
class Aborted:
    series: str
    target: str
    branch: str
    restored: bool
    worktree: str
    series_restored: bool = False
