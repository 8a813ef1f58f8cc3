#!/usr/bin/env bash
# Container jobs and services on real podman: steps in the job container with host-step
# semantics, services reached by their key and waited for until healthy, the options policy,
# pull policy and image records, and clean-up: after success, failure, step and job timeouts,
# Ctrl-C, and kill -9 of kiln (the next kiln removes what the dead one left). The image is built
# locally from busybox-static (tests/containers/build_test_image.sh): no registry is needed.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin container

command -v podman >/dev/null || itest_die "podman is not installed (./scripts/deps installs it)"
export KILN_CONTAINER_ENGINE=podman
bash "$KILN_SOURCE_DIR/tests/containers/build_test_image.sh" podman >/dev/null ||
  itest_die "cannot build the test image"
image=localhost/kiln-test:1

# Every labelled container or network whose owner is one of the kiln processes of this test.
owned_objects() {
  local pid
  for pid in "$@"; do
    podman ps -a -q --filter "label=kiln.owner-pid=$pid"
    podman network ls -q --filter "label=kiln.owner-pid=$pid"
  done
}
# run_kiln ARGS...: `kiln run` in the background (so its pid is known), waited for.
run_kiln() {
  RC=0
  "$KILN" run "$@" >"$ITEST_DIR/last.out" 2>"$ITEST_DIR/last.err" </dev/null &
  KILN_PID=$!
  itest_track_pid "$KILN_PID"
  wait "$KILN_PID" || RC=$?
  OUT="$(cat "$ITEST_DIR/last.out")"
  ERR="$(cat "$ITEST_DIR/last.err")"
}
expect_nothing_left() {
  local left
  left="$(owned_objects "$@")"
  if [[ -z "$left" ]]; then pass "$DESCRIPTION: no container or network left"; else
    fail "$DESCRIPTION: left behind: $left"; fi
}

# ---- steps in the job container: through the step helper, and through podman exec ----------------
steps_case() {  # steps_case NAME PID1-COMMAND KILN_STEP_HELPER
  repo="$ITEST_DIR/steps-$1"
  make_repo "$repo"
  write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  inside:
    runs-on: linux
    container:
      image: $image
      env:
        FROM_CONTAINER_ENV: container-level
      options: --shm-size 64m --cpus 1
    env:
      JOB_LEVEL: job-level
      SECRET_VALUE: \${{ secrets.TOKEN }}
    steps:
      - id: first
        run: |
          echo "pid1=\$(tr '\\0' ' ' </proc/1/cmdline)"
          echo "where=\$(pwd) ws=\$GITHUB_WORKSPACE"
          echo "vars=\$FROM_CONTAINER_ENV/\$JOB_LEVEL"
          echo "secret=\$SECRET_VALUE"
          echo "answer=42" >> "\$GITHUB_OUTPUT"
          echo "FROM_FILE=via-github-env" >> "\$GITHUB_ENV"
          mkdir -p /opt/tools && printf '#!/bin/sh\necho tool-ran\n' > /opt/tools/mytool && chmod +x /opt/tools/mytool
          echo /opt/tools >> "\$GITHUB_PATH"
          mkdir -p sub && echo made-in-container > sub/file.txt
      - run: |
          echo "output=\${{ steps.first.outputs.answer }} env=\$FROM_FILE"
          mytool
      - working-directory: sub
        shell: sh
        run: echo "cwd=\$(pwd) content=\$(cat file.txt)"
      - run: exit 3
        continue-on-error: true
      - uses: actions/upload-artifact@v4
        with:
          name: made
          path: sub/file.txt
EOF
  commit_all "$repo" "a container job"
  KILN_STEP_HELPER="$3" run_kiln -C "$repo" --secret TOKEN=s3cr3t-value --json
  expect_rc 0 "$1: the container job succeeds"
  log="$("$KILN" logs 1 -C "$repo" 2>&1)"
  expect_match "$log" "pid1=/run/podman-init -- $2" "$1: steps run in a container started with --init"
  expect_match "$log" "where=$repo/.kiln/work/1/inside/workspace ws=$repo/.kiln/work/1/inside/workspace" \
    "the workspace is mounted at the host's path and is the working directory"
  expect_contains "$log" "vars=container-level/job-level" "$1: container env and job env reach the step"
  expect_contains "$log" "secret=***" "$1: secrets are masked in container steps"
  expect_not_contains "$log" "s3cr3t-value" "$1: the secret never reaches the log"
  expect_contains "$log" "output=42 env=via-github-env" "$1: GITHUB_OUTPUT and GITHUB_ENV work in the container"
  expect_contains "$log" "tool-ran" "$1: GITHUB_PATH adds to the container's PATH"
  expect_contains "$log" "cwd=$repo/.kiln/work/1/inside/workspace/sub content=made-in-container" \
    "working-directory and shell: sh in the container"
  expect_json 'd["runs"][0]["jobs"][0]["steps"][3]["exit_code"]' 3 "$1: a failing command's exit code comes back from the container"
  check "$1: a host action (upload-artifact) sees files the container wrote" \
    test -n "$(find "$repo/.kiln/artifacts" -name file.txt 2>/dev/null)"
  extra="$(sqlite3 "$repo/.kiln/kiln.db" "select extra from jobs" 2>&1)"
  expect_match "$extra" '"image_id":"sha256:[0-9a-f]{64}"' "$1: the image id is recorded in the store"
  expect_match "$log" "Image $image: sha256:[0-9a-f]{64}" "$1: the image id is shown in the job log"
  DESCRIPTION="$1: after success" expect_nothing_left "$KILN_PID"
}
steps_case helper "/.kiln/step-helper serve /tmp/kiln-steps-" ""
steps_case exec "tail -f /dev/null" off

# ---- services ----------------------------------------------------------------------------------
repo="$ITEST_DIR/services"
make_repo "$repo"
write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  with-db:
    runs-on: linux
    container: $image
    services:
      db:
        image: $image
        env:
          KILN_TEST_CMD: "sleep 1; touch /tmp/ready; while true; do echo pong-from-db | nc -l -p 5000; done"
        ports:
          - 5000
        options: --health-cmd "test -f /tmp/ready" --health-interval 1s --health-retries 20 --health-timeout 5s
    steps:
      - run: |
          echo "reply=\$(nc db 5000 </dev/null)"
          echo "port=\${{ job.services.db.ports['5000'] }}"
  broken:
    runs-on: linux
    services:
      bad:
        image: $image
        env:
          KILN_TEST_CMD: "echo bad-service-says-goodbye; exit 3"
        options: --health-cmd "true" --health-interval 1s --health-retries 3
    steps:
      - run: echo should-not-run
EOF
commit_all "$repo" "services"
run_kiln -C "$repo" --json
expect_rc 1 "a job whose service never gets healthy fails the run"
expect_json '[j["conclusion"] for j in sorted(d["runs"][0]["jobs"], key=lambda j: j["key"])]' \
  '["failure", "success"]' "the job with a healthy service succeeds, the other fails"
log="$("$KILN" logs 1 -C "$repo" 2>&1)"
expect_contains "$log" "reply=pong-from-db" "the job container reaches the service by its key"
expect_match "$log" "port=[0-9]+" "job.services.db.ports maps the published port"
expect_contains "$OUT$ERR" "service 'bad' is not healthy" "the unhealthy service is named"
expect_contains "$OUT$ERR" "bad-service-says-goodbye" "its last log lines are shown"
expect_not_contains "$log" "should-not-run" "no step runs without a healthy service"
DESCRIPTION="after services" expect_nothing_left "$KILN_PID"

# ---- timeouts ----------------------------------------------------------------------------------
repo="$ITEST_DIR/timeouts"
make_repo "$repo"
write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  step-timeout:
    runs-on: linux
    container: $image
    steps:
      - run: sleep 300
        timeout-minutes: 0.03
      - if: always()
        run: |
          if ps | grep -v grep | grep -q 'sleep 300'; then echo STILL-SLEEPING; else echo SLEEP-GONE; fi
  job-timeout:
    runs-on: linux
    timeout-minutes: 0.05
    container: $image
    steps:
      - run: sleep 300
EOF
commit_all "$repo" "timeouts"
run_kiln -C "$repo" --json
expect_rc 1 "timed-out jobs fail the run"
log="$("$KILN" logs 1 -C "$repo" 2>&1)"
expect_contains "$log" "SLEEP-GONE" "a step that timed out is stopped inside the container too"
expect_contains "$OUT$ERR" "exceeded its maximum execution time" "the job timeout applies to a container job"
DESCRIPTION="after timeouts" expect_nothing_left "$KILN_PID"

# ---- images and the pull policy ----------------------------------------------------------------
podman tag "$image" localhost/kiln-test:latest
repo="$ITEST_DIR/images"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'EOF'
on: push
jobs:
  mutable:
    runs-on: linux
    container: localhost/kiln-test
    steps:
      - run: echo ran-on-latest
EOF
write_workflow "$repo" missing.yml <<'EOF'
on: push
jobs:
  missing:
    runs-on: linux
    container: kiln-registry.invalid/nothing:1
    steps:
      - run: echo should-not-run
EOF
commit_all "$repo" "images"
run_kiln -C "$repo" -W "$repo/.github/workflows/ci.yml"
expect_rc 0 "an image without a tag runs"
expect_contains "$OUT$ERR" "image 'localhost/kiln-test' has a mutable tag" "a mutable tag is warned about"
run_kiln -C "$repo" -W "$repo/.github/workflows/missing.yml" --pull never
expect_rc 1 "--pull never with a missing image fails the job"
expect_contains "$OUT$ERR" "is not on this host and the pull policy is 'never'" "--pull never says why"
start=$SECONDS
run_kiln -C "$repo" -W "$repo/.github/workflows/missing.yml"
expect_rc 1 "an unreachable registry fails the job"
expect_contains "$OUT$ERR" "cannot pull image 'kiln-registry.invalid/nothing:1'" "the pull error names the image"
echo "    (the failed pull took $((SECONDS - start)) s)"
kiln run -C "$repo" --pull sometimes
expect_rc 2 "an unknown pull policy is bad input"
kiln run -C "$repo" --container-engine lxc
expect_rc 2 "an unknown container engine is bad input"
podman rmi localhost/kiln-test:latest >/dev/null 2>&1 || true

# ---- GPU grants become device flags ------------------------------------------------------------
# No GPU here: a simulated NVIDIA inventory, and podman's answer shows which CDI devices it was
# asked for (this host has no CDI specification, so the container cannot start).
repo="$ITEST_DIR/gpus"
make_repo "$repo"
write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  label-wins:
    runs-on: [linux, "gpu:1"]
    container:
      image: $image
      options: --gpus all
    steps:
      - run: echo should-not-start
  options-ask:
    needs: label-wins
    if: always()
    runs-on: linux
    container:
      image: $image
      options: --gpus 2 --shm-size 64m
    steps:
      - run: echo should-not-start
EOF
commit_all "$repo" "GPU containers"
run_kiln -C "$repo" --simulate-gpus "$KILN_SOURCE_DIR/tests/data/gpu/h100-8x-two-islands.json"
expect_rc 1 "GPU containers cannot start on a host without CDI devices"
expect_match "$OUT$ERR" '\[label-wins\].*unresolvable CDI devices nvidia.com/gpu=GPU-sim-[0-9]+ \(podman' \
  "--gpus all with runs-on gpu:1 asks podman for exactly one GPU, by UUID"
expect_match "$OUT$ERR" '\[options-ask\].*unresolvable CDI devices nvidia.com/gpu=GPU-sim-[0-9]+, nvidia.com/gpu=GPU-sim-[0-9]+ \(podman' \
  "--gpus 2 without a GPU label requests two GPUs, and podman gets those two"
expect_contains "$OUT$ERR" "nvidia-ctk cdi generate" "the error says how to make the CDI specification"
expect_not_contains "$OUT$ERR" "should-not-start" "no step runs"
DESCRIPTION="after GPU jobs" expect_nothing_left "$KILN_PID"

# ---- Ctrl-C and kill -9 ------------------------------------------------------------------------
repo="$ITEST_DIR/crash"
make_repo "$repo"
write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  long:
    runs-on: linux
    container: $image
    services:
      side:
        image: $image
    steps:
      - run: echo LONG-STEP-STARTED; sleep 300
EOF
commit_all "$repo" "a long container job"
start_long() {
  "$KILN" run -C "$repo" >"$ITEST_DIR/long.out" 2>&1 </dev/null &
  KILN_PID=$!
  itest_track_pid "$KILN_PID"
  started() { grep -q LONG-STEP-STARTED "$ITEST_DIR/long.out"; }
  wait_until 60 started || itest_die "the long step never started: $(cat "$ITEST_DIR/long.out")"
}
start_long
kill -INT "$KILN_PID"
if wait_exit "$KILN_PID" 30; then
  if [[ $WAIT_RC -eq 130 ]]; then pass "Ctrl-C cancels the container job (exit 130)"; else
    fail "kiln exited with $WAIT_RC after SIGINT"; fi
else
  itest_die "kiln did not exit within 30 s of SIGINT"
fi
DESCRIPTION="after Ctrl-C" expect_nothing_left "$KILN_PID"

start_long
dead_pid=$KILN_PID
kill -9 "$dead_pid"
wait_exit "$dead_pid" 10 || itest_die "kiln survived kill -9"
left="$(owned_objects "$dead_pid")"
if [[ -n "$left" ]]; then pass "kill -9 leaves the job's containers and network (nobody could remove them)"; else
  fail "expected containers left by the killed kiln"; fi
write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  quick:
    runs-on: linux
    container: $image
    steps:
      - run: echo quick
EOF
commit_all "$repo" "a quick container job"
run_kiln -C "$repo"
expect_rc 0 "the next kiln run succeeds"
expect_match "$OUT$ERR" "Removed container kiln-[0-9]+-long-job-[0-9a-f]+ left by a kiln that is gone" \
  "the next kiln removes the dead kiln's containers"
DESCRIPTION="after kill -9 and the next run" expect_nothing_left "$dead_pid" "$KILN_PID"
helper_dirs="$(ls -d /tmp/kiln-steps-"$dead_pid"-* /tmp/kiln-steps-"$KILN_PID"-* 2>/dev/null || true)"
if [[ -z "$helper_dirs" ]]; then pass "no step-helper socket directory is left"; else
  fail "step-helper socket directories left: $helper_dirs"; fi

# ---- the host config's container policy: allowances, a forced user and limits -----------------
repo="$ITEST_DIR/policy"
make_repo "$repo"
write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  policed:
    runs-on: linux
    container:
      image: $image
      options: --user 0 --memory 1g --network=host
    steps:
      - run: echo "uid=\$(id -u)"
EOF
commit_all "$repo" "a job asking for the host network as root"
kiln validate "$repo"
expect_rc 2 "--network=host is refused by default"
expect_contains "$ERR" "ci.yml:7:16: error: container option '--network=host' is refused" \
  "at the options' FILE:LINE:COL"
cat >"$ITEST_DIR/policy.yml" <<'YAML'
containers:
  allow: [host-network]
  user: "1000:1000"
  limits: {memory: 256m, pids: 512}
YAML
run_kiln -C "$repo" --config "$ITEST_DIR/policy.yml"
expect_rc 0 "allowed by kiln.yml, the job runs"
expect_contains "$OUT" "uid=1000" "the host config's user is forced over the workflow's --user 0"
DESCRIPTION="after a job under the host policy" expect_nothing_left "$KILN_PID"

itest_end
