"""Refs, revisions and remotes. Every ref carry moves goes through `set_refs`: one
`update-ref --stdin` transaction with the old value checked, so several targets' branches move
together or not at all, and a branch someone else moved is never overwritten. Every rev, ref,
pattern and remote a caller gives goes after `--end-of-options`; remotes and pushed branch
names are also checked first, so that a bad one fails in one line before any network."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

from carry.base import redact
from carry.base.errors import CarryError, MissingRef
from carry.git.base import EOO, NULL_SHA, Base, GitError, check_remote

ANY = "any"  # `old` for a ref update that checks nothing (carry's own cache refs)


class UnknownRevision(MissingRef):
    """`rev` names nothing in the repository. The hint, the refs nearest to `rev`, is looked
    up only when read: `try_rev_parse` misses cost no `for-each-ref`."""

    def __init__(self, rev: str, repo: Refs) -> None:
        self._names: Refs | None = repo
        super().__init__(f"unknown revision {rev!r} in {repo.path}", str(repo.path))
        self.rev = rev

    @property
    def hint(self) -> str | None:
        if self._names is not None:
            from carry.base.suggest import did_you_mean

            repo, self._names = self._names, None
            try:
                self._hint = did_you_mean(self.rev, repo.ref_names())
            except CarryError:
                self._hint = None
        return self._hint

    @hint.setter
    def hint(self, value: str | None) -> None:
        self._hint = value
        if value is not None:
            self._names = None


@dataclass(frozen=True)
class RefUpdate:
    """Move `ref` to `new` (None deletes) if it holds `old` (None: must not exist)."""

    ref: str
    new: str | None
    old: str | None


class Refs(Base):
    def rev_parse(self, rev: str, kind: str = "commit") -> str:
        proc = self._run("rev-parse", "--verify", "--quiet", EOO, f"{rev}^{{{kind}}}",
                         check=False)
        if proc.returncode != 0:
            raise UnknownRevision(rev, self)
        return proc.stdout.decode().strip()

    def try_rev_parse(self, rev: str, kind: str = "commit") -> str | None:
        try:
            return self.rev_parse(rev, kind)
        except CarryError:
            return None

    def ref_exists(self, ref: str) -> bool:
        return self._run("show-ref", "--verify", "--quiet", EOO, ref,
                         check=False).returncode == 0

    def merge_base(self, a: str, b: str) -> str | None:
        proc = self._run("merge-base", EOO, a, b, check=False)
        return proc.stdout.decode().strip() or None

    def is_ancestor(self, a: str, b: str) -> bool:
        return self._run("merge-base", "--is-ancestor", EOO, a, b, check=False).returncode == 0

    def shallow_boundary(self) -> set[str]:
        """The commits a shallow clone cut the history below (they look parentless to git)."""
        path = self.common_dir / "shallow"
        return set(path.read_text().split()) if path.is_file() else set()

    def rev_list(self, base: str, head: str, topo_order: bool = False) -> list[str]:
        """The commits of base..head, oldest first (parents before children with
        `topo_order`)."""
        order = ("--topo-order",) if topo_order else ()
        return self._out("rev-list", "--reverse", *order, EOO, head, f"^{base}", "--").split()

    def for_each_ref(self, pattern: str, fmt: str = "%(refname)") -> list[str]:
        return self._out("for-each-ref", f"--format={fmt}", EOO, pattern).splitlines()

    def ref_names(self) -> list[str]:
        """Every branch, remote-tracking branch and tag, short (`upstream/main`, `v1.0`): what
        a user may have meant by a revision that names nothing. carry's own refs are not
        among them."""
        out = self._out("for-each-ref", "--format=%(refname:short)", "refs/heads/",
                        "refs/remotes/", "refs/tags/")
        return [n for n in out.splitlines() if n and not n.endswith("/HEAD")]

    def version_tags(self, pattern: str) -> list[str]:
        """Tags matching `pattern`, oldest version first; a release candidate sorts before
        its release, so `v1.2.0` is newer than `v1.2.0rc1`."""
        cfg: list[str] = []
        for suffix in ("rc", "-rc", ".rc", "dev", ".dev", "-dev", "a", "b", "-alpha", "-beta"):
            cfg += ["-c", f"versionsort.suffix={suffix}"]
        return self._out(*cfg, "tag", "--list", "--sort=v:refname", EOO, pattern).split()

    def fetch(self, remote: str) -> None:
        self._run("fetch", "--quiet", "--tags", EOO, check_remote(remote))

    def push(self, remote: str, commit: str, branch: str, lease: str | None,
             token: str | None = None) -> None:
        """Push with a lease, so a branch someone else moved is never overwritten. `branch`
        may come from the forge (an open PR's head): it must be a branch name git accepts.
        `token`: sent as GitHub's HTTP basic auth (`_token_env`)."""
        self._check_pushed(branch)
        lease_arg = f"--force-with-lease=refs/heads/{branch}:{lease or ''}"
        self._run("push", "--quiet", "--porcelain", lease_arg, EOO, check_remote(remote),
                  f"{commit}:refs/heads/{branch}", env=_token_env(token))

    def remote_head(self, remote: str, branch: str, token: str | None = None) -> str | None:
        self._check_pushed(branch)
        out = self._out("ls-remote", EOO, check_remote(remote), f"refs/heads/{branch}",
                        env=_token_env(token))
        return out.split()[0] if out else None

    def _check_pushed(self, branch: str) -> None:
        if not self.valid_branch(f"refs/heads/{branch}"):
            raise GitError(f"not a valid branch name to push: {branch!r}")

    def fetch_refspec(self, remote: str, refspec: str) -> None:
        self._run("fetch", "--quiet", "--no-tags", EOO, check_remote(remote), refspec)

    def remotes(self) -> list[str]:
        return self._out("remote").split()

    def set_ref(self, ref: str, new: str | None, old: str | None,
                message: str = "carry", reflog: bool = True) -> None:
        self.set_refs([RefUpdate(ref, new, old)], message, reflog)

    def set_refs(self, updates: Sequence[RefUpdate], message: str = "carry",
                 reflog: bool = True) -> None:
        """All of `updates` in one transaction; git applies none if any old value is off.
        `reflog` logs even where git would not (a bare repository), since the log is how
        carry later knows a branch is its own."""
        lines = ["start"]
        for u in updates:
            if any(v is not None and (not v.isprintable() or " " in v)
                   for v in (u.ref, u.new, u.old)):  # one more command in the stream
                raise GitError(f"cannot move ref {u.ref!r} to {u.new!r}")
            old = "" if u.old == ANY else " " + (u.old or NULL_SHA)
            lines.append(f"delete {u.ref}{old}" if u.new is None else
                         f"update {u.ref} {u.new}{old}")
        lines += ["prepare", "commit", ""]
        create = ("--create-reflog",) if reflog else ()
        self._run("update-ref", *create, "-m", message, "--stdin",
                  input="\n".join(lines).encode())

    def valid_branch(self, ref: str) -> bool:
        """A full ref name git accepts that cannot be read as an option (check-ref-format
        takes no --end-of-options: the `-` test is what keeps it a value)."""
        return not ref.startswith("-") and not ref.removeprefix("refs/heads/").startswith(
            "-") and self._run("check-ref-format", ref, check=False).returncode == 0

    def reflog(self, ref: str, limit: int = 20) -> list[tuple[str, str]]:
        """(commit, message) of the latest reflog entries of `ref`, newest first; none when
        it keeps no log."""
        proc = self._run("reflog", "show", f"-{limit}", "--format=%H %gs", EOO, ref, "--",
                         check=False)
        if proc.returncode != 0:
            return []
        rows = proc.stdout.decode("utf-8", "replace").splitlines()
        return [(sha, msg) for sha, _, msg in (r.partition(" ") for r in rows) if sha]

    def create_tag(self, name: str, target: str) -> None:
        self._run("tag", EOO, name, target)

    def remote_urls(self) -> dict[str, str]:
        """remote name -> fetch URL."""
        out = self._run("config", "--get-regexp", r"^remote\..*\.url$", check=False).stdout
        urls: dict[str, str] = {}
        for line in out.decode("utf-8", "replace").splitlines():
            key, _, url = line.partition(" ")
            urls.setdefault(key.removeprefix("remote.").removesuffix(".url"), url.strip())
        return urls

    def remote_default(self, remote: str) -> str | None:
        """The branch `refs/remotes/REMOTE/HEAD` points at, if the clone recorded one."""
        proc = self._run("symbolic-ref", "--quiet", EOO, f"refs/remotes/{remote}/HEAD",
                         check=False)
        name = proc.stdout.decode().strip().removeprefix(f"refs/remotes/{remote}/")
        return name if proc.returncode == 0 and name else None

    def first_parent_chain(self, head: str, base: str) -> list[str] | None:
        """base..head along first parents, oldest first; None when `head` is unknown."""
        proc = self._run("rev-list", "--reverse", "--first-parent", EOO, head, f"^{base}", "--",
                         check=False)
        return proc.stdout.decode().split() if proc.returncode == 0 else None


def _token_env(token: str | None) -> dict[str, str] | None:
    """The token as an `http.extraheader` for one git command, given through its environment
    (never argv or a file): carry's git children get no GIT_CONFIG_* of carry's own, so a
    caller that pushes as the token's user (the CI loop) says so per command."""
    if not token:
        return None
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    redact.register(basic)
    return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraheader",
            "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}"}
