#!/usr/bin/env bash
# kiln run, runs and logs on a real repository: exit codes, the summary, --json, the stored
# runs and logs, --dry-run, --max-parallel, and a clean `git status` afterwards.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin run

repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" pass.yml <<'EOF'
name: passing
on: push
jobs:
  build:
    runs-on: [self-hosted, linux]
    steps:
      - name: Say hello
        run: echo "BUILD-STEP-OUTPUT run $KILN_RUN_ID"
  test:
    needs: build
    runs-on: [self-hosted, linux]
    steps:
      - run: echo "TEST-STEP-OUTPUT"
EOF
write_workflow "$repo" fail.yml <<'EOF'
name: failing
on: push
jobs:
  broken:
    runs-on: linux
    steps:
      - run: |
          echo "ABOUT-TO-FAIL"
          exit 7
      - run: echo "NEVER-PRINTED"
EOF
commit_all "$repo" "two workflows"
pass_wf="$repo/.github/workflows/pass.yml"
fail_wf="$repo/.github/workflows/fail.yml"

# run_id_of_last: the run id from the "kiln: NAME (run N)" line of the last `kiln run`.
run_id_of_last() { sed -n 's/^kiln: .* (run \([0-9]*\))$/\1/p' <<<"$OUT$ERR" | head -1; }

# ---- a passing run ----------------------------------------------------------------------------
kiln run -C "$repo" -W "$pass_wf"
expect_rc 0 "a passing workflow exits 0"
run_pass="$(run_id_of_last)"
[[ -n "$run_pass" ]] || itest_die "no 'kiln: ... (run N)' line in the output of kiln run"
expect_contains "$OUT" "BUILD-STEP-OUTPUT run $run_pass" "the step output is shown, with KILN_RUN_ID"
expect_match "$OUT" "^  build +success " "the summary table names job build as success"
expect_match "$OUT" "^  test +success " "the summary table names job test as success"
expect_match "$OUT" "passing — run $run_pass success" "the summary names the run and its result"

# ---- a failing run ----------------------------------------------------------------------------
kiln run -C "$repo" -W "$fail_wf"
expect_rc 1 "a failing job makes kiln run exit 1"
run_fail="$(run_id_of_last)"
expect_match "$OUT" "^  broken +failure " "the summary names the failed job"
expect_contains "$OUT" "ABOUT-TO-FAIL" "the failing step's output is shown"
expect_not_contains "$OUT" "NEVER-PRINTED" "the step after a failed one did not run"

# ---- --json -----------------------------------------------------------------------------------
kiln run -C "$repo" -W "$pass_wf" --json
expect_rc 0 "kiln run --json exits 0"
if json_eval - 'd' >/dev/null 2>&1; then
  pass "kiln run --json prints JSON (and only JSON) on stdout"
else
  fail "kiln run --json prints JSON on stdout"
  show_last
fi
run_json="$(json_eval - 'd["runs"][0]["id"]' 2>/dev/null || true)"
expect_json 'd["exit_code"]' 0 "the JSON has exit_code 0"
expect_json 'len(d["runs"])' 1 "the JSON has one run"
expect_json 'sorted(j["job"] for j in d["runs"][0]["jobs"])' '["build", "test"]' \
  "runs[0].jobs names build and test"
expect_json 'all(j["conclusion"] == "success" for j in d["runs"][0]["jobs"])' true \
  "every job of runs[0] succeeded"
expect_json '[j["job"] for j in d["runs"][0]["jobs"] if j["order"] > 0]' '["build", "test"]' \
  "build finished before test (needs)"
expect_contains "$ERR" "BUILD-STEP-OUTPUT" "with --json the job output goes to stderr"

kiln run -C "$repo" -W "$fail_wf" --json
expect_rc 1 "kiln run --json of a failing workflow exits 1"
expect_json 'd["runs"][0]["jobs"][0]["conclusion"]' failure "the JSON says the job failed"
expect_json 'd["runs"][0]["jobs"][0]["steps"][0]["exit_code"]' 7 "the JSON has the step's exit code"
run_fail_json="$(json_eval - 'd["runs"][0]["id"]' 2>/dev/null || true)"

# ---- kiln runs --------------------------------------------------------------------------------
kiln runs -C "$repo"
expect_rc 0 "kiln runs exits 0"
ids="$(awk 'NR > 1 {print $1}' <<<"$OUT" | tr '\n' ' ')"
want="$run_fail_json $run_json $run_fail $run_pass "
if [[ "$ids" == "$want" ]]; then
  pass "kiln runs lists the four runs newest first ($ids)"
else
  fail "kiln runs lists the runs newest first: expected ids '$want', got '$ids'"
  show_last
fi
expect_match "$OUT" "^ *$run_pass +success +passing" "kiln runs shows the passing run as success"
expect_match "$OUT" "^ *$run_fail +failure +failing" "kiln runs shows the failing run as failure"

kiln runs -C "$repo" --json
expect_rc 0 "kiln runs --json exits 0"
expect_json '[r["id"] for r in d]' "[$run_fail_json, $run_json, $run_fail, $run_pass]" \
  "kiln runs --json lists the runs newest first"
expect_json '[r["status"] for r in d]' '["failure", "success", "failure", "success"]' \
  "kiln runs --json has each run's status"
expect_json 'all(r["finished_at"] >= r["started_at"] > 0 for r in d)' true \
  "every finished run has start and finish times"

# ---- kiln logs --------------------------------------------------------------------------------
kiln logs "$run_pass" -C "$repo"
expect_rc 0 "kiln logs RUN exits 0"
expect_contains "$OUT" "BUILD-STEP-OUTPUT run $run_pass" "kiln logs RUN has build's step output"
expect_contains "$OUT" "TEST-STEP-OUTPUT" "kiln logs RUN has test's step output"
expect_contains "$OUT" "Say hello" "kiln logs RUN names the step"

kiln logs "$run_pass" test -C "$repo"
expect_rc 0 "kiln logs RUN JOB exits 0"
expect_contains "$OUT" "TEST-STEP-OUTPUT" "kiln logs RUN test has test's output"
expect_not_contains "$OUT" "BUILD-STEP-OUTPUT" "kiln logs RUN test leaves out build's output"

kiln logs "$run_fail" -C "$repo"
expect_contains "$OUT" "ABOUT-TO-FAIL" "kiln logs of the failed run has its output"

kiln logs "$run_pass" no-such-job -C "$repo"
expect_rc 2 "kiln logs RUN with an unknown job is bad input"

kiln logs 9999 -C "$repo"
expect_rc 2 "kiln logs of an unknown run is bad input"
expect_contains "$ERR" "9999" "the message names the run"

# ---- --dry-run --------------------------------------------------------------------------------
dry_marker="$ITEST_DIR/dry-run-created-this"
write_workflow "$repo" dry.yml <<EOF
name: dry
on: push
jobs:
  make-file:
    runs-on: [self-hosted, linux]
    steps:
      - name: Create a file
        run: touch "$dry_marker"
  after:
    needs: make-file
    runs-on: linux
    steps:
      - run: echo after
EOF
commit_all "$repo" "a dry-run workflow"
kiln run -C "$repo" -W "$repo"/.github/workflows/dry.yml --dry-run --json
expect_rc 0 "kiln run --dry-run --json exits 0"
expect_json '[j["id"] for j in d["workflows"][0]["jobs"]]' '["make-file", "after"]' \
  "the plan lists both jobs"
expect_json 'd["workflows"][0]["jobs"][1]["needs"]' '["make-file"]' "the plan has the needs"
expect_json 'd["workflows"][0]["jobs"][0]["steps"]' '["Create a file"]' "the plan lists the steps"
expect_json 'd["event"]["name"]' push "the plan's event is push"
check "--dry-run ran no step (the file was not created)" test ! -e "$dry_marker"
kiln runs -C "$repo" --json
expect_json 'len(d)' 4 "--dry-run added no run to kiln runs"

kiln run -C "$repo" -W "$repo"/.github/workflows/dry.yml --dry-run
expect_rc 0 "kiln run --dry-run (text) exits 0"
expect_contains "$OUT" "job after (needs make-file)" "the text plan shows the needs"
check "--dry-run (text) ran no step either" test ! -e "$dry_marker"

# ---- --max-parallel 1 -------------------------------------------------------------------------
# Two independent jobs write start and end times (ns) outside the workspace.
times="$ITEST_DIR/times"
mkdir -p "$times"
write_workflow "$repo" parallel.yml <<EOF
name: parallel
on: push
jobs:
  left:
    runs-on: linux
    steps:
      - run: |
          date +%s%N > "$times/\$TIMES_TAG-left.start"
          sleep 1
          date +%s%N > "$times/\$TIMES_TAG-left.end"
  right:
    runs-on: linux
    steps:
      - run: |
          date +%s%N > "$times/\$TIMES_TAG-right.start"
          sleep 1
          date +%s%N > "$times/\$TIMES_TAG-right.end"
EOF
commit_all "$repo" "two independent jobs"

intervals_overlap() {
  local ls le rs re
  ls="$(cat "$times/$1-left.start")" le="$(cat "$times/$1-left.end")"
  rs="$(cat "$times/$1-right.start")" re="$(cat "$times/$1-right.end")"
  [[ $ls -lt $re && $rs -lt $le ]]
}

TIMES_TAG=serial kiln run -C "$repo" -W "$repo"/.github/workflows/parallel.yml --max-parallel 1
expect_rc 0 "kiln run --max-parallel 1 exits 0"
if [[ -s "$times/serial-left.end" && -s "$times/serial-right.end" ]]; then
  if intervals_overlap serial; then
    fail "--max-parallel 1 serialises two independent jobs: their run times overlap"
  else
    pass "--max-parallel 1 serialises two independent jobs"
  fi
else
  fail "the jobs of the --max-parallel 1 run wrote no times"
  show_last
fi

# Without the limit the same jobs do overlap: the check above can see parallel jobs. Each job
# waits (up to 20 s) for the other to start, so this does not depend on timing.
write_workflow "$repo" rendezvous.yml <<EOF
name: rendezvous
on: push
jobs:
  left:
    runs-on: linux
    steps:
      - run: |
          touch "$times/rv-left"
          for i in \$(seq 200); do [ -e "$times/rv-right" ] && exit 0; sleep 0.1; done
          echo "right never started while left ran"; exit 1
  right:
    runs-on: linux
    steps:
      - run: |
          touch "$times/rv-right"
          for i in \$(seq 200); do [ -e "$times/rv-left" ] && exit 0; sleep 0.1; done
          echo "left never started while right ran"; exit 1
EOF
commit_all "$repo" "two jobs that meet"
kiln run -C "$repo" -W "$repo"/.github/workflows/rendezvous.yml --max-parallel 2
expect_rc 0 "with --max-parallel 2 two independent jobs run at the same time"

# ---- .kiln/ stays out of git status -----------------------------------------------------------
check ".kiln/kiln.db exists in the repository" test -f "$repo/.kiln/kiln.db"
status="$(git -C "$repo" status --porcelain)"
if [[ -z "$status" ]]; then
  pass "git status --porcelain is empty after the runs (.kiln/ is ignored)"
else
  fail "git status --porcelain is not empty after the runs:"
  sed 's/^/    | /' <<<"$status" >&2
fi

# A repository whose first kiln command runs no job still gets its .kiln/ ignored.
fresh="$ITEST_DIR/fresh"
make_repo "$fresh"
kiln runs -C "$fresh"
expect_rc 0 "kiln runs in a repository without runs exits 0"
expect_contains "$OUT" "no runs yet" "kiln runs says there are no runs"
status="$(git -C "$fresh" status --porcelain)"
if [[ -z "$status" ]]; then
  pass "git status stays empty after kiln runs in a fresh repository"
else
  fail "kiln runs in a fresh repository creates .kiln/ without ignoring it (git status: $status)"
fi

# ---- groups on the terminal -------------------------------------------------------------------
# A step's lines are printed a block at a time (those of one read of its pipes: cat writes them
# with one write); a group's lines are indented inside the block.
groups="$ITEST_DIR/groups"
make_repo "$groups"
write_workflow "$groups" groups.yml <<'EOF'
on: push
jobs:
  grouped:
    runs-on: linux
    steps:
      - run: |
          printf '%s\n' before '::group::One' inside-one '::endgroup::' between '::group::Two' \
            inside-two '::endgroup::' after >lines.txt
          cat lines.txt
EOF
commit_all "$groups" "a step printing two groups in one write"
kiln run -C "$groups"
expect_rc 0 "the step with groups succeeds"
expect_match "$OUT" '^\[grouped\] before$' "a line before the groups is not indented"
expect_match "$OUT" '^\[grouped\] ▼ One$' "a group's title is not indented"
expect_match "$OUT" '^\[grouped\]   inside-one$' "a line inside the first group is indented"
expect_match "$OUT" '^\[grouped\] between$' "a line between the groups is not indented"
expect_match "$OUT" '^\[grouped\]   inside-two$' "a line inside the second group is indented"
expect_match "$OUT" '^\[grouped\] after$' "a line after the groups is not indented"

itest_end
