#!/usr/bin/env bash
# Fail early, with one line, when the runner lacks room for a vLLM checkout and the image.
#   ci/check-disk.sh GIB [PATH]
set -euo pipefail
need=${1:?usage: ci/check-disk.sh GIB [PATH]}
where=${2:-.}
free=$(df -Pk "$where" | awk 'NR==2 {print int($4 / 1048576)}')
if [ "$free" -lt "$need" ]; then
  echo "check-disk: ${free} GiB free under $where, ${need} GiB needed" >&2
  exit 1
fi
echo "check-disk: ${free} GiB free under $where"
