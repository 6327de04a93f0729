#!/usr/bin/env bash
# Clone the fork named by the first manifest, and add its upstream as a second remote, with
# the remote names the manifests use. Blobs are fetched lazily, so the clone stays small.
#   ci/clone-targets.sh DEST
set -euo pipefail
dest=${1:?usage: ci/clone-targets.sh DEST}
here=$(cd "$(dirname "$0")" && pwd)
read -r fork_remote fork_url up_remote up_url < <(python3 - "$here/../series" <<'PY'
import sys
from pathlib import Path
from carry.series import store as series
items = [s for s in series.list_series(Path(sys.argv[1])) if s.manifest.fork.url]
if not items:
    sys.exit("carry: error: no series names a fork URL")
m = items[0].manifest
print(m.fork.remote or "fork", m.fork.url, m.upstream.remote or "upstream", m.upstream.url)
PY
)
git clone --quiet --filter=blob:none --origin "$fork_remote" "$fork_url" "$dest"
git -C "$dest" remote add "$up_remote" "$up_url"
git -C "$dest" fetch --quiet --filter=blob:none --tags "$up_remote"
