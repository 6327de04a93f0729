"""The CI job: cells, the ledger, releases, the loop that opens PRs and tracking issues.
Imports every stage below cli."""
