#!/usr/bin/env bash
# Background steps (GitHub's parallel steps) and clean-up: Ctrl-C while a background server runs
# beside a foreground step stops both, kiln exits 130 and no process of the job is left; a job
# that runs out of time while it waits for a background step stops it too.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin background_steps

marker="background-steps-$$-$RANDOM"
repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" ci.yml <<EOF
name: servers
on: push
jobs:
  interrupted:
    runs-on: linux
    env:
      ITEST_MARKER: $marker
    steps:
      - id: server
        background: true
        run: |
          echo "SERVER-UP"
          sleep 301
      - name: Long test
        run: |
          echo "TEST-STARTING"
          sleep 300
EOF
commit_all "$repo" "a workflow to interrupt"

"$KILN" run -C "$repo" >"$ITEST_DIR/kiln.out" 2>&1 </dev/null &
kiln_pid=$!
itest_track_pid "$kiln_pid"
both_sleeping() {
  local token pid n=0
  for token in $(tokens_with_marker "$marker"); do
    for pid in $(token_pids "$token"); do
      [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == sleep ]] && n=$((n + 1))
    done
  done
  [[ $n -ge 2 ]]
}
wait_until 30 both_sleeping || itest_die "the server and the test never ran at once: $(cat "$ITEST_DIR/kiln.out")"
tokens="$(tokens_with_marker "$marker")"
for token in $tokens; do itest_track_token "$token"; done
pass "the background server and the foreground test run at the same time"

kill -INT "$kiln_pid"
if wait_exit "$kiln_pid" 30; then
  expect_rc_value() { [[ $WAIT_RC -eq 130 ]]; }
  check "kiln exited with code 130 after SIGINT" expect_rc_value
else
  itest_die "kiln was still running 30 s after SIGINT"
fi
leftover=""
for token in $tokens; do leftover+="$(token_pids "$token" | tr '\n' ' ')"; done
if [[ -z "${leftover// /}" ]]; then
  pass "no process of the job is left (server and test gone)"
else
  fail "processes of the job outlived Ctrl-C: $leftover"
fi
output="$(cat "$ITEST_DIR/kiln.out")"
expect_contains "$output" "[server] SERVER-UP" "the server's lines are shown under its id"
expect_contains "$output" "cancelling background step 'server': the job was cancelled" \
  "the background step is cancelled with the job"

write_workflow "$repo" ci.yml <<EOF
name: servers
on: push
jobs:
  out_of_time:
    runs-on: linux
    timeout-minutes: 0.05
    env:
      ITEST_MARKER: $marker-timeout
    steps:
      - id: server
        background: true
        run: sleep 302
      - wait: server
EOF
commit_all "$repo" "a job that runs out of time"
kiln run -C "$repo"
expect_rc 1 "a job out of time while it waits fails"
expect_contains "$OUT$ERR" "The job has exceeded its maximum execution time" "the log says the job ran out of time"
check "no process of the timed-out job is left" test -z "$(tokens_with_marker "$marker-timeout")"

itest_end
