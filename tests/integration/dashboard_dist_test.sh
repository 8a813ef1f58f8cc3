#!/usr/bin/env bash
# The committed dashboard build (dashboard/dist, compiled into kiln) is what its sources build
# to: the type check passes and `vite build` of dashboard/src gives the same files, byte for
# byte (vite's output is deterministic for one package-lock.json). A failure means someone
# changed dashboard/src without running `npm run build` in dashboard/ and committing dist/.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin dashboard_dist

dashboard="$KILN_SOURCE_DIR/dashboard"
[[ -x "$dashboard/node_modules/.bin/vite" ]] ||
  itest_die "$dashboard/node_modules is missing: scripts/deps runs npm ci in dashboard/"

RC=0
(cd "$dashboard" && node_modules/.bin/tsc --noEmit) >"$ITEST_DIR/tsc.out" 2>&1 || RC=$?
if [[ "$RC" == 0 ]]; then pass "the dashboard's TypeScript type-checks"; else
  fail "tsc --noEmit failed:"; sed 's/^/    | /' "$ITEST_DIR/tsc.out" | head -40 >&2; fi
RC=0
(cd "$dashboard" && node_modules/.bin/vite build --outDir "$ITEST_DIR/dist" --emptyOutDir \
  --logLevel warn) >"$ITEST_DIR/vite.out" 2>&1 || RC=$?
if [[ "$RC" == 0 ]]; then pass "vite build succeeds"; else
  fail "vite build failed:"; sed 's/^/    | /' "$ITEST_DIR/vite.out" | head -40 >&2; fi
if diff -r "$dashboard/dist" "$ITEST_DIR/dist" >"$ITEST_DIR/diff.out" 2>&1; then
  pass "dashboard/dist is the build of dashboard/src"
else
  fail "dashboard/dist is stale: run 'npm run build' in dashboard/ and commit dist/:"
  sed 's/^/    | /' "$ITEST_DIR/diff.out" | head -20 >&2
fi
itest_end
