"""The CI job: cells, the ledger, releases, the loop that opens PRs and tracking issues
(issues keeps them; their text: tracking for conflicts, failing for failing tests, triaged
by verdict), and the dashboard issue (board renders and parses it, steer reads its boxes and
writes it). Imports base, git, series, replay, rebase, validate and publish."""
