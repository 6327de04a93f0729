#!/usr/bin/env bash
# Install podman with runc and point it at carry's containers.conf.
# Meant to be sourced (`source ci/container/setup-podman.sh`) so that CONTAINERS_CONF stays
# exported for the tests; running it as a script also works and prints the export line.
_carry_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v podman >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc >/dev/null
  else
    echo "setup-podman: podman/runc missing and not root; install them: apt-get install podman runc" >&2
  fi
fi
export CONTAINERS_CONF="$_carry_here/containers.conf"
if command -v podman >/dev/null 2>&1; then
  if podman info --format '{{.Host.OCIRuntime.Name}}' >/dev/null 2>&1; then
    echo "setup-podman: $(podman --version), runtime $(podman info --format '{{.Host.OCIRuntime.Name}}'), CONTAINERS_CONF=$CONTAINERS_CONF"
  else
    echo "setup-podman: podman is installed but 'podman info' fails:" >&2
    podman info 2>&1 | tail -n 3 >&2 || true
  fi
fi
unset _carry_here
