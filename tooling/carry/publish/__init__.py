"""Talking to GitHub: `github` (the connection: the token, error mapping, the retry loop),
`retry` (when GitHub says to ask again), `repository` (the per-repository handle with every
endpoint carry calls), `owned` (which PRs and issues are carry's), `remote` (which git remote
to push to and read from), then the PR (`pr`, its `body`) and `supersede`. Imports base, git
and series; validate only for the report a PR cites."""
