"""The types the CI job's modules share: a cell's row, the loop's options, what it did on
GitHub, and one run's context. They live apart so that `cells`, `loop`, `failing` and
`steer` each import them from here and none imports another for a type (which is how an
import cycle hides)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from carry.base import untrusted
from carry.base.errors import CarryError
from carry.git import Repo
from carry.job.verdict import Failing
from carry.publish import github as forgemod
from carry.replay.engine import Conflict
from carry.series import store as seriesmod


class Check(StrEnum):
    """How a cell's validation ended; whether the results cache answered is `Row.cached`."""

    NOT_RUN = "not run"
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # carry could not validate (bad input, a missing interpreter)


_CACHED = "cached "
_AUDIT = ", audit failed"
_LEDGER = "ledger: "


@dataclass
class Row:
    """One cell: a series on a target. `summary.json` also holds `validate`, the validation
    in words ("cached passed, audit failed"), which is what an older `carry ci loop` reads."""

    json_extra: ClassVar[tuple[str, ...]] = ("validate",)

    series: str
    target: str
    onto: str
    rebase: str  # applied | conflict | failed
    head: str = ""
    applied: int = 0
    dropped: list[str] = field(default_factory=list)
    conflict: str = ""
    check: Check = Check.NOT_RUN
    cached: bool = False  # the results cache answered: nothing ran now
    held: str = ""  # the ledger's outcome, when the ledger skipped the cell
    summary: str = ""
    report: str = ""
    ref: str = ""  # the tag or branch `onto` resolved from
    stop: Conflict | None = None  # the patch, author and paths of a conflict
    would_conflict: list[str] = field(default_factory=list)  # later patches, with their paths
    resolved: list[str] = field(default_factory=list)  # "FILE: why", by recorded resolutions
    why: list[dict[str, Any]] = field(default_factory=list)  # replay.causes.explain: roots first
    failing: list[Failing] = field(default_factory=list)  # verdict.triage: per test
    tail: str = ""  # the end of the failing pytest run's output, scrubbed
    time: str = ""  # when the cell ran (ISO 8601, UTC)
    audit: list[str] = field(default_factory=list)  # replay.audit: what clean patches break
    furthest: str = ""  # a conflict: "up to #A (k of n commits); blocked by #B on NNNN"
    furthest_onto: str = ""  # the furthest commit the series replays onto, short of the target
    furthest_head: str = ""  # the series on it, validated (furthest_validate), the PR's
    furthest_validate: str = ""  # that validation in words, as `validate` says it
    furthest_passed: bool = False  # ... and whether it passed (the PR carries it then)

    @property
    def audit_failed(self) -> bool:
        """A clean rebase whose audit found something is not a validated one."""
        return self.rebase == "applied" and bool(self.audit)

    @property
    def passed(self) -> bool:
        """Validated: the tests passed and the audit found nothing."""
        return self.check is Check.PASSED and not self.audit_failed

    @property
    def validation(self) -> str:
        """The validation in words, without saying whether a cache answered."""
        return f"{self.check}{_AUDIT if self.audit_failed else ''}"

    @property
    def validate(self) -> str:
        if self.held:
            return _LEDGER + self.held
        return (_CACHED if self.cached else "") + self.validation

    @classmethod
    def from_data(cls, raw: Any, where: str) -> Row:
        """A row read back from a cell's `summary.json`, or BadData. One written before
        `check` was a field of its own says it in `validate` only."""
        row = untrusted.build(cls, raw, where)
        said = raw.get("validate")
        if "check" not in raw and said is not None:
            if not isinstance(said, str):
                raise untrusted.BadData(f"{where}.validate: expected a string")
            row.held = said.removeprefix(_LEDGER) if said.startswith(_LEDGER) else ""
            row.cached = not row.held and said.startswith(_CACHED)
            word = said.removeprefix(_CACHED).removesuffix(_AUDIT)
            try:
                row.check = Check.NOT_RUN if row.held else Check(word)
            except ValueError:
                raise untrusted.BadData(f"{where}.validate: {said!r:.60} is not a validation "
                                        "carry writes") from None
        return row


def furthest_line(row: Row) -> str:
    """A conflicting cell's furthest point, as the summary and the dashboard say it."""
    there = f"; validated there: {row.furthest_validate}" if row.furthest_validate else ""
    return row.furthest + there


@dataclass(kw_only=True)
class Options:
    open_pr: bool = False
    track_issues: bool = False
    dry_run: bool = False
    forge_repo: str | None = None  # default: the manifest's [fork].repo
    base: str | None = None  # the PR's base branch; default: [fork].branch, else main
    remote: str | None = None  # default: the manifest's [fork].remote, else origin
    api_url: str | None = None
    token_env: str | None = None  # default: $GH_TOKEN, then $GITHUB_TOKEN (publish.github)
    max_wait: float = forgemod.DEFAULT_MAX_WAIT
    open_limit: int = 0  # at most this many PRs and issues opened per run; 0: no limit
    dashboard: bool = False  # keep the dashboard issue (steer.py)

    @property
    def enabled(self) -> bool:
        return self.open_pr or self.track_issues or self.dashboard

    @property
    def access(self) -> forgemod.Access:
        return forgemod.Access(self.api_url, self.token_env, self.max_wait)


class Did(StrEnum):
    """What the loop did, or in a dry run would do, to a PR or an issue."""

    OPENED = "opened"
    UPDATED = "updated"
    CLOSED = "closed"
    UNCHANGED = "unchanged"
    SKIPPED = "skipped"
    FAILED = "failed"  # CarryError: tried again by the next run
    WAITING = "waiting"  # this run opened as many as it may
    WOULD_OPEN = "would-open"
    WOULD_UPDATE = "would-update"
    WOULD_CLOSE = "would-close"

    @property
    def kept(self) -> bool:
        """The PR or issue is open now, as this run left it."""
        return self in (Did.OPENED, Did.UPDATED, Did.UNCHANGED)


@dataclass
class Action:
    series: str
    target: str
    ref: str
    kind: str  # pr | issue | loop | dashboard
    action: Did
    number: int = 0
    url: str = ""
    note: str = ""


@dataclass
class Context:
    repo: Repo
    opts: Options
    _forge: forgemod.Forge | None = field(default=None, repr=False)
    opened: dict[str, int] = field(default_factory=dict)  # series -> PRs and issues opened

    def forge(self) -> forgemod.Forge:
        if self._forge is None:
            self._forge = self.opts.access.connect()
        return self._forge

    def room(self, s: seriesmod.Series) -> bool:
        """Whether this run may open one more PR or issue: --open-limit bounds the run, the
        manifest's [ci].open_limit the series (Renovate's prHourlyLimit, per run)."""
        total, mine, cap = sum(self.opened.values()), self.opened.get(s.name, 0), \
            s.manifest.ci.open_limit
        return (not self.opts.open_limit or total < self.opts.open_limit) and (
            not cap or mine < cap)

    def took(self, s: seriesmod.Series) -> None:
        self.opened[s.name] = self.opened.get(s.name, 0) + 1

    def waiting_note(self, what: str) -> str:
        return f"{what} opens on a later run: this one opened as many as it may"


def forge_repo(s: seriesmod.Series, opts: Options) -> str:
    name = opts.forge_repo or s.manifest.fork.repo
    if not name or "/" not in name:
        raise CarryError(f"the loop needs the GitHub repository of {s.name}: its manifest "
                         "names no [fork].repo", hint="pass --forge-repo OWNER/NAME")
    return name
