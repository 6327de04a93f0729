"""`carry rebase` and what a stopped rebase needs: the flags read once (flags) and acted on
(action), its state, `--continue` and `--skip` (onward), the forecast's trial that a `--skip`
takes (trial), the conflict worktree made on demand and moved in place (checkout), resume,
`--quit` and `--show-current-patch` (stops), `carry edit` (edit), the series' branches for
status (branches), `--furthest`'s pinned targets (furthest), hints, range-diff. Imports base,
git, series and replay."""
