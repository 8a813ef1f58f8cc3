#!/usr/bin/env bash
# kill -9 of a running `kiln run`: the log lines printed so far are in the store, and the run is
# shown as interrupted (never as running) by the next kiln command. Job processes cannot be
# cleaned up by a process that was SIGKILLed; what survives is reported and killed here, by
# its KILN_JOB_TOKEN, so the test itself leaks nothing.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin crash

marker="crash-test-$$-$RANDOM"
repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" slow.yml <<EOF
name: slow
on: push
jobs:
  sleeper:
    runs-on: linux
    env:
      ITEST_MARKER: $marker
    steps:
      - name: Print and sleep
        run: |
          echo "MARKER-BEFORE-SLEEP"
          sleep 300
          echo "MARKER-AFTER-SLEEP"
EOF
write_workflow "$repo" quick.yml <<'EOF'
name: quick
on: push
jobs:
  fast:
    runs-on: linux
    steps:
      - run: echo "QUICK-RUN-OUTPUT"
EOF
commit_all "$repo" "a slow and a quick workflow"

"$KILN" run -C "$repo" -W "$repo"/.github/workflows/slow.yml >"$ITEST_DIR/kiln.out" 2>&1 </dev/null &
kiln_pid=$!
itest_track_pid "$kiln_pid"

# The run id, from kiln's first line.
run_id_known() { grep -q '^kiln: .* (run [0-9]*)$' "$ITEST_DIR/kiln.out" 2>/dev/null; }
wait_until 20 run_id_known || itest_die "kiln run printed no run id within 20 s: $(cat "$ITEST_DIR/kiln.out")"
run_id="$(sed -n 's/^kiln: .* (run \([0-9]*\))$/\1/p' "$ITEST_DIR/kiln.out" | head -1)"
pass "kiln run started run $run_id"

# Wait until the marker line is in the store: the step is now sleeping.
marker_logged() {
  "$KILN" logs "$run_id" -C "$repo" 2>/dev/null | grep -q "MARKER-BEFORE-SLEEP"
}
if wait_until 20 marker_logged; then
  pass "the step's first line is in kiln logs while the step runs"
else
  itest_die "the marker line never reached kiln logs: $(cat "$ITEST_DIR/kiln.out")"
fi

tokens="$(tokens_with_marker "$marker")"
for token in $tokens; do itest_track_token "$token"; done
if [[ "$(wc -w <<<"$tokens")" -eq 1 ]]; then
  pass "the running step has one KILN_JOB_TOKEN ($tokens)"
else
  fail "expected one job token among the step's processes, found: '$tokens'"
fi

kiln runs -C "$repo" --json
expect_json 'd[0]["status"]' running "a live run is shown as running (not judged dead)"

# ---- kill -9 ----------------------------------------------------------------------------------
kill -9 "$kiln_pid"
if wait_exit "$kiln_pid" 10; then
  if [[ $WAIT_RC -eq 137 ]]; then pass "kiln died of SIGKILL"; else fail "kiln exited with $WAIT_RC, not by SIGKILL"; fi
else
  itest_die "kiln survived kill -9 for 10 s"
fi

kiln runs -C "$repo"
expect_rc 0 "kiln runs after the crash exits 0"
expect_match "$OUT" "^ *$run_id +interrupted +slow" "kiln runs shows the killed run as interrupted"
kiln runs -C "$repo" --json
expect_json "[r['status'] for r in d if r['id'] == $run_id]" '["interrupted"]' \
  "kiln runs --json shows the killed run as interrupted"
expect_json "all(r['finished_at'] > 0 for r in d if r['id'] == $run_id)" true \
  "the interrupted run got a finish time"

kiln logs "$run_id" -C "$repo"
expect_rc 0 "kiln logs of the interrupted run exits 0"
expect_contains "$OUT" "MARKER-BEFORE-SLEEP" "kiln logs still has the line printed before the crash"
expect_not_contains "$OUT" "MARKER-AFTER-SLEEP" "nothing after the sleep was logged"
expect_contains "$OUT" "== sleeper (interrupted) ==" "the job is shown as interrupted"

# ---- what happened to the step's processes ----------------------------------------------------
# A SIGKILLed kiln cannot clean up itself: its watchdog (exec::start_orphan_reaper) kills the
# job's processes. Wait for that, bounded; anything left is a leak.
survivors=""
for _ in $(seq 1 100); do
  survivors=""
  for token in $tokens; do
    for pid in $(token_pids "$token"); do
      survivors+=" $pid($(cat "/proc/$pid/comm" 2>/dev/null || echo '?'))"
    done
  done
  [[ -z "$survivors" ]] && break
  sleep 0.1
done
if [[ -z "$survivors" ]]; then
  pass "no job process outlived kill -9 of kiln (its watchdog killed them)"
else
  fail "after kill -9 of kiln the job's processes outlived it:$survivors"
  for token in $tokens; do itest_kill_token "$token" >/dev/null; done
fi
gone() {
  local token
  for token in $tokens; do [[ -z "$(token_pids "$token")" ]] || return 1; done
}
if wait_until 5 gone; then
  pass "no process with the job's token is left after the test's clean-up"
else
  fail "processes with the job's token are still alive after SIGKILL"
fi

# ---- the next run in the same repository ------------------------------------------------------
kiln run -C "$repo" -W "$repo"/.github/workflows/quick.yml
expect_rc 0 "the next kiln run in the same repository succeeds"
expect_contains "$OUT" "QUICK-RUN-OUTPUT" "the next run ran its job"
kiln runs -C "$repo" --json
expect_json "[r['status'] for r in d]" '["success", "interrupted"]' \
  "after the next run: the new run succeeded and the killed one is still interrupted"
expect_json "any(r['status'] == 'running' for r in d)" false "no run is shown as running"

# ---- kill -9 in the middle of a step printing as fast as it can --------------------------------
# Lines reach the store in batches (store/log_journal.h); each is journaled before it is shown.
# Every line kiln printed before it died must be in kiln logs afterwards.
fast="$ITEST_DIR/fast"
make_repo "$fast"
write_workflow "$fast" flood.yml <<'EOF'
on: push
jobs:
  flood:
    runs-on: linux
    steps:
      - run: i=0; while :; do echo "FLOOD-$i"; i=$((i+1)); done
EOF
commit_all "$fast" "a step printing lines without end"
"$KILN" run -C "$fast" >"$ITEST_DIR/flood.out" 2>&1 </dev/null &
flood_pid=$!
itest_track_pid "$flood_pid"
many_shown() { [[ "$(grep -c '^\[flood\] FLOOD-' "$ITEST_DIR/flood.out" 2>/dev/null)" -gt 20000 ]]; }
wait_until 60 many_shown || itest_die "the flood step printed too little: $(tail -3 "$ITEST_DIR/flood.out")"
kill -9 "$flood_pid"
wait_exit "$flood_pid" 10 || itest_die "kiln survived kill -9 for 10 s"
# The lines of FILE shown complete with PREFIX, without it: a block of lines is printed with one
# write, which kill -9 may cut, so whatever follows the last newline does not count as shown.
shown_lines() {
  python3 - "$1" "$2" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
for line in data[: data.rfind(b"\n") + 1].decode(errors="replace").splitlines():
    if line.startswith(sys.argv[2]):
        print(line[len(sys.argv[2]):])
PY
}
shown_lines "$ITEST_DIR/flood.out" "[flood] " | grep '^FLOOD-' >"$ITEST_DIR/flood.shown"
shown="$(wc -l <"$ITEST_DIR/flood.shown")"
last_shown="$(tail -1 "$ITEST_DIR/flood.shown")"
flood_run="$(sed -n 's/^kiln: .* (run \([0-9]*\))$/\1/p' "$ITEST_DIR/flood.out" | head -1)"
"$KILN" logs "$flood_run" flood -C "$fast" >"$ITEST_DIR/flood.logs" 2>&1
stored="$(grep -c '^FLOOD-' "$ITEST_DIR/flood.logs")"
if [[ "$stored" -ge "$shown" ]] && grep -qx -- "$last_shown" "$ITEST_DIR/flood.logs"; then
  pass "all $shown lines shown before kill -9 are in kiln logs ($stored stored, the last shown: $last_shown)"
else
  fail "kiln showed $shown lines (the last: $last_shown) but kiln logs has $stored"
fi
if [[ -z "$(ls -A "$fast/.kiln/kiln.db.journal" 2>/dev/null)" ]]; then
  pass "the dead kiln's journal was imported and removed"
else
  fail "a journal is left: $(ls "$fast/.kiln/kiln.db.journal")"
fi

# ---- kill -9 in the middle of a step printing thousands of lines a read -----------------------
# The lines of one read of the step's pipes are journaled with one write() and then printed with
# one write (issue 22): a block of thousands of lines is shown only once it is durable. The step
# writes 4,000 lines at a time (about 50 KB, most of a pipe). kill -9 may land inside the terminal
# write of a block (shown_lines above): each complete line shown must be in kiln logs.
blocks="$ITEST_DIR/blocks"
make_repo "$blocks"
write_workflow "$blocks" blocks.yml <<'EOF'
on: push
jobs:
  blocks:
    runs-on: linux
    steps:
      - run: |
          python3 -c '
          import itertools, sys
          for start in itertools.count(0, 4000):
              sys.stdout.write("".join("BLOCK-%d\n" % i for i in range(start, start + 4000)))
          '
EOF
commit_all "$blocks" "a step printing blocks of 4,000 lines without end"
"$KILN" run -C "$blocks" >"$ITEST_DIR/blocks.out" 2>&1 </dev/null &
blocks_pid=$!
itest_track_pid "$blocks_pid"
many_blocks() { [[ "$(grep -c '^\[blocks\] BLOCK-' "$ITEST_DIR/blocks.out" 2>/dev/null)" -gt 200000 ]]; }
wait_until 120 many_blocks || itest_die "the block step printed too little: $(tail -c 300 "$ITEST_DIR/blocks.out")"
kill -9 "$blocks_pid"
wait_exit "$blocks_pid" 10 || itest_die "kiln survived kill -9 for 10 s"
shown_lines "$ITEST_DIR/blocks.out" "[blocks] " | grep '^BLOCK-' >"$ITEST_DIR/blocks.shown"
blocks_run="$(sed -n 's/^kiln: .* (run \([0-9]*\))$/\1/p' "$ITEST_DIR/blocks.out" | head -1)"
"$KILN" logs "$blocks_run" blocks -C "$blocks" 2>&1 | grep '^BLOCK-' >"$ITEST_DIR/blocks.logs"
shown="$(wc -l <"$ITEST_DIR/blocks.shown")"
stored="$(wc -l <"$ITEST_DIR/blocks.logs")"
missing="$(LC_ALL=C sort "$ITEST_DIR/blocks.shown" | LC_ALL=C comm -23 - <(LC_ALL=C sort "$ITEST_DIR/blocks.logs") | wc -l)"
if [[ "$missing" -eq 0 && "$stored" -ge "$shown" ]]; then
  pass "every one of the $shown lines shown in blocks before kill -9 is in kiln logs ($stored stored)"
else
  fail "of the $shown lines shown in blocks before kill -9, $missing are not in kiln logs ($stored stored)"
fi

itest_end
