"""The PR description: prose from `cover.md`, everything else generated from the manifest,
the patches' trailers and the last validation report, so the Test Plan shows the commands
exactly as they ran and the Test Result shows the counts they produced."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from carry import patches as patchmod
from carry.series import Series

MARKER = "<!-- carry:series={names} -->"
MARKER_RE = re.compile(r"<!-- carry:series=([\w.,-]+) -->")


@dataclass(frozen=True)
class Body:
    title: str
    text: str


def marker(names: list[str]) -> str:
    return MARKER.format(names=",".join(names))


def marked_series(body: str) -> list[str]:
    """The series named by carry's marker, read only where carry writes it (the whole first
    line): a body that quotes the marker text further down is not carry's."""
    first = (body or "").split("\n", 1)[0].rstrip("\r")
    m = MARKER_RE.fullmatch(first)
    return m.group(1).split(",") if m else []


def _cover_sections(cover: str) -> str:
    """cover.md without its top-level title: the PR has its own."""
    lines = cover.strip().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join(lines).strip()


def _ai_section(plist: list[patchmod.Patch], key: str) -> str:
    tools: dict[str, list[str]] = {}
    unattributed = []
    for p in plist:
        found = [t.value for t in p.trailers if t.is_(key) or t.is_("Co-authored-by")
                 and "noreply" in t.value.lower()]
        for value in found:
            tools.setdefault(value, []).append(f"{p.number:04d}")
        if not found:
            unattributed.append(f"{p.number:04d}")
    if not tools:
        return "No patch carries an AI attribution trailer."
    lines = [f"- {tool}: patches {', '.join(nums)}" for tool, nums in tools.items()]
    if unattributed:
        lines.append(f"- no `{key}:` trailer: patches {', '.join(unattributed)}")
    return "\n".join(lines)


def _test_plan(report: dict[str, Any] | None, series: Series) -> str:
    if report is None:
        plan = series.manifest.test
        return ("Not validated yet. The plan runs the suites "
                + ", ".join(f"`{s}`" for s in plan.suites) + f" in `{plan.image or 'local'}`.")
    lines = []
    if report.get("image"):
        lines.append(f"Container image: `{report['image']}` (engine {report.get('engine')}).")
    lines.append("")
    lines.append("```")
    lines += [s["command"] for s in report.get("steps", []) if s.get("command")]
    lines.append("```")
    return "\n".join(lines).strip()


def _test_result(report: dict[str, Any] | None) -> str:
    if report is None:
        return "No validation report was given."
    lines = [f"- {report.get('summary', '')}"]
    for s in report.get("steps", []):
        note = f" ({s['note']})" if s.get("note") else ""
        lines.append(f"- {s['kind']} {s['name']}: {s['status']}{note}")
    base = report.get("baseline")
    if base:
        lines.append(f"- baseline on the unfixed base: {base.get('summary', '')}")
    lines.append(f"- validated head `{report.get('head', '')[:12]}` on "
                 f"`{report.get('onto_ref', '')}` ({report.get('onto', '')[:12]})")
    return "\n".join(lines)


def render(series_list: list[Series], report: dict[str, Any] | None = None,
           title: str | None = None) -> Body:
    names = [s.name for s in series_list]
    plists = {s.name: [patchmod.load(p.path, p.number) for p in s.patches()]
              for s in series_list}
    head_title = title or (series_list[0].manifest.title if len(series_list) == 1
                           else "Consolidated: " + "; ".join(s.manifest.title
                                                             for s in series_list))
    parts = [marker(names)]
    for s in series_list:
        if len(series_list) > 1:
            parts.append(f"## {s.manifest.title}")
        parts.append(_cover_sections(s.cover) or s.manifest.title)
        commits = "\n".join(f"- `{p.file}` {p.subject} ({p.author.name})"
                            for p in plists[s.name])
        parts.append(f"### Commits\n\n{commits}")
    all_patches = [p for s in series_list for p in plists[s.name]]
    key = series_list[0].manifest.policy.ai_attribution
    parts.append("## Test Plan\n\n" + _test_plan(report, series_list[0]))
    parts.append("## Test Result\n\n" + _test_result(report))
    parts.append("## AI assistance\n\n" + _ai_section(all_patches, key))
    passed = report is not None and report.get("status") == "passed"
    checklist = [
        ("The purpose and the distinction from related PRs are described above.", True),
        ("Test commands and current results are included.", passed),
        ("Every commit keeps its original author, date and trailers.", True),
    ]
    parts.append("## Checklist\n\n" + "\n".join(f"- [{'x' if ok else ' '}] {text}"
                                                 for text, ok in checklist))
    return Body(head_title, "\n\n".join(parts).strip() + "\n")
