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

# ---- $GITHUB_STEP_SUMMARY is kept and shown ------------------------------------------------------
summary="$ITEST_DIR/summary"
make_repo "$summary"
write_workflow "$summary" ci.yml <<'YAML'
on: push
jobs:
  bench:
    runs-on: self-hosted
    steps:
      - run: |
          echo "## Kernel timings" >> "$GITHUB_STEP_SUMMARY"
          echo "| op | ms |" >> "$GITHUB_STEP_SUMMARY"
          echo "|---|---|" >> "$GITHUB_STEP_SUMMARY"
          echo "| add | 1.5 |" >> "$GITHUB_STEP_SUMMARY"
      - run: |
          echo "token ${{ secrets.TOKEN }} <script>alert(1)</script>" >> "$GITHUB_STEP_SUMMARY"
YAML
commit_all "$summary" "a job summary"
kiln run -C "$summary" --secret TOKEN=hunter2-secret
expect_rc 0 "the run with a job summary succeeds"
kiln report 1 -C "$summary" --format json
expect_json 'd["jobs"][0]["step_summary"]' \
  "$(printf '## Kernel timings\n| op | ms |\n|---|---|\n| add | 1.5 |\ntoken *** <script>alert(1)</script>')" \
  "kiln report --format json has the job's summary, both steps', the secret masked"
kiln report 1 -C "$summary"
expect_contains "$OUT" "      ## Kernel timings" "kiln report (text) shows the summary under the job"
kiln report 1 -C "$summary" --format html
expect_contains "$OUT" "<h2>Kernel timings</h2>" "the HTML report renders the summary's Markdown"
expect_contains "$OUT" "<tr><td>add</td><td>1.5</td></tr>" "tables included"
expect_contains "$OUT" "token *** &lt;script&gt;alert(1)&lt;/script&gt;" "raw HTML in it is escaped"
expect_not_contains "$OUT" "<script>alert" "no script from the summary reaches the report"
expect_not_contains "$OUT" "hunter2-secret" "nor the secret"

# ---- act's habits ------------------------------------------------------------------------------
habits="$ITEST_DIR/habits"
make_repo "$habits"
write_workflow "$habits" ci.yml <<'YAML'
on:
  push:
  pull_request:
  workflow_dispatch:
    inputs:
      level: {type: string, default: info}
jobs:
  build:
    runs-on: [self-hosted, linux]
    steps:
      - run: echo "event ${{ github.event_name }} ref ${{ github.ref }} input ${{ inputs.level }}"
      - run: echo "token ${{ secrets.API_TOKEN }}"
  test:
    needs: build
    runs-on: self-hosted
    steps:
      - run: |
          echo "first line"
          sleep 1
          echo "last line"
YAML
commit_all "$habits" "act's habits"
kiln run -l -C "$habits"
expect_rc 0 "kiln run -l lists and runs nothing"
expect_match "$OUT" "\.github/workflows/ci\.yml +build +- +self-hosted, linux" "-l lists each job with its runs-on"
expect_match "$OUT" "ci\.yml +test +build +self-hosted" "and its needs"
kiln runs -C "$habits" --json
expect_json 'len(d)' 0 "-l ran nothing"

kiln run pull_request -C "$habits" --dry-run --json
expect_rc 0 "a positional event is accepted"
expect_json 'd["event"]["name"]' pull_request "kiln run pull_request is --event pull_request"
kiln run pull_request --event schedule -C "$habits" --dry-run
expect_rc 2 "two different events are bad input"

printf '{"ref": "refs/heads/from-the-file"}\n' >"$ITEST_DIR/event.json"
printf 'level=debug\n' >"$ITEST_DIR/inputs.env"
API_TOKEN=s3cr3t-from-env "$KILN" run workflow_dispatch -C "$habits" -e "$ITEST_DIR/event.json" \
  --input-file "$ITEST_DIR/inputs.env" -s API_TOKEN --job build >"$ITEST_DIR/habits.out" 2>&1 || true
output="$(cat "$ITEST_DIR/habits.out")"
expect_contains "$output" "event workflow_dispatch ref refs/heads/from-the-file input debug" \
  "-e is the event file, --input-file the inputs"
expect_contains "$output" "token ***" "-s NAME reads the secret from the environment, masked"
expect_not_contains "$output" "s3cr3t-from-env" "the secret's value is never printed"

kiln logs 1 build -C "$habits" --timestamps
expect_match "$OUT" "^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z event workflow_dispatch" \
  "kiln logs --timestamps puts each line's time in front"

"$KILN" run -C "$habits" >"$ITEST_DIR/follow-run.out" 2>&1 &
follow_pid=$!
itest_track_pid "$follow_pid"
run_started() { grep -q "(run 2)" "$ITEST_DIR/follow-run.out"; }
wait_until 20 run_started || itest_die "the run to follow did not start"
follow_rc=0
timeout 60 "$KILN" logs 2 -C "$habits" --follow >"$ITEST_DIR/follow.out" 2>&1 || follow_rc=$?
wait "$follow_pid" || true
followed="$(cat "$ITEST_DIR/follow.out")"
check "kiln logs --follow ends when the run ends (exit 0)" test "$follow_rc" -eq 0
expect_contains "$followed" "last line" "kiln logs --follow printed what the run wrote after it started following"
expect_contains "$followed" "== test success ==" "and each job's end"

printf '# defaults for kiln run\n--label big-box\n--max-parallel 1\n' >"$habits/.kilnrc"
write_workflow "$habits" box.yml <<'YAML'
on: push
jobs:
  box:
    runs-on: [self-hosted, big-box]
    steps:
      - run: echo "on the box"
YAML
commit_all "$habits" "a job for a custom runner"
(cd "$habits" && "$KILN" run --dry-run --max-parallel 2 >"$ITEST_DIR/kilnrc.out" 2>&1) && kilnrc_rc=0 || kilnrc_rc=$?
check "./.kilnrc's flags apply to kiln run (--label big-box), the command line's win (exit 0)" \
  test "$kilnrc_rc" -eq 0
rm "$habits/.kilnrc"
(cd "$habits" && "$KILN" run --dry-run >"$ITEST_DIR/kilnrc.out" 2>&1) && kilnrc_rc=0 || kilnrc_rc=$?
check "without .kilnrc the custom label is not served (exit 2)" test "$kilnrc_rc" -eq 2

write_workflow "$habits" vars.yml <<'YAML'
on: push
jobs:
  vars:
    runs-on: self-hosted
    steps:
      - run: echo "region ${{ vars.REGION }} tier ${{ vars.TIER }} by ${{ github.actor }} ($GITHUB_ACTOR)"
YAML
commit_all "$habits" "vars"
printf 'REGION=eu\nTIER=file\n' >"$ITEST_DIR/vars.env"
kiln run -C "$habits" --job vars --label big-box --var-file "$ITEST_DIR/vars.env" --var TIER=flag --actor octocat
expect_rc 0 "a run with --var, --var-file and --actor"
expect_contains "$OUT" "region eu tier flag by octocat (octocat)" \
  "vars come from --var-file then --var; --actor sets github.actor and GITHUB_ACTOR"

itest_end
