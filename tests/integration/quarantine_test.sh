#!/usr/bin/env bash
# Quarantined tests through the real binary (docs/failures.md "Quarantined tests"): a test that
# flips twice on one commit is quarantined by the flip rule (kiln.yml tests.quarantine); a job
# whose test step then fails only because of it is green with a warning and class `test` (the
# summary, --json, kiln report, the steps after it run); another failing test, or a later step
# failing with no test failure, keeps the job red (code); kiln tests release makes it red
# again; a quarantine by hand with a short --for ends when it expires; a GPU job whose GPU
# reports an Xid is red (gpu-fault) though only a quarantined test failed. Bad kiln.yml keys and
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

# ---- a GPU fault after the tests: not excused -------------------------------------------------
# A GPU job whose only failing test is quarantined is green, unless its GPU reports an Xid (the
# simulated provider injects one once the step touches the flag): then it is red, gpu-fault.
gpurepo="$ITEST_DIR/gpurepo"
make_repo "$gpurepo"
cp "$repo/fake_tests.py" "$gpurepo/"
flags="$ITEST_DIR/flags"
mkdir -p "$flags"
python3 - "$ITEST_DIR/gpus.json" "$flags" <<'EOF_PY'
import json, sys
uuid = "GPU-sim-000000000000"
json.dump({"gpus": [{"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90",
                     "memory_mib": 143771, "uuid": uuid,
                     "inject": {"when": f"{sys.argv[2]}/xid-{uuid}",
                                "faults": ["Xid 79: GPU has fallen off the bus"]}}]},
          open(sys.argv[1], "w"))
EOF_PY
write_workflow "$gpurepo" gpu.yml <<EOF_YML
name: GPU
on: push
env:
  CTL: $ctl
jobs:
  gpu-unit:
    runs-on: [self-hosted, gpu]
    steps:
      - uses: actions/checkout@v4
      - name: Run the tests
        run: |
          if [ -e "\$CTL/xid" ]; then touch "$flags/xid-\$KILN_GPU_UUIDS"; fi
          python3 fake_tests.py
EOF_YML
commit_all "$gpurepo" "gpu tests"
printf 'gpus:\n  health:\n    memory_grace: 300ms\nretry:\n  gpu-fault: 0\n' >"$ITEST_DIR/gpu.yml"
export KILN_CONFIG="$ITEST_DIR/gpu.yml" KILN_HOST_STORE="$ITEST_DIR/host.db"
kiln tests quarantine -C "$gpurepo" tests.t::test_flaky --for 1h
expect_rc 0 "quarantined by hand in the GPU repository"
echo test_flaky >"$ctl/fail"
kiln run -C "$gpurepo" --json --simulate-gpus "$ITEST_DIR/gpus.json"
expect_rc 0 "a GPU job failing only the quarantined test: green"
job_is success test "class test"
touch "$ctl/xid"
kiln run -C "$gpurepo" --json --simulate-gpus "$ITEST_DIR/gpus.json"
expect_rc 1 "the same with an Xid during the tests: red"
job_is failure gpu-fault "class gpu-fault: the fault, not luck, may have failed the test"
log="$("$KILN" logs -C "$gpurepo" "$(json_eval - 'd["runs"][0]["id"]')" gpu-unit 2>&1)"
expect_contains "$log" "The quarantined tests' failures are not excused: GPU 0" "the log says why"
rm "$ctl/xid"
export KILN_CONFIG="$ITEST_DIR/kiln.yml"

# ---- bad input --------------------------------------------------------------------------------
kiln tests quarantine -C "$repo" tests.t::test_real --for soon
expect_rc 2 "--for soon is bad input"
printf 'tests:\n  quarantine:\n    flipz: 2\n' >"$ITEST_DIR/bad.yml"
KILN_CONFIG="$ITEST_DIR/bad.yml" kiln run -C "$repo"
expect_rc 2 "an unknown tests.quarantine key is bad input"
expect_contains "$ERR" "bad.yml:3:5" "located"
expect_contains "$ERR" "unknown key 'flipz'" "named"

itest_end
