"""The types the CI job's modules share: a cell's row, the loop's options, what it did on
GitHub, and one run's context. They live apart so that `cells`, `loop`, `failing` and
`steer` each import them from here and none imports another for a type (which is how an
import cycle hides)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from carry.base.errors import CarryError
from carry.git import Repo
from carry.publish import github as forgemod
from carry.replay.engine import Conflict
from carry.series import store as seriesmod


@dataclass
class Row:
    series: str
    target: str
    onto: str
    rebase: str  # applied | conflict | failed
    head: str = ""
    applied: int = 0
    dropped: list[str] = field(default_factory=list)
    conflict: str = ""
    validate: str = "not run"  # passed | failed | cached passed | error | not run
    summary: str = ""
    report: str = ""
    ref: str = ""  # the tag or branch `onto` resolved from
    stop: Conflict | None = None  # the patch, author and paths of a conflict
    would_conflict: list[str] = field(default_factory=list)  # later patches, with their paths
    resolved: list[str] = field(default_factory=list)  # "FILE: why", by recorded resolutions
    why: list[dict[str, Any]] = field(default_factory=list)  # replay.why.explain: roots first
    failing: list[dict[str, str]] = field(default_factory=list)  # verdict.triage: per test
    tail: str = ""  # the end of the failing pytest run's output, scrubbed
    time: str = ""  # when the cell ran (ISO 8601, UTC)
    audit: list[str] = field(default_factory=list)  # replay.audit: what clean patches break
    furthest: str = ""  # a conflict: "up to #A (k of n commits); blocked by #B on NNNN"
    furthest_onto: str = ""  # the furthest commit the series replays onto, short of the target
    furthest_head: str = ""  # the series on it, validated (furthest_validate), the PR's
    furthest_validate: str = ""  # passed | failed | cached passed | error


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
    token_env: str | None = None  # default: $GH_TOKEN, then $GITHUB_TOKEN (forge.py)
    max_wait: float = forgemod.DEFAULT_MAX_WAIT
    open_limit: int = 0  # at most this many PRs and issues opened per run; 0: no limit
    dashboard: bool = False  # keep the dashboard issue (steer.py)

    @property
    def enabled(self) -> bool:
        return self.open_pr or self.track_issues or self.dashboard

    @property
    def access(self) -> forgemod.Access:
        return forgemod.Access(self.api_url, self.token_env, self.max_wait)


@dataclass
class Action:
    series: str
    target: str
    ref: str
    kind: str  # pr | issue
    action: str  # opened | updated | closed | unchanged | skipped | failed | waiting | would-...
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
