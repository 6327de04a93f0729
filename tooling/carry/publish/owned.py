"""What on GitHub is carry's own. carry finds its PRs and tracking issues by a marker in their
body, but anyone can write that marker: a PR or issue is carry's only when the token's own
account opened it, and a PR only when its head branch lives in the fork itself (carry pushes
there). Anything else that carries the marker is someone else's: carry never pushes to it,
edits it or closes it, and says so in one line.

GitHub logins and repository names are case-insensitive, and so is the comparison.
"""

from __future__ import annotations

from carry.base import notes
from carry.publish import github as forgemod


def same(a: str, b: str) -> bool:
    return bool(a) and a.casefold() == b.casefold()


def pull_is_mine(forge: forgemod.Forge, full_name: str, p: forgemod.PullInfo) -> bool:
    return same(p.author, forge.me()) and same(p.head_repo, full_name)


def issue_is_mine(forge: forgemod.Forge, issue: forgemod.IssueInfo) -> bool:
    return same(issue.author, forge.me())


def split(forge: forgemod.Forge, full_name: str, pulls: list[forgemod.PullInfo]
          ) -> tuple[list[forgemod.PullInfo], list[forgemod.PullInfo]]:
    """(carry's, everybody else's); the token's account is asked for only when needed."""
    mine = [p for p in pulls if pull_is_mine(forge, full_name, p)]
    return mine, [p for p in pulls if p not in mine]


def whose(forge: forgemod.Forge, full_name: str, p: forgemod.PullInfo) -> str:
    """Why `p` is not carry's, in a few words."""
    where = f"from {p.head_repo}" if p.head_repo else "from a deleted fork"
    return (f"opened by {p.author or 'a deleted account'} {where}; carry's PRs are those "
            f"{forge.me()} opens from {full_name}")


def ignore_pull(forge: forgemod.Forge, full_name: str, p: forgemod.PullInfo, what: str) -> None:
    notes.warn(f"ignoring PR {full_name}#{p.number}: it carries {what} but is not carry's "
                f"({whose(forge, full_name, p)})")


def ignore_issue(forge: forgemod.Forge, full_name: str, issue: forgemod.IssueInfo,
                 what: str) -> None:
    notes.warn(f"ignoring issue {full_name}#{issue.number}: it carries {what} but is not "
                f"carry's (opened by {issue.author or 'a deleted account'}; carry's issues "
                f"are those {forge.me()} opens)")
