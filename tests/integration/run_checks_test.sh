#!/usr/bin/env bash
# `kiln run` says what it will not do, and what failed: bad arguments are exit 2 (a missing -C
# directory creates nothing, a missing --simulate-gpus file), runner labels are checked
# (kiln.yml, --label, container options blamed at their line), and a failed job is summed up at
# the end (step, exit code or reason, last lines), the same in --json.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin run_checks

repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'YAML'
on: push
jobs:
  ok:
    runs-on: self-hosted
    steps:
      - run: echo fine
YAML
commit_all "$repo" "a workflow"

# ---- argument errors: exit 2, nothing created -----------------------------------------------
kiln run -C "$ITEST_DIR/no-such-dir"
expect_rc 2 "-C with a missing directory is bad input"
expect_contains "$ERR" "-C $ITEST_DIR/no-such-dir: no such directory" "the message names the directory"
check "no DIR/.kiln/ was created for a missing -C directory" test ! -e "$ITEST_DIR/no-such-dir"

kiln runs -C "$ITEST_DIR/no-such-dir"
expect_rc 2 "kiln runs -C with a missing directory is bad input too"
check "kiln runs made no DIR/.kiln/ either" test ! -e "$ITEST_DIR/no-such-dir"

kiln run -C "$repo" --simulate-gpus "$ITEST_DIR/missing.json"
expect_rc 2 "a missing --simulate-gpus file is bad input"
expect_contains "$ERR" "--simulate-gpus $ITEST_DIR/missing.json: no such file" "the message names the file"

kiln run -C "$repo" --max-parallel nope
expect_rc 2 "a malformed option value is exit 2"
kiln run -C "$repo" --no-such-flag
expect_rc 2 "an unknown flag is exit 2"
kiln run -C "$repo" --label ''
expect_rc 2 "an empty --label is exit 2"

# ---- runner labels ---------------------------------------------------------------------------
cat >"$ITEST_DIR/gpus.json" <<'JSON'
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA A100-SXM4-80GB", "memory_mib": 81920, "arch": "sm_80"},
          {"vendor": "nvidia", "model": "NVIDIA A100-SXM4-80GB", "memory_mib": 81920, "arch": "sm_80"}]}
JSON
labels="$ITEST_DIR/labels/.github/workflows"
mkdir -p "$labels"
cat >"$labels/gpu.yml" <<'YAML'
on: push
jobs:
  typo:
    runs-on: [self-hosted, gpu-h1OO]
    steps:
      - run: echo hi
YAML
kiln validate "$ITEST_DIR/labels"
expect_rc 2 "kiln validate refuses a label this host does not serve"
expect_contains "$ERR" "gpu.yml:4:28: error: runs-on label 'gpu-h1OO' is not a label this host serves" \
  "the label is named at FILE:LINE:COL"
printf 'gpus:\n  labels:\n    gpu-h100: gpu gpu-model:h100\n' >"$ITEST_DIR/h100.yml"
kiln validate "$ITEST_DIR/labels" --config "$ITEST_DIR/h100.yml"
expect_contains "$ERR" "(did you mean 'gpu-h100'?)" "a close kiln.yml label is suggested"
kiln validate "$ITEST_DIR/labels" --label gpu-h1OO
expect_rc 0 "--label NAME makes the host serve the label"

cat >"$labels/gpu.yml" <<'YAML'
on: push
jobs:
  from-options:
    runs-on: self-hosted
    container:
      image: busybox
      options: --gpus 4
    steps:
      - run: echo hi
YAML
kiln validate "$ITEST_DIR/labels" --simulate-gpus "$ITEST_DIR/gpus.json"
expect_rc 2 "a GPU request of the container options that the GPUs cannot serve is an error"
expect_match "$ERR" "gpu\.yml:7:16: error: job 'from-options' asks for gpu:4" \
  "it is blamed on the options line, not on runs-on"

# ---- what failed, at the end of the run -------------------------------------------------------
fails="$ITEST_DIR/fails"
make_repo "$fails"
write_workflow "$fails" a.yml <<'YAML'
name: A
on: push
jobs:
  test:
    runs-on: self-hosted
    steps:
      - run: echo setting up
      - name: Unit tests
        run: |
          for i in $(seq 1 12); do echo "test line $i"; done
          echo "assertion failed: 2 + 2 == 5" >&2
          exit 3
  slow:
    runs-on: self-hosted
    timeout-minutes: 0.01
    steps:
      - name: Sleeps
        run: sleep 20
YAML
write_workflow "$fails" b.yml <<'YAML'
name: B
on: push
jobs:
  test:
    runs-on: self-hosted
    steps:
      - run: echo "b's test job"
YAML
commit_all "$fails" "failing jobs"
kiln run -C "$fails" --max-parallel 4
expect_rc 1 "a failed job fails the run"
expect_contains "$OUT" "FAILED test: step 'Unit tests': exit code 3" "the summary names the failing step and its exit code"
expect_contains "$OUT" "    | assertion failed: 2 + 2 == 5" "the summary shows the step's last lines"
expect_contains "$OUT" "    | test line 5" "the step's last 10 lines are kept (from line 5 of 12, then stderr and the exit)"
expect_not_contains "$OUT" "    | test line 4" "older lines are not"
expect_contains "$OUT" "FAILED slow: step 'Sleeps': timeout" "a timed-out step is said as a timeout"
expect_contains "$OUT" "[a/test]" "two workflows' jobs of one id are told apart: [a/test]"
expect_contains "$OUT" "[b/test]" "and [b/test]"
expect_contains "$OUT" "b's test job" "the other workflow's job ran"

kiln run -C "$fails" --max-parallel 4 --json
expect_rc 1 "--json: the same run fails"
expect_json '[j["failure"]["kind"] for r in d["runs"] if r["name"] == "A" for j in r["jobs"] if j["key"] == "test"]'   '["exit code"]' "--json carries the failure's kind"
expect_json '[(j["failure"]["step"], j["failure"]["exit_code"], j["failure"]["last_lines"][-2], j["failure"]["last_lines"][-1]) for r in d["runs"] if r["name"] == "A" for j in r["jobs"] if j["key"] == "test"]'   '[["Unit tests", 3, "assertion failed: 2 + 2 == 5", "error: Process completed with exit code 3."]]' "--json carries the step, exit code and last lines"
expect_json '[j["reason"] for r in d["runs"] if r["name"] == "A" for j in r["jobs"] if j["key"] == "test"]'   "[\"step 'Unit tests' failed with exit code 3\"]" "--json's reason is filled"
expect_json '[j["failure"]["kind"] for r in d["runs"] if r["name"] == "A" for j in r["jobs"] if j["key"] == "slow"]'   '["timeout"]' "a timeout is kind timeout"
expect_json '[j["failure"] for r in d["runs"] if r["name"] == "B" for j in r["jobs"]]' '[null]'   "a job that succeeded has no failure"

itest_end
