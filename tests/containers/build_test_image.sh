#!/usr/bin/env bash
# Builds the image the container tests and benchmarks use, without any registry: a rootfs of
# busybox-static (Debian package) imported with `podman import` (or `docker import`) as
# localhost/kiln-test:1. Its default command runs $KILN_TEST_CMD (default: sleep forever), so a
# service can be given a behaviour through its env. Does nothing when the image exists.
#   usage: build_test_image.sh [ENGINE]   (default: podman)
set -euo pipefail
engine="${1:-podman}"
image="localhost/kiln-test:1"
if "$engine" image inspect "$image" >/dev/null 2>&1; then exit 0; fi
source "$(dirname "${BASH_SOURCE[0]}")/rootfs.sh"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
make_busybox_root "$root" || exit 1
tar -C "$root" -c . | "$engine" import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  --change 'CMD ["/bin/sh","-c","eval \"${KILN_TEST_CMD:-exec sleep 2147483647}\""]' \
  - "$image" >/dev/null
echo "built $image with $engine"
