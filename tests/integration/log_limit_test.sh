#!/usr/bin/env bash
# kiln.yml jobs.max_log_size through the real binary: with a 4 KiB limit, a job printing 20 KB
# keeps its first lines only; the later ones are counted, not stored (kiln logs) or shown (the
# terminal), the log says where the limit was reached and how many lines were dropped, the count
# is in `kiln run --json` and `kiln report --format json`, and the job's conclusion is what its
# steps made it (success, or failure with its exit code's line still in the log). A job under the
# limit drops nothing. Bad values are errors at FILE:LINE:COL, exit 2.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin log_limit

repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" limit.yml <<'EOF'
name: limit
on: push
jobs:
  chatty:
    runs-on: linux
    steps:
      # 2000 lines of 10 bytes (with the newline): 20,000 bytes, past the 4 KiB limit.
      - run: for i in $(seq -w 0 1999); do echo "line-$i"; done
      - run: echo "AFTER-THE-LIMIT"
  failing:
    runs-on: linux
    steps:
      - run: |
          for i in $(seq -w 0 1999); do echo "fail-$i"; done
          exit 3
  quiet:
    runs-on: linux
    steps:
      - run: echo "QUIET-LINE"
EOF
commit_all "$repo" "a chatty, a failing and a quiet job"
printf 'jobs:\n  max_log_size: 4K\n' >"$ITEST_DIR/kiln.yml"

kiln run -C "$repo" --config "$ITEST_DIR/kiln.yml" --json
expect_rc 1 "the run fails only because the failing job's step exits 3"
job_json() { printf '[j for j in d["runs"][0]["jobs"] if j["job"] == "%s"][0]["%s"]' "$1" "$2"; }
expect_json "$(job_json chatty conclusion)" success "the chatty job still succeeds"
expect_json "$(job_json failing conclusion)" failure "the failing job still fails"
expect_json "$(job_json quiet conclusion)" success "the quiet job succeeds"
expect_json "$(job_json quiet log_dropped_lines)" 0 "the quiet job dropped no line"
chatty_dropped="$(json_eval - "$(job_json chatty log_dropped_lines)")"
failing_dropped="$(json_eval - "$(job_json failing log_dropped_lines)")"
expect_json "$(job_json chatty log_dropped_bytes)" "$(((chatty_dropped - 1) * 10 + 16))" \
  "kiln run --json has the dropped bytes (10 a line, 16 for AFTER-THE-LIMIT)"
expect_not_contains "$ERR" "line-1999" "the terminal does not show a line past the limit"
expect_contains "$ERR" "line-0000" "the terminal shows the first lines"
expect_contains "$ERR" "reached its size limit of 4 KiB (kiln.yml jobs.max_log_size)" \
  "the terminal says where the limit was reached"
run_id="$(json_eval - 'd["runs"][0]["id"]')"

kiln logs "$run_id" chatty -C "$repo"
expect_rc 0 "kiln logs RUN chatty exits 0"
chatty_log="$OUT"
stored="$(grep -c '^line-' <<<"$chatty_log" || true)"
check "kiln logs keeps the first lines (line-0000 .. line-$((stored - 1)), $stored in all)" \
  test "$stored" -gt 100 -a "$stored" -lt 410
expect_eq "$((stored + chatty_dropped))" 2001 "every line printed is either stored or counted as dropped"
expect_not_contains "$chatty_log" "line-1999" "kiln logs has no line past the limit"
expect_not_contains "$chatty_log" "AFTER-THE-LIMIT" "a later step's lines past the limit are dropped too"
expect_contains "$chatty_log" "The job's log reached its size limit of 4 KiB" \
  "kiln logs has the notice where the limit was reached"
expect_contains "$chatty_log" \
  "$chatty_dropped lines (" "kiln logs says how many lines were dropped"
expect_contains "$chatty_log" "past the job's log size limit of 4 KiB were not stored or shown" \
  "the count line names the limit"
notices="$(grep -c "past the job's log size limit" <<<"$chatty_log" || true)"
expect_eq "$notices" 1 "the count is said once"

kiln logs "$run_id" failing -C "$repo"
expect_contains "$OUT" "Process completed with exit code 3." \
  "the failing job's exit code line is kept past the limit"
expect_contains "$OUT" "$failing_dropped lines (" "the failing job's log says how many were dropped"
expect_not_contains "$OUT" "fail-1999" "the failing job's late lines are not stored"

kiln logs "$run_id" quiet -C "$repo"
expect_contains "$OUT" "QUIET-LINE" "the quiet job's line is stored"
expect_not_contains "$OUT" "size limit" "the quiet job's log has no notice"

kiln report "$run_id" -C "$repo" --format json
expect_json '[j for j in d["jobs"] if j["key"] == "chatty"][0]["log_dropped_lines"]' \
  "$chatty_dropped" "kiln report --format json has the dropped lines"
expect_json '[j for j in d["jobs"] if j["key"] == "quiet"][0]["log_dropped_lines"]' 0 \
  "kiln report has 0 for a job under the limit"

# ---- bad values ---------------------------------------------------------------------------------
for value in lots 1.5G 0 -1; do
  printf 'jobs:\n  max_log_size: %s\n' "$value" >"$ITEST_DIR/bad.yml"
  kiln run -C "$repo" --config "$ITEST_DIR/bad.yml"
  expect_rc 2 "max_log_size: $value is refused"
  expect_contains "$ERR" "$ITEST_DIR/bad.yml:2:17: error: jobs.max_log_size: " \
    "max_log_size: $value: the error says FILE:LINE:COL"
done

itest_end
