#!/usr/bin/env bash
# kiln serve's idle and busy hooks (src/kiln/server/idle_hooks.h, docs/serve.md "Idle and busy
# hooks"), through the real binary:
# - with serve.idle.after 2s the idle command runs once when nothing was queued or ran for 2s
#   (it appends to a file in kiln.yml's folder), and not again while the server stays idle;
# - a push then runs the busy command before its job starts (the file says idle, busy, job),
#   the busy command's output is in the server's log;
# - once the push's trigger ended, the idle command runs again after 2s;
# - bad values of serve.idle / serve.busy stop `kiln serve` with exit 2 at FILE:LINE:COL.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin serve_idle
RC=0
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"

SERVE_SECRET="webhook-secret-$RANDOM"
token="api-token-$RANDOM"
repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
hooks="$ITEST_DIR/hooks.log"
make_repo "$repo"
write_workflow "$repo" ci.yml <<EOF2
on: push
jobs:
  build:
    runs-on: linux
    steps:
      - run: echo job >> '$hooks'
EOF2
commit_all "$repo" "a workflow"
mkdir -p "$(dirname "$bare")"
git init -q --bare -b main "$bare"
git -C "$repo" push -q "$bare" HEAD:refs/heads/main

# write_config IDLE-AND-BUSY-LINES: kiln.yml with the given lines under serve:.
write_config() {
  cat >"$ITEST_DIR/kiln.yml" <<EOF2
serve:
  listen: 127.0.0.1:0
  store: state/kiln.db
  work_dir: serve-work
  api_tokens: [$token]
  shutdown_grace: 10m
  repositories:
    acme/widgets:
      clone_url: $bare
      webhook_secret: $SERVE_SECRET
$1
EOF2
}
hook_lines() { cat "$hooks" 2>/dev/null; }
idle_count() { grep -c '^idle$' "$hooks" 2>/dev/null || true; }
idle_count_is() { [[ "$(idle_count)" == "$1" ]]; }
server_log() { cat "$ITEST_DIR/serve.out" "$ITEST_DIR/serve.err"; }

# Relative paths in the commands: they run in kiln.yml's folder ($ITEST_DIR).
write_config "  idle:
    after: 2s
    run: echo \$KILN_HOOK >> hooks.log
    timeout: 30s
  busy:
    run: echo \$KILN_HOOK >> hooks.log; echo BUSY-OUTPUT-\$KILN_HOOK"
serve_launch
check "the idle command runs after 2s without work" wait_until 60 idle_count_is 1
expect_eq "$(hook_lines)" "idle" "it ran through /bin/sh in kiln.yml's folder with KILN_HOOK=idle"
# The one wait that must run out: a second idle command within 5s would be the bug.
if wait_until 5 idle_count_is 2; then
  fail "the idle command ran again while the server stayed idle"
else
  pass "the idle command runs once per idle spell"
fi

echo change >>"$repo/README.md"
commit_all "$repo" "a change"
git -C "$repo" push -q "$bare" HEAD:refs/heads/main
sha="$(git -C "$repo" rev-parse HEAD)"
cat >"$ITEST_DIR/push.json" <<EOF2
{"ref": "refs/heads/main", "before": "0000000000000000000000000000000000000000",
 "after": "$sha", "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"}}
EOF2
deliver "$ITEST_DIR/push.json" push delivery-1
expect_status 202 "a push is accepted while the server is idle"
trigger="$(json_eval - 'd["trigger"]')"
check "the push's trigger finishes" trigger_done "$trigger" finished
expect_eq "$(hook_lines)" "idle
busy
job" "the busy command ran before the push's job, once"
expect_contains "$(server_log)" "serve.busy: BUSY-OUTPUT-busy" \
  "the busy command's output is in the server's log"
expect_contains "$(server_log)" "serve.busy: exit code 0" "and how it ended"
check "after the trigger the server goes idle again" wait_until 60 idle_count_is 2
expect_eq "$(hook_lines)" "idle
busy
job
idle" "idle, busy, job, idle: in that order"
serve_stop

# Bad values: exit 2, located.
bad_config() {
  write_config "$1"
  kiln serve --config "$ITEST_DIR/kiln.yml"
  expect_rc 2 "$2 is bad input"
  expect_contains "$ERR" "$3" "$2: the error says where and what"
}
bad_config "  idle: {after: 2s, run: x, every: 1m}" "an unknown serve.idle key" \
  "kiln.yml:11:29: error: serve.idle: unknown key 'every' (known: after, run, timeout)"
bad_config "  idle: {after: 2 seconds, run: x}" "a duration that is not one" \
  "kiln.yml:11:17: error: serve.idle.after: "
bad_config "  idle: {after: 2s, run: ''}" "an empty command" \
  "kiln.yml:11:26: error: serve.idle.run: the command is empty"
bad_config "  busy: {run: power-up}" "serve.busy without serve.idle" \
  "kiln.yml:11:9: error: serve.busy: needs serve.idle"
itest_end
