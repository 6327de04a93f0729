"""`carry check`: audit authorship and trailers against the manifest's policy, and optionally
against the original commits."""

from __future__ import annotations

from dataclasses import dataclass, field

from carry.git import NULL_SHA, Repo
from carry.series import patches as patchmod
from carry.series import trailers as trailermod
from carry.series.linearized import Linearized
from carry.series.store import Policy, Series


@dataclass
class Finding:
    kind: str  # violation | exception | difference | note
    message: str


@dataclass
class PatchReport:
    number: int
    file: str
    subject: str = ""
    author: str = ""
    email: str = ""
    date: str = ""
    origin: str = ""
    trailers: list[dict[str, str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(f.kind in ("violation", "difference") for f in self.findings)


@dataclass
class CheckReport:
    series: str
    version: int
    status: str  # ok | violations | pending
    policy: dict[str, object]
    patches: list[PatchReport]
    expected: list[dict[str, object]]
    findings: list[Finding]

    @property
    def exit_code(self) -> int:
        return 1 if self.status == "violations" else 0


def policy_findings(patch: patchmod.Patch, policy: Policy) -> list[Finding]:
    found: list[Finding] = []
    tlist = patch.trailers
    for key in policy.required:
        present = trailermod.find(tlist, key)
        exc = policy.exception_for(patch.number, key)
        if not present and exc:
            found.append(Finding("exception", f"no {key}: {exc.reason}"))
        elif not present:
            found.append(Finding("violation", f"missing required trailer {key}"))
    for t in tlist:
        if any(t.is_(k) for k in policy.person_trailers) and not trailermod.is_person(t.value):
            found.append(Finding("violation", f"malformed {t.key}: {t.value!r} is not "
                                              "'Name <email>'"))
        elif not t.value.strip():
            found.append(Finding("violation", f"empty trailer {t.key}"))
    if patch.verbatim:
        found.append(Finding("note", "exact " + " and ".join(patch.verbatim)
                             + " kept in X-Carry headers (git am alone would alter it)"))
    return found


def expectation_findings(series: Series, report: PatchReport) -> list[Finding]:
    found = []
    for exp in series.manifest.expected:
        if exp.patch != report.number:
            continue
        if exp.author != report.author:
            found.append(Finding("violation", f"expected author {exp.author!r}, "
                                              f"got {report.author!r}"))
        have = {(t["key"].lower(), t["value"]) for t in report.trailers}
        for want in exp.trailers:
            key, sep, value = (s.strip() for s in want.partition(":"))
            if not any(k == key.lower() and (not sep or v == value) for k, v in have):
                found.append(Finding("violation", f"expected trailer {want!r} is absent"))
    return found


def originals(repo: Repo, plist: list[patchmod.Patch]) -> dict[int, tuple[str | None, str]]:
    """The commit each patch should be compared with, and why, by patch number.

    That is the commit the patch names, while a ref still reaches it. Once no ref does (it was
    amended, or the branch rebased), it is the reachable commit that replaced it: the newest one
    with the same author email and subject, so that the comparison shows what changed.
    carry's own refs (refs/carry/*) hold replayed copies and are not searched.
    """
    reachable: set[str] = set()
    newest: dict[tuple[str, str], str] = {}
    for sha, email, subject in repo.all_commits():
        reachable.add(sha)
        newest.setdefault((email, subject), sha)
    named = {p.origin for p in plist}
    out: dict[int, tuple[str | None, str]] = {}
    for p in plist:
        if not p.origin or p.origin == NULL_SHA:
            out[p.number] = (None, "the patch names no original commit")
            continue
        if p.origin in reachable:
            out[p.number] = (p.origin, "")
            continue
        exists = repo.try_rev_parse(p.origin) is not None
        subject = " ".join(p.message.decode("utf-8", "replace").split("\n\n", 1)[0].split())
        new = newest.get((p.author.email, subject))
        if new and new not in named:
            out[p.number] = (new, f"original commit {p.origin[:12]} is no longer on any branch"
                                  f"; compared with {new[:12]}, which replaced it")
        elif exists:
            out[p.number] = (p.origin, f"original commit {p.origin[:12]} is no longer on any "
                                       "branch")
        else:
            out[p.number] = (None, f"original commit {p.origin[:12]} is not in {repo.path}")
    return out


def against_repo(patch: patchmod.Patch, repo: Repo, patch_ids: dict[str, str],
                 original: tuple[str | None, str], linear: Linearized | None = None
                 ) -> list[Finding]:
    sha, why = original
    found = [Finding("difference", why)] if why else []
    if sha is None:
        return found
    commit = repo.read_commit(sha)
    if (commit.author.name, commit.author.email) != (patch.author.name, patch.author.email):
        found.append(Finding("difference", f"author: commit has {commit.author.name} "
                                           f"<{commit.author.email}>"))
    if commit.author.date != patch.author.date:
        found.append(Finding("difference", f"author date: commit has {commit.author.date}, "
                                           f"patch has {patch.author.date}"))
    if commit.message != patch.message:
        if trailermod.parse(commit.message) != patch.trailers:
            found.append(Finding("difference", "trailers differ from the original commit"))
        found.append(Finding("difference", "message differs from the original commit"))
    pid_patch = patch_ids.get(f"patch:{patch.file}")
    pid_commit = patch_ids.get(commit.sha)
    if pid_patch == pid_commit:
        return found
    if linear and linear.commit == commit.sha and linear.patch_id == pid_patch:
        found.append(Finding("note", f"linearized: {linear.why}"))
    else:
        found.append(Finding("difference", "patch-id differs from the original commit"
                             + (f" (linearized at import: {linear.why}; the patch changed "
                                "since)" if linear and linear.commit == commit.sha else "")))
    return found


def _patch_ids(repo: Repo, plist: list[patchmod.Patch], commits: list[str]) -> dict[str, str]:
    """Both sides' patch-ids in two processes, whatever the number of patches."""
    ids = {f"patch:{p.file}": pid
           for p, pid in zip(plist, repo.diff_patch_ids([p.diff for p in plist]), strict=True)
           if pid}
    if commits:
        # The diff options of the import, so that only real changes give other ids.
        ids.update({commit: pid for pid, commit in repo.log_patch_ids(commits, no_walk=True)})
    return ids


def dco_findings(series: Series, reports: list[PatchReport]) -> list[Finding]:
    """`--dco`: a violation on each patch without its author's sign-off, and one line for
    the series that names them with their authors (who alone can sign)."""
    from carry.series import dco

    gaps = dco.unsigned(series)
    by_number = {r.number: r for r in reports}
    for u in gaps:
        why = f" (policy exception: {u.exception})" if u.exception else ""
        by_number[u.number].findings.append(Finding(
            "violation", f"DCO: no Signed-off-by from its author {u.author} <{u.email}>{why}"))
    if not gaps:
        return [Finding("note", "DCO: every patch is signed off by its author")]
    shown = ", ".join(u.who() for u in gaps[:3]) + (
        f" and {len(gaps) - 3} more (each is marked below)" if len(gaps) > 3 else "")
    return [Finding("violation", f"DCO: {len(gaps)} patch(es) lack their author's sign-off: "
                    f"{shown}; each author signs their own: carry trailers {series.name} "
                    "--signoff")]


def run(series: Series, against: Repo | None = None, dco: bool = False) -> CheckReport:
    m = series.manifest
    policy: dict[str, object] = {
        "required": m.policy.required,
        "ai_attribution": m.policy.ai_attribution,
        "exceptions": [vars(e) for e in m.policy.exceptions],
    }
    expected = [vars(e) for e in m.expected]
    files = series.patches()
    reports: list[PatchReport] = []
    findings: list[Finding] = []
    if not files:
        status = "pending" if m.expected else "ok"
        if m.expected:
            findings.append(Finding("note", f"patches not imported yet: {len(m.expected)} "
                                            "expected"))
        return CheckReport(m.name, m.version, status, policy, [], expected, findings)
    loaded: list[patchmod.Patch] = []
    for pf in files:
        report = PatchReport(pf.number, pf.name)
        reports.append(report)
        try:
            patch = patchmod.load(pf.path, pf.number)
        except patchmod.MissingAuthor as exc:
            report.findings.append(Finding("violation", f"no author: {exc}"))
            continue
        # Any other unreadable or malformed patch is bad input (exit 2), as in apply and
        # rebase: an audit of a file that is not a whole patch would vouch for nothing.
        loaded.append(patch)
        report.subject, report.origin = patch.subject, patch.origin
        report.author, report.email, report.date = (patch.author.name, patch.author.email,
                                                    patch.author.date)
        report.trailers = [{"key": t.key, "value": t.value} for t in patch.trailers]
        report.findings += policy_findings(patch, m.policy)
        report.findings += expectation_findings(series, report)
    if against is not None:
        targets = originals(against, loaded)
        ids = _patch_ids(against, loaded, sorted({s for s, _ in targets.values() if s}))
        by_number = {r.number: r for r in reports}
        linear = {x.patch: x for x in m.linearized}
        for patch in loaded:
            by_number[patch.number].findings += against_repo(
                patch, against, ids, targets[patch.number], linear.get(patch.file))
    if dco:
        findings += dco_findings(series, reports)
    bad = any(not r.ok for r in reports) or any(f.kind == "violation" for f in findings)
    return CheckReport(m.name, m.version, "violations" if bad else "ok", policy, reports,
                       expected, findings)
