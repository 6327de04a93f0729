"""The Developer Certificate of Origin, as vLLM's DCO app checks it: every commit carries a
`Signed-off-by:` whose email is its author's. A sign-off certifies the signer's own right to
submit the change, so carry adds one only in the name of the user running it, to the patches
that user authored; every other patch is listed by its author, who alone can sign it.

`carry check --dco` and `carry pr` (for a PR to the manifest's upstream) run `unsigned`;
`carry trailers --signoff` runs `sign`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from carry.base.errors import CarryError
from carry.git import Ident
from carry.series import patches as patchmod
from carry.series import trailers
from carry.series.store import Series

KEY = "Signed-off-by"
_EMAIL = re.compile(r"<([^<>\s]+)>\s*$")


@dataclass(frozen=True)
class Unsigned:
    """A patch without its author's sign-off; `exception` is the policy's reason, if any."""

    number: int
    file: str
    author: str
    email: str
    exception: str = ""

    def who(self) -> str:
        return f"{self.file} ({self.author} <{self.email}>)"


_WELL_FORMED = re.compile(r"[^\s<>@]+@[^\s<>@]+")
_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _ascii_lower(text: str) -> str:
    """Only A-Z lowered: `str.lower`/`casefold` make the Kelvin sign `k` and `ß` `ss`, so
    another person's address would pass for the author's."""
    return text.translate(_LOWER)


def well_formed(email: str) -> bool:
    return bool(_WELL_FORMED.fullmatch(email))


def same_email(a: str, b: str) -> bool:
    """Whether two emails name one person: equal but for ASCII case; an empty or malformed
    email (no `@`, spaces, angle brackets) matches nothing, not even itself."""
    return well_formed(a) and well_formed(b) and _ascii_lower(a) == _ascii_lower(b)


def signed(patch: patchmod.Patch) -> bool:
    """Whether a `Signed-off-by` in the trailer block names the patch's author's email."""
    want = patch.author.email
    return any((m := _EMAIL.search(t.value)) and same_email(m.group(1), want)
               for t in trailers.find(patch.trailers, KEY))


def unsigned(series: Series) -> list[Unsigned]:
    out = []
    for pf in series.patches():
        patch = patchmod.load(pf.path, pf.number)
        if not signed(patch):
            exc = series.manifest.policy.exception_for(pf.number, KEY)
            out.append(Unsigned(pf.number, pf.name, patch.author.name, patch.author.email,
                                exc.reason if exc else ""))
    return out


def upstream_bound(series_list: list[Series], forge_repo: str) -> bool:
    """A PR to the manifest's upstream (vLLM), where the DCO check runs."""
    return any(s.manifest.upstream.repo and
               _ascii_lower(s.manifest.upstream.repo) == _ascii_lower(forge_repo)
               for s in series_list)


def refuse_unsigned(series_list: list[Series], forge_repo: str) -> None:
    """For a PR to upstream: refuse, in one line, while a patch lacks its author's sign-off."""
    if not upstream_bound(series_list, forge_repo):
        return
    gaps = [f"{s.name}/{u.who()}" for s in series_list for u in unsigned(s)]
    if gaps:
        shown = ", ".join(gaps[:5]) + (f" and {len(gaps) - 5} more" if len(gaps) > 5 else "")
        raise CarryError(f"{forge_repo} checks DCO: {len(gaps)} patch(es) lack their author's "
                         f"Signed-off-by: {shown} (carry check --dco lists each)",
                         hint="each author signs their own (carry trailers "
                              f"{' / '.join(s.name for s in series_list)} --signoff); "
                              "or pass --allow-no-dco")


@dataclass(frozen=True)
class Plan:
    """What signing off does to one patch: `action` is added, signed (already), others (its
    author must sign it), or excepted (the policy keeps it unamended; --force overrides)."""

    number: int
    file: str
    author: str
    email: str
    action: str
    note: str = ""


def sign(series: Series, me: Ident, force: bool = False) -> tuple[list[Plan], dict[str, bytes]]:
    """Add `me`'s sign-off to the patches `me` authored that lack it; returns a plan per patch
    and every patch file's bytes after (changed or not), by file name."""
    line = f"{KEY}: {me.name} <{me.email}>".encode()
    plans: list[Plan] = []
    files: dict[str, bytes] = {}
    for pf in series.patches():
        data = files[pf.name] = pf.read()
        patch = patchmod.parse(pf.number, pf.name, data)
        a = patch.author
        exc = series.manifest.policy.exception_for(pf.number, KEY)
        if signed(patch):
            plans.append(Plan(pf.number, pf.name, a.name, a.email, "signed"))
        elif not same_email(a.email, me.email):
            plans.append(Plan(pf.number, pf.name, a.name, a.email, "others",
                              f"only {a.name} can add it"))
        elif exc and not force:
            plans.append(Plan(pf.number, pf.name, a.name, a.email, "excepted",
                              f"policy exception: {exc.reason}"))
        else:
            new = trailers.append(patch.message, line)
            files[pf.name] = patchmod.with_message(data, patch, new)
            plans.append(Plan(pf.number, pf.name, a.name, a.email, "added",
                              line.decode() + (" (--force over the policy exception)"
                                               if exc else "")))
    return plans, files
