"""The CI job: cells, the ledger, releases, the loop that opens PRs and tracking issues
(conflicts: tracking; failing tests: failing, triaged by verdict), and the dashboard issue
(board renders and parses it, steer reads its boxes and writes it). Imports base, git,
series, replay, rebase, validate and publish."""
