"""`carry/...` branches belong to carry: it moves one only if it still holds what carry last
wrote there, so a commit someone added on top is never overwritten by a re-run."""

from __future__ import annotations

from carry.errors import CarryError
from carry.git import Repo


def check_ours(repo: Repo, ref: str, head: str) -> None:
    """Refuse when the newest reflog entry of `ref` is not carry's, or names another commit.
    A repository that keeps no reflog (bare, or logs off) cannot tell, and is trusted."""
    if not ref.startswith("refs/heads/carry/"):
        return
    proc = repo.run("reflog", "show", "-1", "--format=%H %gs", ref, "--", check=False)
    last = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode != 0 or not last:
        return
    sha, _, message = last.partition(" ")
    if sha == head and message.startswith("carry"):
        return
    short = ref.removeprefix("refs/heads/")
    raise CarryError(f"{short} is at {head[:12]}, not where carry last wrote it ({message!r}); "
                     "carry will not overwrite it",
                     hint=f"keep it under another name (git branch -m {short} NEW) or pass "
                          f"--branch; `git branch -D {short}` drops it")
