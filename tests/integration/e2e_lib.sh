# Helpers for the browser tests (source after lib.sh and itest_begin): headless Chromium
# (Debian's /usr/bin/chromium, driven by playwright-core from dashboard/node_modules) runs a
# script of tests/e2e/, whose "ok: ..." / "FAIL: ..." lines are counted here.
# shellcheck disable=SC2034

# e2e_require: dies unless chromium, playwright-core and node are there; sets the E2E_*
# variables every script reads but E2E_BASE and E2E_TOKEN, and empties the screenshot folder
# of this test's screenshots (dashboard-*.png under <build>/test-artifacts).
e2e_require() {
  CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
  [[ -x "$CHROMIUM" ]] || itest_die "$CHROMIUM is missing: scripts/deps installs Debian's chromium"
  local playwright="$KILN_SOURCE_DIR/dashboard/node_modules/playwright-core"
  [[ -d "$playwright" ]] ||
    itest_die "$playwright is missing: scripts/deps runs npm ci in dashboard/"
  command -v node >/dev/null || itest_die "node is missing: scripts/deps installs nodejs"
  export E2E_CHROMIUM="$CHROMIUM" E2E_PLAYWRIGHT="$playwright"
  export E2E_ARTIFACTS="$(dirname "$KILN")/test-artifacts"
  mkdir -p "$E2E_ARTIFACTS"
}

# e2e_browser SCRIPT: runs tests/e2e/SCRIPT (at most 10 minutes) and counts its lines.
e2e_browser() {
  local rc=0 line
  timeout 600 node "$KILN_SOURCE_DIR/tests/e2e/$1" >"$ITEST_DIR/browser.out" \
    2>"$ITEST_DIR/browser.err" || rc=$?
  while IFS= read -r line; do
    case "$line" in
      "ok: "*) pass "browser: ${line#ok: }" ;;
      "FAIL: "*) fail "browser: ${line#FAIL: }" ;;
      *) echo "    | $line" ;;
    esac
  done <"$ITEST_DIR/browser.out"
  if [[ "$rc" != 0 ]]; then
    fail "the browser script $1 exited with $rc"
    sed 's/^/    | /' "$ITEST_DIR/browser.err" | tail -40 >&2
  fi
}
