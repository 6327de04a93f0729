"""One GitHub repository as carry uses it: every endpoint carry calls, each going through its
`Forge`'s error mapping and retry (`Forge.call`), each text it sends scrubbed first. A
handle is cheap; the repository itself is read once per run, on its first request."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from carry.base import redact
from carry.publish import text
from carry.publish.github import CommentInfo, Forge, ForgeError, IssueInfo, PullInfo

PAGES = 20  # of 100 edits each: the history read back to carry's own revision
_EDITS = ("query($owner: String!, $name: String!, $number: Int!, $first: Int!, "
          "$after: String) { repository(owner: $owner, name: $name) { issue(number: $number) "
          "{ userContentEdits(first: $first, after: $after) { nodes { editedAt editor { login "
          "} diff } pageInfo { hasNextPage endCursor } } } } }")
WRITE = ("admin", "write")  # the legacy `permission` levels that can push (maintain reads write)


@dataclass(frozen=True)
class EditInfo:
    """One revision of an issue's body: who made it (\"\" for a deleted account), when, and
    the body it left."""

    editor: str
    at: str  # ISO 8601, UTC
    body: str


@dataclass
class _Login:
    login: str


@dataclass
class _Edit:
    editedAt: str  # noqa: N815 - GraphQL's own names, checked by untrusted.build
    editor: _Login | None = None
    diff: str | None = None


@dataclass
class _PageInfo:
    hasNextPage: bool  # noqa: N815
    endCursor: str | None = None  # noqa: N815


@dataclass
class _Edits:
    nodes: list[_Edit]
    pageInfo: _PageInfo | None = None  # noqa: N815


@dataclass
class _Issue:
    userContentEdits: _Edits  # noqa: N815


@dataclass
class _Repository:
    issue: _Issue


@dataclass
class _Data:
    repository: _Repository


@dataclass
class _Answer:
    data: _Data


@dataclass
class GitHubRepo:
    forge: Forge
    name: str  # owner/name
    _gh: Any = field(repr=False, default=None)

    def _gh_repo(self) -> Any:
        return self.forge.gh_repo(self.name)

    # -- pulls -----------------------------------------------------------------------------

    def open_pulls(self, base: str | None = None) -> list[PullInfo]:
        repo = self._gh_repo()
        kw = {"state": "open", "sort": "created", "direction": "asc"}
        if base:
            kw["base"] = base
        return self.forge.call(f"pull requests of {self.name}",
                          lambda: [_pull(p) for p in repo.get_pulls(**kw)])

    def pull(self, number: int) -> PullInfo:
        repo = self._gh_repo()
        return self.forge.call(f"pull request {self.name}#{number}",
                          lambda: _pull(repo.get_pull(number)))

    def pull_commits(self, number: int) -> list[str]:
        repo = self._gh_repo()
        return self.forge.call(f"commits of {self.name}#{number}",
                          lambda: [c.sha for c in repo.get_pull(number).get_commits()])

    def create_pull(self, title: str, body: str, head: str, base: str,
                    draft: bool) -> PullInfo:
        repo = self._gh_repo()
        owner = self.name.split("/", 1)[0]
        full_head = head if ":" in head else f"{owner}:{head}"

        def lost() -> PullInfo | None:
            return next((_pull(p) for p in repo.get_pulls(state="open", head=full_head,
                                                          base=base)
                         if p.user and p.user.login == self.forge.me()), None)

        return self.forge.call(
            f"a new pull request in {self.name}",
            lambda: _pull(repo.create_pull(title=redact.scrub(title), body=_body(body),
                                           head=head, base=base, draft=draft)), lost)

    def edit_pull(self, number: int, **fields: str) -> PullInfo:
        repo = self._gh_repo()

        def edit() -> PullInfo:
            pr = repo.get_pull(number)
            pr.edit(**_fields(fields))
            return _pull(repo.get_pull(number))

        return self.forge.call(f"pull request {self.name}#{number}", edit)

    def comments(self, number: int) -> list[CommentInfo]:
        repo = self._gh_repo()
        return self.forge.call(
            f"comments of {self.name}#{number}",
            lambda: [CommentInfo(c.id, c.body or "", c.user.login)
                     for c in repo.get_issue(number).get_comments()])

    def comment(self, number: int, body: str) -> CommentInfo:
        repo = self._gh_repo()

        def post() -> CommentInfo:
            c = repo.get_issue(number).create_comment(_body(body))
            return CommentInfo(c.id, c.body or "", c.user.login)

        def lost() -> CommentInfo | None:
            """The newest comment, when it is this one by carry's account."""
            every = list(repo.get_issue(number).get_comments())
            last = every[-1] if every else None
            if last is not None and last.user and last.user.login == self.forge.me() and (
                    (last.body or "") == _body(body)):
                return CommentInfo(last.id, last.body or "", last.user.login)
            return None

        return self.forge.call(f"a comment on {self.name}#{number}", post, lost)

    def merge_sha(self, number: int) -> str:
        """The commit a merged PR became on its base, from its `merged` event (the API version
        carry speaks has no `merge_commit_sha` on a pull request)."""
        repo = self._gh_repo()
        return self.forge.call(
            f"events of {self.name}#{number}",
            lambda: next((e.commit_id or "" for e in repo.get_issue(number).get_events()
                          if e.event == "merged"), ""))

    def comments_since(self, since: str) -> list[tuple[int, CommentInfo]]:
        """(issue or PR number, comment) for every comment of the repository written since
        `since` (ISO 8601; "" for all), oldest first: one listing, not one per PR."""
        import datetime as dt

        repo = self._gh_repo()
        kw: dict[str, Any] = {"sort": "created", "direction": "asc"}
        if since:
            kw["since"] = dt.datetime.strptime(since, "%Y-%m-%dT%H:%M:%SZ").replace(
                tzinfo=dt.UTC)
        return self.forge.call(
            f"comments of {self.name}",
            lambda: [(int(c.issue_url.rstrip("/").rsplit("/", 1)[1]),
                      CommentInfo(c.id, c.body or "", c.user.login if c.user else ""))
                     for c in repo.get_issues_comments(**kw)])

    def delete_comment(self, number: int, comment_id: int) -> None:
        repo = self._gh_repo()
        self.forge.call(f"comment {comment_id} on {self.name}#{number}",
                   lambda: repo.get_issue(number).get_comment(comment_id).delete())

    def add_label(self, number: int, label: str) -> None:
        repo = self._gh_repo()
        self.forge.call(f"labels of {self.name}#{number}",
                   lambda: repo.get_issue(number).add_to_labels(label))

    # -- issues (the CI loop's tracking issues) -------------------------------------------

    def open_issues(self, marker: str) -> list[IssueInfo]:
        """Open issues (not pull requests) whose body holds `marker`; the caller parses it.
        GitHub lists pull requests among issues, so they are left out here."""
        repo = self._gh_repo()
        return self.forge.call(
            f"issues of {self.name}",
            lambda: [_issue(i) for i in repo.get_issues(state="open", sort="created",
                                                        direction="asc")
                     if i.pull_request is None and marker in (i.body or "")])

    def create_issue(self, title: str, body: str) -> IssueInfo:
        repo = self._gh_repo()
        sent = (redact.scrub(title), _body(body))

        def lost() -> IssueInfo | None:
            """The newest open issue carry's account opened, when it is this one."""
            for i in repo.get_issues(state="open", creator=self.forge.me(), sort="created",
                                     direction="desc"):
                if i.pull_request is None and i.user and i.user.login == self.forge.me():
                    return _issue(i) if (i.title, i.body or "") == sent else None
            return None

        return self.forge.call(f"a new issue in {self.name}",
                                lambda: _issue(repo.create_issue(title=sent[0], body=sent[1])),
                                lost)

    def edit_issue(self, number: int, **fields: str) -> None:
        """One PATCH: the issue object is lazy, so nothing is read first."""
        repo = self._gh_repo()
        self.forge.call(f"issue {self.name}#{number}", lambda: repo.get_issue(number).edit(
            **_fields(fields)))

    def close_issue(self, number: int, comment: str) -> CommentInfo:
        """Say why, then close: a reader of the closed issue sees the reason last."""
        posted = self.comment(number, comment)
        self.edit_issue(number, state="closed", state_reason="completed")
        return posted

    def body_edits(self, number: int, mine: str, pages: int = PAGES) -> list[EditInfo]:
        """The body's revisions, oldest first, from the newest back to the last one `mine`
        made (all of them when it made none): empty while it was never edited. REST has no
        record of who edited a body, so this asks GraphQL's `userContentEdits` (newest first,
        100 a page), page after page; equal times keep GitHub's order, reversed. More than
        `pages` pages of other accounts' edits is a one-line error: nothing is changed."""
        got: list[EditInfo] = []
        after: str | None = None
        for _ in range(pages):
            page = partial(self._edits_page, number, after)
            nodes, after = self.forge.call(f"the edits of {self.name}#{number}", page)
            got += nodes
            if after is None or any(e.editor.casefold() == mine.casefold() for e in nodes):
                order = sorted(range(len(got)), key=lambda i: (got[i].at, -i))
                return [got[i] for i in order]
        raise ForgeError(f"{self.name}#{number} has more than {pages * 100} edits since "
                         "carry's own revision; carry cannot tell who ticked its boxes, so it "
                         "leaves the issue alone",
                         hint="close that issue: the next run opens a new dashboard")

    def _edits_page(self, number: int, after: str | None) -> tuple[list[EditInfo], str | None]:
        """One page of edits, every field checked (a server's answer is untrusted)."""
        from carry.base import untrusted

        owner, name = self.name.split("/", 1)
        variables = {"owner": owner, "name": name, "number": number, "first": 100,
                     "after": after}
        _, data = self.forge._gh.requester.graphql_query(_EDITS, variables)
        if untrusted.depth(data) > untrusted.MAX_DEPTH:
            raise ValueError("nested too deep")
        try:
            page = untrusted.build(_Answer, data, "answer").data.repository.issue
        except untrusted.BadData as exc:
            raise ValueError(str(exc)) from None
        edits = page.userContentEdits
        more = edits.pageInfo.hasNextPage if edits.pageInfo else False
        cursor = edits.pageInfo.endCursor if edits.pageInfo else None
        return ([EditInfo(n.editor.login if n.editor else "", n.editedAt, n.diff or "")
                 for n in edits.nodes], cursor if more and cursor else None)

    def can_write(self, login: str) -> bool:
        """Whether `login` may push to the repository (GET .../collaborators/LOGIN/permission);
        an account GitHub does not know may not."""
        from github import UnknownObjectException

        repo = self._gh_repo()

        def ask() -> bool:
            try:
                return str(repo.get_collaborator_permission(login)) in WRITE
            except UnknownObjectException:
                return False

        return self.forge.call(f"the permission of {login} on {self.name}", ask)

def _body(body: str) -> str:
    """Every body carry sends: scrubbed of tokens, then within GitHub's limit."""
    return text.bounded(redact.scrub(body))


def _fields(fields: dict[str, str]) -> dict[str, str]:
    return {k: _body(v) if k == "body" else redact.scrub(v) for k, v in fields.items()}


def _issue(i: Any) -> IssueInfo:
    return IssueInfo(number=i.number, title=i.title or "", body=i.body or "", state=i.state,
                     url=i.html_url or "", author=i.user.login if i.user else "")


def _pull(p: Any) -> PullInfo:
    return PullInfo(
        number=p.number, title=p.title or "", body=p.body or "", state=p.state,
        draft=bool(p.draft), head=p.head.ref, head_sha=p.head.sha, base=p.base.ref,
        author=p.user.login if p.user else "", url=p.html_url or "",
        merged=p.merged_at is not None, labels=tuple(x.name for x in p.labels),
        head_repo=p.head.repo.full_name if p.head.repo else "",
        created=p.created_at.strftime("%Y-%m-%dT%H:%M:%SZ") if p.created_at else "",
    )


def repo(forge: Forge, full_name: str) -> GitHubRepo:
    """The handle every request about `owner/name` goes through."""
    return GitHubRepo(forge, full_name)
