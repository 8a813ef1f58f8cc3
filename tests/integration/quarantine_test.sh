#!/usr/bin/env bash
# Quarantined tests through the real binary (docs/failures.md "Quarantined tests"): a test that
# flips twice on one commit is quarantined by the flip rule (kiln.yml tests.quarantine); a job
# whose test step then fails only because of it is green with a warning and class `test` (the
# summary, --json, kiln report, the steps after it run); another failing test, or a later step
# failing with no test failure, keeps the job red (code); kiln tests release makes it red
# again; a quarantine by hand with a short --for ends when it expires. Bad kiln.yml keys and
# --for values are located errors, exit 2.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin quarantine

repo="$ITEST_DIR/repo"
make_repo "$repo"
ctl="$ITEST_DIR/ctl"
mkdir -p "$ctl"
# A test runner: the tests named in $CTL/fail fail; it exits 1 when one did, as pytest does.
cat >"$repo/fake_tests.py" <<'EOF_PY'
import os, sys
ctl = os.environ["CTL"]
failing = open(os.path.join(ctl, "fail")).read().split()
cases = []
for name in ["test_stable", "test_flaky", "test_real"]:
    body = '<failure message="boom">trace</failure>' if name in failing else ""
    cases.append(f'<testcase classname="tests.t" name="{name}" time="0.1">{body}</testcase>')
os.makedirs("reports", exist_ok=True)
open("reports/junit.xml", "w").write("<testsuite name=\"pytest\">" + "".join(cases) + "</testsuite>")
sys.exit(1 if failing else 0)
EOF_PY
write_workflow "$repo" ci.yml <<EOF_YML
name: CI
on: push
env:
  CTL: $ctl
jobs:
  unit:
    runs-on: [self-hosted, linux]
    steps:
      - uses: actions/checkout@v4
      - name: Run the tests
        run: python3 fake_tests.py
      - name: Lint
        run: |
          echo "lint ran"
          test ! -e "\$CTL/lint-fails"
EOF_YML
commit_all "$repo" "tests"
printf 'tests:\n  quarantine:\n    flips: 2\n    runs: 10\n    expires: 1h\n' >"$ITEST_DIR/kiln.yml"
export KILN_CONFIG="$ITEST_DIR/kiln.yml"

# run_with FAILING...: one `kiln run --json` with those tests failing; $RUN is its id.
run_with() {
  echo "$*" >"$ctl/fail"
  kiln run -C "$repo" --json
  RUN="$(json_eval - 'd["runs"][0]["id"]' 2>/dev/null || echo 0)"
}
job_is() { # CONCLUSION CLASS DESCRIPTION
  expect_json 'd["runs"][0]["jobs"][0]["conclusion"] + " " + str(d["runs"][0]["jobs"][0]["failure_class"])' "$1 $2" "$3"
}

# ---- the flip rule: failed, passed, failed on one commit: quarantined ---------------------------
run_with test_flaky
expect_rc 1 "a failing test fails the job"
job_is failure code "red, class code, before any quarantine"
run_with
expect_rc 0 "the test passes on a re-run of the commit (one flip)"
kiln tests list -C "$repo" --json
expect_json 'd["quarantined"]' '[]' "one flip of two: not quarantined yet"
expect_json '[f["test"] for f in d["flaky"]]' '["tests.t::test_flaky"]' "kiln tests list shows it flaky"
run_with test_flaky
expect_rc 1 "the second flip's run is still red: the quarantine starts after it"
log="$("$KILN" logs -C "$repo" "$RUN" unit 2>&1)"
expect_contains "$log" "Test tests.t::test_flaky is quarantined until" "the job's log says the test was quarantined"
kiln tests list -C "$repo" --json
expect_json '[(q["test"], q["by"]) for q in d["quarantined"]]' '[["tests.t::test_flaky", "flips"]]' "quarantined by the flip rule"
expect_json 'd["quarantined"][0]["reason"].startswith("flipped 2 times in its last 3 results")' true "with why"
expect_json 'd["quarantined"][0]["expires_at"] > d["quarantined"][0]["since"]' true "and until when"

# ---- only the quarantined test fails: green, with a warning and class test ----------------------
run_with test_flaky
expect_rc 0 "only the quarantined test failed: the run passes"
job_is success test "the job is green with class test"
expect_json 'd["runs"][0]["jobs"][0]["failure_evidence"]' "only quarantined tests failed: tests.t::test_flaky" "the evidence names the test"
expect_json '[(s["name"], s["outcome"], s["conclusion"]) for s in d["runs"][0]["jobs"][0]["steps"]][1:]' \
  '[["Run the tests", "failure", "success"], ["Lint", "success", "success"]]' "the test step's outcome stays failure; the next step ran"
green_run="$RUN"
kiln run -C "$repo"
expect_rc 0 "the same without --json"
expect_contains "$OUT" "WARNING unit: passed with quarantined tests failing" "the summary warns"
expect_contains "$OUT" "class test: only quarantined tests failed: tests.t::test_flaky" "the summary shows class test"
kiln report -C "$repo" "$green_run" --format json
expect_json 'd["jobs"][0]["failure_class"]' test "kiln report --format json: class test"
expect_json '[(q["test"], q["failed_in"]) for q in d["tests"]["quarantined_tests"]]' '[["tests.t::test_flaky", ["unit"]]]' "the report lists the quarantined test, failed here"
expect_json '[f["quarantined"] for f in d["tests"]["failures"]]' '[true]' "its failure is marked quarantined"
kiln report -C "$repo" "$green_run"
expect_contains "$OUT" "class test: only quarantined tests failed" "kiln report (text): class test"
expect_contains "$OUT" "QUARANTINED" "kiln report (text) lists quarantined tests"
expect_contains "$OUT" "tests.t::test_flaky (failed, quarantined)" "and marks the failure"

# ---- anything else failing stays red -----------------------------------------------------------
run_with test_flaky test_real
expect_rc 1 "another test failing too: red"
job_is failure code "class code"
touch "$ctl/lint-fails"
run_with test_flaky
expect_rc 1 "a later step failing with no test failure: red (the earlier step's JUnit file does not excuse it)"
job_is failure code "class code"
expect_json 'd["runs"][0]["jobs"][0]["failure"]["step"]' Lint "the failing step is Lint"
rm "$ctl/lint-fails"

# ---- release: red again -----------------------------------------------------------------------
kiln tests release -C "$repo" tests.t::test_flaky
expect_rc 0 "kiln tests release"
expect_contains "$OUT" "tests.t::test_flaky is released" "says so"
run_with test_flaky
expect_rc 1 "released: its failure fails the job again"
job_is failure code "class code"
kiln tests release -C "$repo" tests.t::test_flaky
expect_rc 2 "releasing a test that is not quarantined is bad input"
expect_contains "$ERR" "is not quarantined" "and says so"

# ---- by hand, with a short expiry -------------------------------------------------------------
kiln tests quarantine -C "$repo" tests.t::test_real --for 15s --reason "issue 99: flaky on H200"
expect_rc 0 "kiln tests quarantine NAME --for 15s --reason TEXT"
kiln tests list -C "$repo"
expect_contains "$OUT" "tests.t::test_real  until" "kiln tests list shows it"
expect_contains "$OUT" "(manual: issue 99: flaky on H200)" "with its reason"
run_with test_real
expect_rc 0 "quarantined by hand: its failure alone does not fail the job"
job_is success test "green, class test"
not_quarantined() {
  kiln tests list -C "$repo" --json
  [[ "$(json_eval - '[q["test"] for q in d["quarantined"]]')" == "[]" ]]
}
check "the quarantine expires" wait_until 60 not_quarantined
run_with test_real
expect_rc 1 "expired: its failure fails the job again"
job_is failure code "class code"

# ---- bad input --------------------------------------------------------------------------------
kiln tests quarantine -C "$repo" tests.t::test_real --for soon
expect_rc 2 "--for soon is bad input"
printf 'tests:\n  quarantine:\n    flipz: 2\n' >"$ITEST_DIR/bad.yml"
KILN_CONFIG="$ITEST_DIR/bad.yml" kiln run -C "$repo"
expect_rc 2 "an unknown tests.quarantine key is bad input"
expect_contains "$ERR" "bad.yml:3:5" "located"
expect_contains "$ERR" "unknown key 'flipz'" "named"

itest_end
