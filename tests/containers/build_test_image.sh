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
busybox=/bin/busybox  # busybox-static installs it here
if [[ ! -x "$busybox" ]] || [[ "$(ldd "$busybox" 2>&1 || true)" != *"not a dynamic"* ]]; then
  echo "build_test_image.sh: a static busybox is needed (Debian package busybox-static)" >&2
  exit 1
fi
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,tmp,etc,proc,sys,dev,root}
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
  [[ -e "$root/bin/$applet" ]] || ln -s busybox "$root/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
tar -C "$root" -c . | "$engine" import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  --change 'CMD ["/bin/sh","-c","eval \"${KILN_TEST_CMD:-exec sleep 2147483647}\""]' \
  - "$image" >/dev/null
echo "built $image with $engine"
