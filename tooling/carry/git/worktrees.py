"""Worktrees: the only place carry writes a working tree is a conflict (for a human to
resolve) or a validation checkout, each in a folder of its own, never the user's."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Self

from carry.git.base import COMMIT_ID, EOO, Base, GitError, complaint

MARK = "carry: made by carry; removed by carry"  # the lock reason of every worktree carry adds


def trash(path: Path) -> Path:
    """Where `worktree_remove` moves carry's worktree at `path` before deleting it."""
    return path.with_name(f".{path.name}.carry-removing")


def staging(path: Path) -> Path:
    """Where `worktree_add` makes carry's worktree for `path` before renaming it there."""
    return path.with_name(f".{path.name}.carry-adding")


class Worktrees(Base):
    def worktree_add(self, path: Path, commit: str) -> Self:
        """A detached worktree at `commit`, its files written by a `reset --hard` that carry
        runs itself: `worktree add` would check out in a child of its own, which a `kill -9`
        of carry leaves writing after `--abort` removed the worktree (and which runs the
        repository's post-checkout hook). `--force` twice: a worktree that a killed `add` left
        registered at `path` under git's "initializing" lock is replaced, not an error (and
        `path` may be an empty folder, the one a shell was left in: `rebase.checkout`).
        `--lock --reason MARK`: git writes carry's mark as the lock from the first moment the
        worktree exists, so `made_by_carry` can tell it from any folder a user put there."""
        import shutil

        self.forget_half_made(path)  # else `add` dies reading its empty commondir
        staged = staging(path)
        if path.exists() or path.is_symlink():  # an empty folder a shell is in: used in place
            staged = path
        elif staged.is_dir() and not staged.is_symlink():
            self.forget_half_made(staged)
            shutil.rmtree(staged, ignore_errors=True)  # what a kill inside an add left
        self._run("worktree", "add", "--no-checkout", "--detach", "--force", "--force",
                  "--lock", "--reason", MARK, EOO, str(staged), commit, tied=True)
        if staged != path:
            self._move_in(staged, path)
        made = type(self)(path.resolve())
        made._run("reset", "--quiet", "--hard", tied=True)
        return made

    def _move_in(self, staged: Path, path: Path) -> None:
        """git's `add` writes a worktree's files one by one with no rename, so a kill among
        them leaves one nothing can prove is carry's: it is made under a name carry gives,
        then its registration is pointed at `path` (one rename of the gitdir file) and the
        folder renamed there. A kill before the folder's rename leaves a registration that
        names a missing folder (forgotten by the next add) and a `.carry-adding` folder."""
        admin = self._admin(staged)
        if admin is None:
            raise GitError(f"git worktree add made no worktree at {staged}")
        tmp = admin / "gitdir.carry-new"
        tmp.write_text(f"{(path.parent.resolve() / path.name / '.git')}\n", "utf-8")
        os.replace(tmp, admin / "gitdir")
        staged.rename(path)

    def worktree_reset(self, path: Path, commit: str) -> Self | None:
        """The existing worktree at `path` moved to `commit` in place, as `git cherry-pick
        --skip` moves its own: HEAD detached there, and a `reset --hard` from the index it
        has, which writes only the files that differ from `commit` or whose stat changed
        (a conflict's unmerged paths, the last cherry-pick's files), not the whole tree.
        None when `path` is not a worktree of this repository: git would look for one in
        the folders above it, and `reset --hard` there would be someone else's."""
        if not self.made_by_carry(path):
            return None
        made = type(self)(path.resolve())
        made._run("update-ref", "--no-deref", "-m", "carry: the next conflict", EOO, "HEAD",
                  commit)
        made._run("reset", "--quiet", "--hard", tied=True)
        return made

    def owns_worktree(self, path: Path) -> bool:
        """Whether `path` is a linked worktree of this repository: its `.git` file names an
        admin folder under our `worktrees/`, and that folder names it back."""
        return self._admin(path) is not None

    def made_by_carry(self, path: Path) -> bool:
        """Whether carry may reset or remove `path`: a worktree of this repository (not a
        symlink to one), locked with carry's own mark, its HEAD detached as carry leaves it
        (a worktree on a branch is the user's). Anything else is somebody's work. A HEAD
        missing or empty is the placeholder git's `add` writes after carry's mark with a
        plain open and write: a kill, or a preemption under load, can land in between."""
        admin = None if path.is_symlink() else self._admin(path)
        if admin is None:
            return False
        try:
            mark = (admin / "locked").read_text("utf-8").strip()
        except (OSError, ValueError):
            return False
        try:
            head = (admin / "HEAD").read_text("utf-8").strip() or "0" * 40
        except FileNotFoundError:  # a kill inside carry's own `add`, before it wrote HEAD
            head = "0" * 40
        except (OSError, ValueError):
            return False
        return mark == MARK and COMMIT_ID.fullmatch(head) is not None

    def _admin(self, path: Path) -> Path | None:
        try:
            line = (path / ".git").read_text("utf-8").strip()
            admin = Path(line.removeprefix("gitdir: ")).resolve()
            back = Path((admin / "gitdir").read_text("utf-8").strip()).resolve()
        except (OSError, ValueError):
            return None
        ours = line.startswith("gitdir: ") and admin.parent == (
            self.common_dir / "worktrees").resolve() and back == (path / ".git").resolve()
        return admin if ours else None

    def untracked(self) -> list[str]:
        """This worktree's files that git does not track and does not ignore: work that a
        removal of the worktree would lose."""
        out = self._run("ls-files", "--others", "--exclude-standard", "-z").stdout
        return sorted(p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p)

    def worktree_remove(self, path: Path) -> None:
        """carry's own worktree is first renamed, in one step, to `trash(path)` beside it,
        then forgotten, then deleted: `git worktree remove` deletes files in directory
        order, and a `kill -9` part-way could leave a folder without its `.git`, which no
        later run can tell from a user's (so it stayed forever). A name carry gives is
        carry's whatever is left in it, so a kill anywhere leaves only what the next removal
        of `path` sweeps. Anything else goes by `git worktree remove --force --force`; one
        a killed `add` left half-made is forgotten (`forget_half_made`), and whatever is
        left at `path` (an invalid `.git`, a folder git never registered) goes before the
        prune that forgets it."""
        import shutil

        bin_ = trash(path)
        if bin_.is_dir() and not bin_.is_symlink():
            shutil.rmtree(bin_, ignore_errors=True)  # a kill's leftover of an earlier removal
        staged = staging(path)
        if staged.is_dir() and not staged.is_symlink():  # ... or of an add (`_move_in`)
            self.forget_half_made(staged)
            shutil.rmtree(staged, ignore_errors=True)
        if self.made_by_carry(path):
            path.rename(bin_)
            self.forget_half_made(path)
            shutil.rmtree(bin_, ignore_errors=True)
            return
        proc = self._run("worktree", "remove", "--force", "--force", EOO, str(path),
                         check=False)
        if proc.returncode != 0:
            self.forget_half_made(path)
            shutil.rmtree(path, ignore_errors=True)
            self.worktree_prune()

    def forget_half_made(self, path: Path | None = None) -> None:
        """A `kill -9` inside `git worktree add` leaves its admin folder under
        `worktrees/` locked "initializing", with any of its files (gitdir, commondir, HEAD)
        still missing. `remove` refuses it, `prune` skips it while it is locked, and one
        whose commondir is still empty makes every `git worktree` command die ("failed to read
        commondir"), `add` and `list` included. So it is found here by its files, not by
        asking git: an admin folder locked "initializing" whose gitdir names `path`, or a
        folder that is gone (a killed validation's checkout, its scratch swept; an `add`
        still running has made its folder before it writes gitdir), and it is deleted, as
        `prune` would delete an unlocked one."""
        want = (path / ".git").resolve() if path is not None else None
        admins = self.common_dir / "worktrees"
        for admin in admins.iterdir() if admins.is_dir() else ():
            try:
                locked = (admin / "locked").read_text("utf-8").strip()
                named = Path((admin / "gitdir").read_text("utf-8").strip()).resolve()
            except (OSError, ValueError):
                continue
            if locked in ("initializing", MARK) and (named == want
                                                     or not named.parent.exists()) \
                    and not admin.is_symlink():
                self._discard(admin)

    def _discard(self, admin: Path) -> None:
        """An admin folder out of `worktrees/` in one rename, then deleted: a kill inside a
        plain delete would leave one with its lock gone and its gitdir kept, which nothing
        may then claim and which `git worktree` reads on every call. What a kill leaves in
        carry's own `trash/` is swept by the next discard."""
        import shutil

        trash = self.carry_dir() / "trash"
        for left in trash.iterdir() if trash.is_dir() else ():
            shutil.rmtree(left, ignore_errors=True)
        trash.mkdir(exist_ok=True)
        gone = trash / f"{admin.name}.{os.getpid()}.{time.monotonic_ns()}"
        try:
            admin.rename(gone)
        except OSError:
            return
        shutil.rmtree(gone, ignore_errors=True)

    def worktree_prune(self) -> None:
        self._run("worktree", "prune", check=False)

    def worktree_of(self, ref: str) -> str | None:
        """The worktree that has `ref` checked out, if any: moving it would strand its files."""
        current = None
        self.forget_half_made()  # `list` dies on one
        for line in self._out("worktree", "list", "--porcelain").splitlines():
            if line.startswith("worktree "):
                current = line[9:]
            elif line == f"branch {ref}":
                return current
        return None

    def stage_tracked(self) -> str:
        """Stage every tracked file as it is now (resolving conflicts) and write the tree;
        untracked files stay out, as with `git rebase --continue`."""
        self._run("add", "--update", "--", ".", tied=True)
        return self._out("write-tree")

    def cherry_pick_no_commit(self, commit: str) -> list[str]:
        """Apply `commit` in this worktree with git's own conflict markers and no commit;
        returns the conflicted paths (none when it applied). git 2.39's cherry-pick reads
        an option after --end-of-options still: it is given a commit id only."""
        if not COMMIT_ID.fullmatch(commit):
            raise GitError(f"cherry-pick takes a commit id, not {commit!r}")
        proc = self._run("cherry-pick", "--no-commit", commit, check=False, tied=True)
        out = self._run("ls-files", "--unmerged", "-z").stdout
        unmerged = sorted({rec.partition(b"\t")[2].decode("utf-8", "surrogateescape")
                           for rec in out.split(b"\0") if rec})
        if proc.returncode != 0 and not unmerged:
            raise GitError(complaint(("cherry-pick",), proc.stderr or proc.stdout))
        return unmerged
