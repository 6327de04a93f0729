"""`carry trailers NAME --signoff`: sign off, as the user running carry, the patches that user
authored, and write the result as the next version of the series (`versions.write_next`: the
old version tagged, the new one swapped in whole). The signer is git's own committer identity
(`user.name`, `user.email`) of `--repo`, else of the series checkout, else git's global one.
What `series.dco.sign` cannot sign (another author's patch, a patch the policy keeps
unamended) is listed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from carry.base.errors import CarryError
from carry.git import Ident, Repo, user_ident
from carry.series import dco, locks, versions
from carry.series import store as seriesmod


@dataclass
class SignoffResult:
    series: str
    signer: str
    dry_run: bool
    signoff: bool  # False: only list what each patch has and needs
    patches: list[dco.Plan] = field(default_factory=list)
    version: int = 0
    tag: str = ""
    changed: bool = False
    commit: str = ""  # the git command that commits the new version, when there is one
    json_extra: ClassVar[tuple[str, ...]] = ("missing",)

    @property
    def missing(self) -> list[dco.Plan]:
        """Patches that will still lack their author's sign-off."""
        return [p for p in self.patches if p.action in ("others", "excepted")]


def signer(series: seriesmod.Series, repo: Repo | None) -> Ident:
    """Who signs: git's committer identity of `repo`, else of the series checkout, else (the
    series in no checkout) the one git has from GIT_COMMITTER_* and the global config."""
    own = repo or versions.toolkit_repo(series)
    where = own.path if own is not None else series.root
    try:
        me = own.committer_ident() if own is not None else user_ident(series.root)
    except CarryError as exc:
        raise CarryError(f"no identity to sign off with in {where}: {exc.line()}",
                         hint="git config --global user.name 'Your Name'; git config "
                              "--global user.email you@example.com") from None
    finally:
        if repo is None and own is not None:
            own.close()
    if not dco.well_formed(me.email):  # an empty email would match an author's empty one
        raise CarryError(f"cannot sign off as {me.name} <{me.email}>: not an email address",
                         hint="git config user.email you@example.com")
    return me


def run(root: Path, name: str, repo: Repo | None, signoff: bool, force: bool,
        dry_run: bool) -> SignoffResult:
    with locks.series_lock(root, name):
        series = seriesmod.find(root, name)
        if not series.patches():
            raise CarryError(f"series {name} has no patches", hint="run carry import")
        me = signer(series, repo)
        plans, files = dco.sign(series, me, force)
        result = SignoffResult(name, f"{me.name} <{me.email}>", dry_run, signoff,
                               version=series.manifest.version)
        if not signoff:  # a listing: what each patch has, and what it needs
            result.patches = [p if p.action != "added" else dco.Plan(
                p.number, p.file, p.author, p.email, "yours", "yours to sign: --signoff")
                for p in plans]
            return result
        result.patches = plans
        added = [p for p in plans if p.action == "added"]
        if not added or dry_run:
            return result
        summary = (f"Signed-off-by {me.name} <{me.email}> added to "
                   + ", ".join(f"{p.number:04d}" for p in added))
        result.version, result.tag = versions.write_next(series.root, series.manifest, files,
                                                         summary)
        result.changed = True
        result.commit = versions.commit_command(series.root, result.version)
        return result
