"""`carry rebase` and what a stopped rebase needs: its state, resume, hints, range-diff.
Imports base, git, series and replay."""
