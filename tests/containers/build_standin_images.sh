#!/usr/bin/env bash
# Builds stand-ins for the reference pipelines' images under their names, without any registry
# (tests/containers/standin/README.md): docker.io/rocm/pytorch:rocm6.2.3-ubuntu22.04 and
# docker.io/library/pytorch-cuda:2.7-cuda11.8-ubuntu22.04, from busybox-static, Debian's
# python3 (with its libraries) and pytest, and the stand-ins of standin/. Does nothing for an
# image that exists with the stand-ins' current content.
#   usage: build_standin_images.sh [ENGINE]   (default: podman)
set -euo pipefail
engine="${1:-podman}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/rootfs.sh"
python=/usr/bin/python3.11
[[ -x "$python" ]] || { echo "Debian's python3.11 is needed (package python3)" >&2; exit 1; }
[[ -d /usr/lib/python3/dist-packages/pytest ]] ||
  { echo "Debian's pytest is needed (package python3-pytest)" >&2; exit 1; }
version="$(cat "$0" "$here"/rootfs.sh $(find "$here/standin" -type f | sort) | sha256sum | cut -c1-12)"

build() {  # build IMAGE WITH_NVIDIA_SMI
  local image="$1" current
  current="$("$engine" image inspect --format '{{index .Labels "org.kiln.standin"}}' "$image" 2>/dev/null || true)"
  [[ "$current" == "$version" ]] && return 0
  local root
  root="$(mktemp -d)"
  make_busybox_root "$root"
  # Ubuntu's device groups, as the real images have them.
  printf 'video:x:44:\nrender:x:109:\n' >>"$root/etc/group"
  mkdir -p "$root/usr/bin" "$root/usr/lib" "$root/usr/local/bin" "$root/lib64" \
    "$root/usr/local/lib/python3.11/dist-packages" "$root/usr/lib/python3/dist-packages"
  cp "$python" "$root/usr/bin/python3.11"
  ln -s python3.11 "$root/usr/bin/python3"
  ln -s python3.11 "$root/usr/bin/python"
  ln -s /bin/busybox "$root/usr/bin/env"
  local library
  for library in $(ldd "$python" | grep -o '/[^ ]*'); do
    mkdir -p "$root$(dirname "$library")"
    cp -L "$library" "$root$library"
  done
  tar -C /usr/lib -c --exclude=python3.11/test --exclude='__pycache__' --exclude=python3.11/idlelib \
    --exclude=python3.11/tkinter --exclude=python3.11/ensurepip --exclude=python3.11/lib2to3 \
    python3.11 | tar -C "$root/usr/lib" -x
  local package
  for package in pytest _pytest pluggy iniconfig packaging py py.py attr attrs; do
    cp -r "/usr/lib/python3/dist-packages/$package" "$root/usr/lib/python3/dist-packages/"
  done
  cp -r "$here"/standin/site/* "$root/usr/local/lib/python3.11/dist-packages/"
  cp "$here/standin/bin/pip" "$here/standin/bin/curl" "$root/usr/local/bin/"
  if [[ "$2" == yes ]]; then cp "$here/standin/bin/nvidia-smi" "$root/usr/local/bin/"; fi
  printf '#!/bin/sh\nexec python3 -m pytest "$@"\n' >"$root/usr/local/bin/pytest"
  chmod +x "$root"/usr/local/bin/*
  tar -C "$root" -c . | "$engine" import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "LABEL org.kiln.standin=$version" \
    --change 'CMD ["/bin/sh"]' - "$image" >/dev/null
  rm -rf "$root"
  echo "built $image (stand-in $version) with $engine"
}
build docker.io/rocm/pytorch:rocm6.2.3-ubuntu22.04 no
build docker.io/library/pytorch-cuda:2.7-cuda11.8-ubuntu22.04 yes
