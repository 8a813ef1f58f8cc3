#!/usr/bin/env bash
# cmake --install of the build kiln was built in (docs/serve.md "Install as a service"): kiln and
# kiln-step-helper side by side, stripped, their debug information in lib/debug/bin/*.debug
# (linked by .gnu_debuglink), the systemd unit naming the installed kiln and an unprivileged
# user, the docs. The build tree's kiln keeps its debug information.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin install

build="$(dirname "$KILN")"
prefix="$ITEST_DIR/prefix"
RC=0
cmake --install "$build" --prefix "$prefix" >"$ITEST_DIR/install.out" 2>&1 || RC=$?
if [[ "$RC" == 0 ]]; then pass "cmake --install --prefix succeeds"; else
  fail "cmake --install failed ($RC)"; tail -20 "$ITEST_DIR/install.out" >&2; fi

for file in bin/kiln bin/kiln-step-helper lib/debug/bin/kiln.debug \
  lib/debug/bin/kiln-step-helper.debug lib/systemd/system/kiln.service share/doc/kiln/serve.md \
  share/doc/kiln/README.md; do
  if [[ -f "$prefix/$file" ]]; then pass "installs $file"; else fail "no $file installed"; fi
done
sections() { readelf -S -W "$1" 2>/dev/null | grep -o '\.debug_info\|\.gnu_debuglink' | sort -u | tr '\n' ' '; }
if [[ "$(sections "$prefix/bin/kiln")" == ".gnu_debuglink " ]]; then
  pass "the installed kiln has no debug info, only the link to kiln.debug"
else fail "the installed kiln's sections: $(sections "$prefix/bin/kiln")"; fi
expect_contains "$(sections "$prefix/lib/debug/bin/kiln.debug")" ".debug_info" \
  "kiln.debug holds the debug info"
expect_contains "$(sections "$KILN")" ".debug_info" "the build tree's kiln keeps its debug info"
expect_contains "$("$prefix/bin/kiln" --version 2>&1)" "kiln " "the installed kiln runs"
unit="$(cat "$prefix/lib/systemd/system/kiln.service" 2>/dev/null)"
expect_contains "$unit" "ExecStart=$prefix/bin/kiln serve --config /etc/kiln/kiln.yml" \
  "the unit starts the installed kiln serve"
expect_contains "$unit" "User=kiln" "the unit runs as the unprivileged user kiln"
if command -v systemd-analyze >/dev/null; then
  RC=0
  systemd-analyze verify "$prefix/lib/systemd/system/kiln.service" >"$ITEST_DIR/verify.out" 2>&1 || RC=$?
  if grep -qi "unknown key\|unknown section\|invalid" "$ITEST_DIR/verify.out"; then
    fail "systemd-analyze verify finds problems:"; cat "$ITEST_DIR/verify.out" >&2
  else pass "systemd-analyze verify names no unknown key"; fi
fi
itest_end
