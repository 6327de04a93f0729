"""`carry rebase` and what a stopped rebase needs: its state, the forecast's trial that a
`--skip` takes (trial), the conflict worktree made on demand and moved in place (checkout),
resume, hints, range-diff. Imports base, git, series and replay."""
