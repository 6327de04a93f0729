"""Errors that reach the user as one line and an exit code."""

from __future__ import annotations


class CarryError(Exception):
    """A failure the user can act on: printed as one line, exit code 2 (bad input)."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def line(self) -> str:
        from carry.base.redact import scrub

        msg = " ".join(str(self).split())
        return scrub(f"{msg} (hint: {self.hint})" if self.hint else msg)


class ValidationFailed(CarryError):
    """The test plan ran and something failed."""

    exit_code = 1


class MissingRef(CarryError):
    """A revision, ref or remote is not in the repository carry read. `repo` names that
    repository, so that the command can add, when it was plainly not the user's clone of
    upstream, that `--repo PATH` names it: fetching or adding remotes there would not help."""

    def __init__(self, message: str, repo: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.repo = repo
