#!/usr/bin/env bash
# Ctrl-C (SIGINT) on `kiln run`: the running step is stopped, `if: always()` steps still run,
# no job process is left, kiln exits 130 (128 + SIGINT, as shells report it) and the run is stored
# as cancelled.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin cancel

marker="cancel-test-$$-$RANDOM"
always_file="$ITEST_DIR/always-step-ran"
skipped_file="$ITEST_DIR/plain-step-ran"
repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" ci.yml <<EOF
name: cancellable
on: push
jobs:
  sleeper:
    runs-on: linux
    env:
      ITEST_MARKER: $marker
    steps:
      - name: Long sleep
        run: |
          echo "SLEEP-STARTING"
          sleep 300
      - name: Plain step
        run: touch "$skipped_file"
      - name: Clean-up step
        if: always()
        run: |
          echo "ALWAYS-STEP-RAN"
          echo "cancelled=\${{ cancelled() }}" > "$always_file"
  later:
    needs: sleeper
    runs-on: linux
    steps:
      - run: echo "LATER-JOB-RAN"
EOF
commit_all "$repo" "a workflow to cancel"

# A background command of a non-interactive shell starts with SIGINT ignored; kiln installs its
# own handler, so the signal still reaches it, as Ctrl-C would.
"$KILN" run -C "$repo" >"$ITEST_DIR/kiln.out" 2>&1 </dev/null &
kiln_pid=$!
itest_track_pid "$kiln_pid"

run_id_known() { grep -q '^kiln: .* (run [0-9]*)$' "$ITEST_DIR/kiln.out" 2>/dev/null; }
wait_until 20 run_id_known || itest_die "kiln run printed no run id within 20 s: $(cat "$ITEST_DIR/kiln.out")"
run_id="$(sed -n 's/^kiln: .* (run \([0-9]*\))$/\1/p' "$ITEST_DIR/kiln.out" | head -1)"

sleeping() { "$KILN" logs "$run_id" -C "$repo" 2>/dev/null | grep -q "SLEEP-STARTING"; }
wait_until 20 sleeping || itest_die "the step never started: $(cat "$ITEST_DIR/kiln.out")"
tokens="$(tokens_with_marker "$marker")"
for token in $tokens; do itest_track_token "$token"; done
[[ -n "$tokens" ]] || itest_die "no process of the sleeping step has the job token"
sleep_alive() {
  local token pid
  for token in $tokens; do
    for pid in $(token_pids "$token"); do
      [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == sleep ]] && return 0
    done
  done
  return 1
}
wait_until 10 sleep_alive || itest_die "the step's sleep process was not found"
pass "the step is sleeping (job token $tokens)"

kill -INT "$kiln_pid"
if wait_exit "$kiln_pid" 15; then
  pass "kiln exited within 15 s of SIGINT"
  if [[ $WAIT_RC -eq 130 ]]; then
    pass "kiln exited with code 130 after SIGINT"
  else
    fail "kiln exited with code $WAIT_RC after SIGINT, expected 130"
    sed 's/^/    | /' "$ITEST_DIR/kiln.out" | tail -20 >&2
  fi
else
  itest_die "kiln was still running 15 s after SIGINT"
fi

if [[ -f "$always_file" ]]; then
  pass "the if: always() step ran after the cancel"
  expect_contains "$(cat "$always_file")" "cancelled=true" "cancelled() was true in that step"
else
  fail "the if: always() step did not run after the cancel"
  sed 's/^/    | /' "$ITEST_DIR/kiln.out" | tail -20 >&2
fi
check "the step without if: always() did not run" test ! -e "$skipped_file"

leftover=""
for token in $tokens; do leftover+="$(token_pids "$token" | tr '\n' ' ')"; done
if [[ -z "${leftover// /}" ]]; then
  pass "no process with the job token is left (the sleep is gone)"
else
  fail "processes with the job token outlived the cancel: $leftover"
fi

output="$(cat "$ITEST_DIR/kiln.out")"
expect_not_contains "$output" "LATER-JOB-RAN" "the job that needs the cancelled one did not run"
expect_match "$output" "^  sleeper +cancelled" "the summary shows the job as cancelled"

kiln runs -C "$repo"
expect_match "$OUT" "^ *$run_id +cancelled +cancellable" "kiln runs shows the run as cancelled"
kiln runs -C "$repo" --json
expect_json 'd[0]["status"]' cancelled "kiln runs --json shows the run as cancelled"

kiln logs "$run_id" -C "$repo"
expect_contains "$OUT" "== sleeper (cancelled) ==" "kiln logs shows the job as cancelled"
if [[ -f "$always_file" ]]; then
  expect_contains "$OUT" "ALWAYS-STEP-RAN" "kiln logs has the always() step's output"
fi

itest_end
