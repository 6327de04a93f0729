"""The PR description, in the shape of #643's: Purpose, Related work, Test Plan, Test Result,
AI assistance and a checklist, one section per series when a PR carries several.

Prose comes from each series' `cover.md`; everything else is generated from facts: the
manifest's provenance (with each PR's role), the patches' trailers against the policy, and the
series' own validation report, so the Test Plan shows the commands exactly as they ran (with
no host path) and the Test Result shows the counts they produced. The checklist is computed
from the same facts, never asserted.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from carry.publish.text import code
from carry.series import patches as patchmod
from carry.series.store import Series
from carry.validate.results import Status

MARKER = "<!-- carry:series={names} -->"
MARKER_RE = re.compile(r"<!-- carry:series=([\w.,-]+) -->")
Report = dict[str, Any]

_ROLE_WORDS = {
    "origin": "the original proposal of this work",
    "superseded": "superseded",
    "consolidated": "the consolidated PR",
    "upstream-equivalent": "the upstream form of this work",
    "related": "related, not a duplicate",
}


@dataclass(frozen=True)
class Body:
    title: str
    text: str


@dataclass(frozen=True)
class Pushed:
    """The commits the PR carries: its head, how many commits it adds on `base`, and which
    of them carries each patch (`name/file` -> commit, by patch-id). The body names these,
    never only the commit a validation ran on, which a later rebase may have replaced."""

    head: str
    base: str
    count: int
    commits: dict[str, str]
    stale: tuple[str, ...] = ()  # patches whose commit's message is not the series' own


def marker(names: list[str]) -> str:
    return MARKER.format(names=",".join(names))


def marked_series(body: str) -> list[str]:
    """The series named by carry's marker, read only where carry writes it (the whole first
    line): a body that quotes the marker text further down is not carry's."""
    first = (body or "").split("\n", 1)[0].rstrip("\r")
    m = MARKER_RE.fullmatch(first)
    return m.group(1).split(",") if m else []


def cover_sections(cover: str) -> dict[str, str]:
    """cover.md by `## ` heading (lower-cased); text before the first one is "purpose". The
    top-level title goes: the PR has its own."""
    out: dict[str, list[str]] = {"purpose": []}
    current = "purpose"
    for line in cover.strip().splitlines():
        if line.startswith("# "):
            continue
        if line.startswith("## "):
            current = line[3:].strip().lower()
            out.setdefault(current, [])
            continue
        out[current].append(line)
    return {k: "\n".join(v).strip() for k, v in out.items() if "\n".join(v).strip()}


def _related(series: Series, prose: str) -> str:
    lines = []
    for p in series.manifest.provenance:
        state = "" if p.merged_as and p.state == "merged" else p.state  # said below
        facts = [f"role `{p.role}`" + "".join(f", {x}" for x in
                                              (state, "draft" if p.draft else "") if x)]
        if p.patches:
            facts.append("patches " + ", ".join(f"{n:04d}" for n in p.patches))
        if p.merged_as:
            facts.append(f"merged as `{p.merged_as}`" + (f" into `{p.into}`" if p.into else ""))
        if p.superseded_by:
            facts.append(f"superseded by {p.superseded_by}")
        title = f" \"{p.title}\"" if p.title else ""
        said = p.note or _ROLE_WORDS.get(p.role, "")
        note = f" {said[0].upper()}{said[1:].rstrip('.')}." if said else ""
        lines.append(f"- {p.pr}{title}: {'; '.join(facts)}.{note}")
    parts = ["\n".join(lines)] if lines else []
    if prose:
        parts.append(prose)
    return "\n\n".join(parts) or "No related PR is recorded in the manifest's provenance."


def _command(step: dict[str, Any], report: Report) -> str:
    """A step's command as a reader can run it in their checkout: no JUnit path of the run
    directory, and the local interpreter named as `python`, not by its host path."""
    try:
        argv = shlex.split(step.get("command", ""))
    except ValueError:
        return str(step.get("command", ""))
    argv = [a for a in argv if not a.startswith("--junitxml=")]
    if report.get("engine") == "local" and argv and argv[0] == report.get("python"):
        argv[0] = "python"
    return _wrap(argv)


def _wrap(argv: list[str], width: int = 80) -> str:
    """One line when it fits; else #643's layout: the command, then one path per line."""
    flat = shlex.join(argv)
    cut = len(argv)
    while cut > 1 and not argv[cut - 1].startswith("-") and (
            "/" in argv[cut - 1] or argv[cut - 1].endswith(".py")):
        cut -= 1
    if len(flat) <= width or len(argv) - cut < 2:
        return flat
    return " \\\n  ".join([shlex.join(argv[:cut]), *(shlex.quote(a) for a in argv[cut:])])


def _test_plan(series: Series, report: Report | None) -> str:
    plan = series.manifest.test
    if report is None:
        where = (f"in the container `{plan.image}`" if plan.image
                 else "with the local interpreter")
        return ("Not validated yet on this tree. The plan runs "
                + (", ".join(f"`{s}`" for s in plan.suites) or "no pytest suite")
                + f" {where}.")
    steps = report.get("steps", [])
    out = []
    if report.get("image"):
        out.append(f"The commands ran in the container image `{report['image']}` "
                   f"(engine {report.get('engine')}), with its `{report.get('python')}`.")
    else:
        out.append(f"The commands ran with no container (engine {report.get('engine')}), "
                   "with the local `python`; no image digest applies.")
    if plan.requirements:
        out.append("Extra requirements, installed before pytest because the environment does "
                   "not include them: " + ", ".join(f"`{r}`" for r in plan.requirements) + ".")
    commands = [_command(s, report) for s in steps
                if s.get("kind") in ("install", "pytest", "hook") and s.get("command")]
    if commands:
        out.append("```\n" + "\n".join(commands) + "\n```")
    if any(s.get("kind") == "diff-check" for s in steps):
        out.append("Then `git diff --check` over the series' range.")
    return "\n\n".join(out)


def _counts(s: dict[str, Any]) -> str:
    parts = [f"{s[k]} {k}" for k in ("passed", "failed", "errors", "skipped") if s.get(k)]
    return ", ".join(parts) or "no tests"


def _step_line(step: dict[str, Any]) -> str:
    kind, name = step.get("kind", ""), str(step.get("name", ""))
    what = {"install": "Installing the extra requirements",
            "pytest": "The pytest command",
            "diff-check": "`git diff --check`",
            "baseline": "The baseline run on the unfixed base"}.get(kind, "")
    if kind == "hook":
        label = name.removeprefix("hook ")
        what = (f"Every pre-commit hook{label.removeprefix('all hooks')}"
                if label.startswith("all hooks") else f"The pre-commit hook `{label}`")
    note = f" ({step['note']})" if step.get("note") else ""
    return f"- {what or name}: {step.get('status')}{note}."


def _baseline(base: dict[str, Any]) -> list[str]:
    out = [f"Baseline, the series' tests on the unfixed base: {base.get('summary', '')}."]
    run = base.get("run") or {}
    failed = [f"- `{f['test']}` {f['kind']}" + (f": {f['message']}" if f.get("message") else "")
              for f in run.get("failures", [])]
    if failed:
        out.append("\n".join(failed))
    if base.get("proven"):
        n = len(base["proven"])
        out.append(f"{n} test{'s' if n != 1 else ''} of the series fail without the fix and "
                   "pass with it.")
    if base.get("note"):
        out.append(str(base["note"]))
    return out


def _validated(report: Report, pushed: Pushed | None) -> str:
    """Which commit the validation ran on, and that it is this PR's tree: the report binds a
    tree (pr.reports_for), so the head it names may be an older commit of the same tree."""
    ran = str(report.get("head", ""))[:12]
    onto = f" on `{report.get('onto_ref', '')}`"
    if pushed is None or not ran or pushed.head.startswith(ran):
        return f"Validated head `{ran}`{onto}"
    return (f"Validated tree `{str(report.get('head_tree', ''))[:12]}`{onto}, as commit "
            f"`{ran}`: the same tree as this PR's head `{pushed.head[:12]}`")


def _test_result(report: Report | None, pushed: Pushed | None = None) -> str:
    if report is None:
        return "No validation report of this tree was given."
    out = []
    if report.get("status") != Status.PASSED:
        out.append(f"**This validation {report.get('status')}**, and the PR is published "
                   "with `--allow-failed`.")
    base = report.get("baseline")
    if base:
        out += _baseline(base)
    out.append(f"Current head: {report.get('summary', '')}.")
    tests = report.get("tests") or {}
    lines = [f"- `{s['suite']}`: {_counts(s)}" for s in tests.get("suites", [])]
    lines += [f"- failing: `{f['test']}`" + (f": {f['message']}" if f.get("message") else "")
              for f in tests.get("failures", [])]
    lines += [_step_line(s) for s in report.get("steps", []) if s.get("kind") != "pytest"]
    if lines:
        out.append("\n".join(lines))
    cached = " (answered from the results cache)" if report.get("cached") else ""
    out.append(f"{_validated(report, pushed)}{cached}.")
    return "\n\n".join(out)


def _nums(nums: list[int]) -> str:
    return ("patch " if len(nums) == 1 else "patches ") + ", ".join(f"{n:04d}" for n in nums)


# Names of AI tools as they sign a `Co-authored-by:` (GitHub's own co-author trailer); an
# email says nothing (a person's GitHub address is a noreply one too).
AI_NAMES = ("claude", "codex", "copilot", "chatgpt", "openai", "gemini", "cursor", "devin",
            "aider", "amazon q", "codewhisperer", "tabnine", "windsurf", "jules")
_AI_NAME = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in AI_NAMES) + r")\b", re.I)


def ai_trailers(key: str, p: patchmod.Patch) -> list[str]:
    """The trailers of `p` that credit an AI tool, each as written: the policy's
    `ai_attribution` key, and a `Co-authored-by:` whose name (not email) is a known AI's."""
    out = []
    for t in p.trailers:
        name = t.value.split("<", 1)[0]
        if t.is_(key) or t.is_("Co-authored-by") and _AI_NAME.search(name[:200]):
            out.append(f"{t.key}: {t.value}")
    return out


def _ai(series: Series, plist: list[patchmod.Patch]) -> str:
    policy = series.manifest.policy
    key = policy.ai_attribution
    tools: dict[str, list[int]] = {}
    without = []
    for p in plist:
        found = ai_trailers(key, p)
        for line in found:
            tools.setdefault(line, []).append(p.number)
        if not found:
            without.append(p.number)
    out = [f"- {_nums(nums).capitalize()}: {code(line)}." for line, nums in tools.items()]
    if not tools:
        out.append(f"- No patch carries an `{key}:` trailer or an AI tool's "
                   "`Co-authored-by:`.")
    elif without:
        out.append(f"- {_nums(without).capitalize()} credit no AI tool.")
    for exc in policy.exceptions:
        out.append(f"- Policy exception, {_nums([exc.patch])} without "
                   f"{', '.join(f'`{t}:`' for t in exc.trailers)}: {exc.reason}.")
    return "\n".join(out)


def _trailers_ok(series: Series, plist: list[patchmod.Patch]) -> bool:
    policy = series.manifest.policy
    return all(any(t.is_(req) for t in p.trailers) or policy.exception_for(p.number, req)
               for p in plist for req in policy.required)


def _checklist(series_list: list[Series], reports: dict[str, Report | None],
               plists: dict[str, list[patchmod.Patch]], pushed: Pushed | None = None) -> str:
    def described(s: Series) -> bool:
        cover = cover_sections(s.cover)
        related = [p for p in s.manifest.provenance if p.role == "related"]
        return bool(cover.get("purpose")) and all(p.note or "related work" in cover
                                                  for p in related)

    tested = [reports.get(s.name) for s in series_list]
    items = [
        ("The purpose and the distinction from related PRs are described above.",
         all(described(s) for s in series_list)),
        ("Test commands and current results are included.",
         all(r is not None and r.get("status") == Status.PASSED for r in tested)),
        ("The tests ran in an image pinned by digest.",
         all(r is not None and "@sha256:" in str(r.get("image", "")) for r in tested)),
        ("Every commit carries the trailers the policy requires, or a named exception.",
         all(_trailers_ok(s, plists[s.name]) for s in series_list)
         and not (pushed and pushed.stale)),  # the commits pushed, not only the series
    ]
    return "\n".join(f"- [{'x' if ok else ' '}] {text}" for text, ok in items)


def _commit_of(series: Series, p: patchmod.Patch, pushed: Pushed | None) -> str:
    sha = pushed.commits.get(f"{series.name}/{p.file}", "") if pushed else ""
    return f"`{sha[:12]}` " if sha else ""


def _carried(pushed: Pushed) -> str:
    n = pushed.count
    return (f"This PR's head is `{pushed.head[:12]}`: {n} commit{'s' if n != 1 else ''} on "
            f"`{pushed.base}`.")


def _replayed(file: str, report: Report | None) -> str:
    """What the validated replay says of one patch beyond "applied": a resolution (recorded,
    or carry's own, to review) and what the audit found it breaks at the target."""
    if not report:
        return ""
    onto = f"; on `{report.get('onto_ref', '')}`: "
    said = [str(line).split(": ", 1)[1] for line in report.get("resolved", [])
            if str(line).startswith(f"{file}: ")]
    said += [f"audit: {line}" for line in report.get("audit", [])
             if str(line).startswith(f"{file[:4]} ")]
    return onto + "; ".join(said) if said else ""


def _section(series: Series, report: Report | None, plist: list[patchmod.Patch],
             h: str, pushed: Pushed | None = None) -> list[str]:
    cover = cover_sections(series.cover)
    parts = [f"{h} Purpose\n\n" + (cover.get("purpose") or series.manifest.title)]
    for heading, text in cover.items():
        if heading not in ("purpose", "related work"):
            parts.append(f"{h} {heading[0].upper()}{heading[1:]}\n\n{text}")
    commits = "\n".join(f"- {_commit_of(series, p, pushed)}`{p.file}` {p.subject} "
                        f"({p.author.name})" + _replayed(p.file, report) for p in plist)
    carried = f"{_carried(pushed)}\n\n" if pushed else ""
    parts.append(f"{h} Commits\n\n{carried}{commits}")
    parts.append(f"{h} Related work\n\n" + _related(series, cover.get("related work", "")))
    parts.append(f"{h} Test Plan\n\n" + _test_plan(series, report))
    parts.append(f"{h} Test Result\n\n" + _test_result(report, pushed))
    parts.append(f"{h} AI assistance\n\n" + _ai(series, plist))
    return parts


def render(series_list: list[Series], reports: dict[str, Report | None] | None = None,
           title: str | None = None, pushed: Pushed | None = None) -> Body:
    reports = reports or {}
    plists = {s.name: [patchmod.load(p.path, p.number) for p in s.patches()]
              for s in series_list}
    several = len(series_list) > 1
    head_title = title or (series_list[0].manifest.title if not several
                           else "Consolidated: " + "; ".join(s.manifest.title
                                                             for s in series_list))
    parts = [marker([s.name for s in series_list])]
    for s in series_list:
        if several:
            parts.append(f"## Series {s.name}: {s.manifest.title}")
        parts += _section(s, reports.get(s.name), plists[s.name], "###" if several else "##",
                          pushed)
    parts.append("## Checklist\n\n" + _checklist(series_list, reports, plists, pushed))
    return Body(head_title, "\n\n".join(parts).strip() + "\n")
