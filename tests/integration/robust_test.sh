#!/usr/bin/env bash
# No input crashes kiln (issue 29): what a user or a job hands kiln that it cannot read fails
# with a located message (exit 2, or the job fails), never with an escaped library exception;
# and an exception that does escape fails only its job, as an infrastructure failure, while the
# run goes on and is recorded as finished.
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin robust

repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'EOF2'
name: robust
on: [push, pull_request]
jobs:
  boom:
    runs-on: linux
    steps:
      - run: echo "BOOM-NEVER-RUNS"
  fine:
    runs-on: linux
    steps:
      - run: echo "FINE-RAN"
  after:
    needs: fine
    runs-on: linux
    steps:
      - run: echo "AFTER-RAN"
EOF2
commit_all "$repo" "three jobs"

# ---- the job boundary ---------------------------------------------------------------------------
# KILN_TEST_THROW_IN_JOB makes one job throw where an escaped parser exception would.
KILN_TEST_THROW_IN_JOB=boom kiln run -C "$repo" --json
expect_rc 1 "a run with a job that threw exits 1 (a failed run), not 134 or 3"
expect_json 'sorted([j["job"], j["conclusion"]] for j in d["runs"][0]["jobs"])' \
  '[["after", "success"], ["boom", "failure"], ["fine", "success"]]' \
  "only the job that threw failed; the others ran to success"
expect_json '[j["reason"] for j in d["runs"][0]["jobs"] if j["job"] == "boom"][0].startswith("infrastructure failure: KILN_TEST_THROW_IN_JOB")' \
  true "the job's reason says infrastructure failure and what was thrown"
expect_contains "$ERR" "infrastructure failure" "the terminal log says so"
expect_not_contains "$ERR" "BOOM-NEVER-RUNS" "the job that threw ran no step"
run_id="$(json_eval "$ITEST_DIR/last.out" 'd["runs"][0]["id"]')"
kiln runs -C "$repo" --json
expect_json "[r['status'] for r in d if r['id'] == $run_id]" '["failure"]' \
  "the run is stored as failed (finished), not left running or interrupted"
kiln logs "$run_id" boom -C "$repo"
expect_contains "$OUT" "infrastructure failure" "kiln logs shows the job's infrastructure failure"

# ---- what a user hands kiln ---------------------------------------------------------------------
echo '{"pull_request": "not an object"}' >"$ITEST_DIR/event.json"
kiln run -C "$repo" --event pull_request --event-file "$ITEST_DIR/event.json"
expect_rc 2 "an event file of the wrong shape exits 2"
expect_contains "$ERR" "$ITEST_DIR/event.json: error: 'pull_request' must be an object, not string" \
  "the error names the file and the member"

printf 'GOOD=1\nexport TOKEN="no closing quote\n' >"$ITEST_DIR/secrets.env"
kiln run -C "$repo" --secret-file "$ITEST_DIR/secrets.env"
expect_rc 2 "a secret file with an unclosed quote exits 2"
expect_contains "$ERR" "$ITEST_DIR/secrets.env:2:14: error: the value's \" is not closed" \
  "the error is at FILE:LINE:COL"

echo '{"gpus": [{"vendor": "nvidia", "memory_mib": 1E400}]}' >"$ITEST_DIR/gpus.json"
kiln gpus --simulate-gpus "$ITEST_DIR/gpus.json"
expect_rc 2 "a simulated inventory with a number too large exits 2, not 3 'internal error'"
expect_contains "$ERR" "$ITEST_DIR/gpus.json: error: not valid JSON: number overflow" \
  "the error names the file"

itest_end
