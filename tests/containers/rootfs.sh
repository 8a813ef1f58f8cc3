# Sourced by the image builders: make_busybox_root DIR fills DIR with busybox-static (Debian
# package) and its applets, /tmp, /etc/passwd and /etc/group: a root file system without any
# registry.
make_busybox_root() {
  local root="$1" busybox=/bin/busybox  # busybox-static installs it here
  if [[ ! -x "$busybox" ]] || [[ "$(ldd "$busybox" 2>&1 || true)" != *"not a dynamic"* ]]; then
    echo "a static busybox is needed (Debian package busybox-static)" >&2
    return 1
  fi
  mkdir -p "$root"/{bin,tmp,etc,proc,sys,dev,root}
  chmod 1777 "$root/tmp"
  cp "$busybox" "$root/bin/busybox"
  local applet
  for applet in $("$busybox" --list); do
    [[ -e "$root/bin/$applet" ]] || ln -s busybox "$root/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
}
