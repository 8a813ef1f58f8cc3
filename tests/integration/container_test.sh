#!/usr/bin/env bash
# Container jobs and services on real podman: steps in the job container with host-step
# semantics, services reached by their key and waited for until healthy, the options policy and
# the options GPU teams write, simulated GPUs, kiln's own commands inside, a failed job kept for
# `kiln exec`, pull policy and image records, and clean-up: after success, failure, step and job timeouts,
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

# ---- simulated GPUs: the grant's environment, no device flag, one line that says so ----------
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
      - run: |
          echo "cuda=\$CUDA_VISIBLE_DEVICES uuids=\$KILN_GPU_UUIDS count=\$KILN_GPUS"
          echo "nodes=\$(ls /dev | grep -c nvidia)"
  options-ask:
    runs-on: linux
    container:
      image: $image
      options: --gpus 2 --shm-size 64m
    steps:
      - run: echo "cuda=\$CUDA_VISIBLE_DEVICES count=\$KILN_GPUS"
EOF
commit_all "$repo" "GPU containers"
run_kiln -C "$repo" --simulate-gpus "$KILN_SOURCE_DIR/tests/data/gpu/h100-8x-two-islands.json"
expect_rc 0 "GPU container jobs run on simulated GPUs"
log="$("$KILN" logs 1 -C "$repo" 2>&1)"
expect_match "$log" 'cuda=GPU-sim-[0-9]+ uuids=GPU-sim-[0-9]+ count=1' \
  "--gpus all with runs-on gpu:1: the container sees exactly one simulated GPU"
expect_contains "$log" "nodes=0" "no GPU device reaches the container"
expect_match "$log" 'cuda=GPU-sim-[0-9]+,GPU-sim-[0-9]+ count=2' \
  "--gpus 2 without a GPU label: the container sees the two granted GPUs"
count="$(grep -c 'are simulated (--simulate-gpus): the job container gets their environment' <<<"$log" || true)"
if [[ "$count" == 2 ]]; then pass "one line per job says the GPUs are simulated"; else
  fail "expected 2 'simulated' lines, saw $count: $log"; fi
DESCRIPTION="after GPU jobs" expect_nothing_left "$KILN_PID"

# The ROCm pipeline's options on a simulated MI250 host: the grant's ROCm variables, no /dev/kfd.
write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  rocm:
    runs-on: [linux, "gpu:2", "gpu-vendor:amd"]
    container:
      image: $image
      options: --device /dev/kfd --device /dev/dri --group-add video --ipc=host --shm-size 16G
    steps:
      - run: |
          echo "rocr=\$ROCR_VISIBLE_DEVICES hip=\$HIP_VISIBLE_DEVICES"
          if [ -e /dev/kfd ]; then echo has-kfd; else echo no-kfd; fi
EOF
commit_all "$repo" "a ROCm container"
run_kiln -C "$repo" --simulate-gpus "$KILN_SOURCE_DIR/tests/data/gpu/mi250-4x.json"
expect_rc 0 "the ROCm container options run on a simulated MI250 host"
log="$("$KILN" logs 2 -C "$repo" 2>&1)"
expect_match "$log" 'rocr=GPU-sim-[0-9]+,GPU-sim-[0-9]+ hip=0,1' "the container gets the grant's ROCm variables"
expect_contains "$log" "no-kfd" "no AMD device node reaches the container"
expect_contains "$log" "--device /dev/kfd, /dev/dri are replaced by the job's grant" \
  "the options' device nodes are said to be replaced by the grant"

# --device /dev/dri alone (Intel GPUs use it too) asks for no GPU, and says so.
write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  intel:
    runs-on: linux
    container:
      image: $image
      options: --device /dev/dri
    steps:
      - run: echo "count=\$KILN_GPUS"
EOF
commit_all "$repo" "a /dev/dri container"
kiln validate "$repo"
expect_rc 0 "--device /dev/dri alone is valid"
expect_contains "$ERR" "ci.yml:7:16: warning: --device /dev/dri without /dev/kfd asks for no GPU" \
  "validate warns at the options that /dev/dri alone asks for no GPU"
run_kiln -C "$repo" --simulate-gpus "$KILN_SOURCE_DIR/tests/data/gpu/mi250-4x.json"
expect_rc 0 "a /dev/dri job runs"
log="$("$KILN" logs 3 -C "$repo" 2>&1)"
expect_contains "$log" "count=0" "--device /dev/dri alone is not granted the host's AMD GPUs"

# ---- container options as teams write them ---------------------------------------------------
repo="$ITEST_DIR/options"
make_repo "$repo"
write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  teams:
    runs-on: linux
    container:
      image: $image
      options: --ipc=host --shm-size 16G --ulimit memlock=-1 --cap-add SYS_PTRACE --security-opt seccomp=unconfined --group-add video --group-add render
    steps:
      - run: |
          echo "shm=\$(df -k /dev/shm | tail -1 | awk '{print \$2}')"
          echo "memlock=\$(ulimit -l)"
          echo "groups=\$(id -G)"
          echo "seccomp=\$(grep '^Seccomp:' /proc/self/status | awk '{print \$2}')"
          echo "capeff=\$(grep '^CapEff:' /proc/self/status | awk '{print \$2}')"
EOF
commit_all "$repo" "options as teams write them"
kiln validate "$repo"
expect_rc 0 "the options GPU teams write are valid"
run_kiln -C "$repo"
expect_rc 0 "a job with --ipc=host --shm-size --ulimit memlock=-1 --cap-add --security-opt --group-add runs on podman"
log="$("$KILN" logs 1 -C "$repo" 2>&1)"
host_shm="$(df -k /dev/shm | tail -1 | awk '{print $2}')"
expect_contains "$log" "shm=$host_shm" "--ipc=host: the container uses the host's /dev/shm"
count="$(grep -c -- '--shm-size 16G is not passed: with --ipc=host' <<<"$log" || true)"
if [[ "$count" == 1 ]]; then pass "the dropped --shm-size is said once in the log"; else
  fail "expected the --shm-size note once, saw it $count times"; fi
expect_contains "$log" "seccomp=0" "--security-opt seccomp=unconfined: no seccomp filter"
capeff="$(grep -o 'capeff=[0-9a-f]*' <<<"$log" | cut -d= -f2 || true)"
if (( (16#${capeff:-0} >> 19) & 1 )); then pass "--cap-add SYS_PTRACE reaches the container"; else
  fail "CapEff $capeff has no SYS_PTRACE"; fi
video_gid="$(getent group video | cut -d: -f3 || true)"
if [[ -n "$video_gid" ]]; then
  expect_match "$log" "groups=.*\\b$video_gid\\b" "--group-add video is the host's video group id"
fi
if getent group render >/dev/null; then
  expect_match "$log" "groups=.*\\b$(getent group render | cut -d: -f3)\\b" "--group-add render is the host's render group id"
else
  expect_contains "$log" "--group-add render is not passed: this host has no 'render' group" \
    "a device group the host lacks is left out, and said"
fi
if (( (16#$(grep CapEff /proc/self/status | awk '{print $2}') >> 24) & 1 )); then
  expect_contains "$log" "memlock=unlimited" "--ulimit memlock=-1: unlimited"
else
  expect_contains "$log" "--ulimit memlock=-1 is above this host's hard limit" \
    "--ulimit memlock=-1 on a host that cannot raise it: lowered, with a warning"
  expect_contains "$log" "memlock=$(ulimit -H -l)" "the container gets the host's memlock limit"
fi
DESCRIPTION="after the options job" expect_nothing_left "$KILN_PID"

# Refused forms: located at `kiln validate`, with what to write instead.
refused_case() {  # refused_case OPTIONS EXPECTED-MESSAGE DESCRIPTION
  write_workflow "$repo" refused.yml <<EOF
on: push
jobs:
  refused:
    runs-on: linux
    container:
      image: $image
      options: $1
    steps:
      - run: echo should-not-run
EOF
  kiln validate "$repo"
  expect_rc 2 "$3: exit 2"
  expect_contains "$ERR" "refused.yml:7:16: error: $2" "$3: at the options' FILE:LINE:COL"
}
refused_case "-v--net" "container option '-v--net' is ambiguous: it reads as '-v' with the value '--net'" \
  "-v--net (glued)"
refused_case "-v --net" "container option '-v' would take '--net' as its value" "-v --net"
refused_case "--privileged" "container option '--privileged' is refused" "--privileged"
expect_contains "$ERR" "containers: allow: [privileged]" "--privileged: the error says what to write instead"
refused_case "--network host" "container option '--network=host' is refused" "--network host"
expect_contains "$ERR" "containers: allow: [host-network]" "--network host: the error says how to allow it"
refused_case "--ulimit memlok=-1" "container option '--ulimit': 'memlok=-1' is not NAME=SOFT[:HARD]" "a misspelt ulimit"
refused_case "--cap-add SYS_PTRAC" "container option '--cap-add': 'SYS_PTRAC' is not a Linux capability" "a misspelt capability"
refused_case "--shm-size 16Q" "container option '--shm-size': '16Q' is not a size" "a bad size"
rm "$repo/.github/workflows/refused.yml"

# --privileged under the host policy.
write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  privileged:
    runs-on: linux
    container:
      image: $image
      options: --privileged
    steps:
      - run: echo "capeff=\$(grep '^CapEff:' /proc/self/status | awk '{print \$2}')"
EOF
commit_all "$repo" "a privileged job"
printf 'containers:\n  allow: [privileged]\n' >"$ITEST_DIR/privileged.yml"
run_kiln -C "$repo" --config "$ITEST_DIR/privileged.yml"
expect_rc 0 "--privileged runs where kiln.yml allows it"
expect_match "$("$KILN" logs 2 -C "$repo" 2>&1)" "capeff=0*1?f+" "--privileged: every capability"

# ---- kiln's own commands in the job container -------------------------------------------------
repo="$ITEST_DIR/kiln-inside"
make_repo "$repo"
mkdir -p "$repo/src"
printf '#include <hip/hip_runtime.h>\nvoid f() { hipDeviceSynchronize(); }\n' >"$repo/src/ok.hip"
write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  inside:
    runs-on: linux
    container: $image
    steps:
      - uses: actions/checkout@v4
      - run: |
          echo "which=\$(command -v kiln)"
          kiln --version
      - run: kiln hipcheck src/ --fail-on unsupported
      - run: |
          echo '[{"name": "inside", "unit": "ms", "value": 1.5}]' > bench.json
          kiln bench ingest bench.json
EOF
commit_all "$repo" "kiln inside the container"
run_kiln -C "$repo"
expect_rc 0 "kiln's own commands run in a job container whose image has no kiln"
log="$("$KILN" logs 1 -C "$repo" 2>&1)"
expect_contains "$log" "which=/.kiln/tools/bin/kiln" "kiln is on the container's PATH"
expect_contains "$log" "$("$KILN" --version)" "the container runs this kiln"
expect_contains "$log" "file(s) handed to this job's perf gate" "kiln bench ingest inside hands the file to the job"
expect_match "$log" "Benchmark results: 1 metric\\(s\\) from .*bench.json" "the engine stores what kiln bench ingest handed over"
DESCRIPTION="after kiln inside" expect_nothing_left "$KILN_PID"

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
  : >"$ITEST_DIR/long.out"  # not the previous kiln's line
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

# ---- a failed job kept for debugging: kiln exec, kiln gpus, kiln release, the hold's end ------
repo="$ITEST_DIR/debug"
make_repo "$repo"
write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  broken:
    runs-on: [linux, "gpu:1"]
    container: $image
    env:
      FROM_JOB: job-env
    steps:
      - run: echo left-by-the-step > clue.txt; exit 4
EOF
commit_all "$repo" "a failing GPU job"
sim="$KILN_SOURCE_DIR/tests/data/gpu/one-h200.json"
printf 'debug:\n  hold: 2m\n' >"$ITEST_DIR/debug.yml"
"$KILN" run -C "$repo" --config "$ITEST_DIR/debug.yml" --simulate-gpus "$sim" --keep-failed \
  >"$ITEST_DIR/hold.out" 2>&1 </dev/null &
KILN_PID=$!
itest_track_pid "$KILN_PID"
held() { grep -q "kept for debugging until" "$ITEST_DIR/hold.out"; }
wait_until 60 held || itest_die "the failed job was not kept: $(cat "$ITEST_DIR/hold.out")"
expect_match "$(cat "$ITEST_DIR/hold.out")" \
  "kept for debugging until [0-9:]+ UTC \\(2 min\\): kiln exec 1 broken; kiln release 1 broken ends it" \
  "the log says until when the job is kept and how to get in"
kiln exec -C "$repo" 1 broken -- sh -c 'echo "pwd=$(pwd) clue=$(cat clue.txt) env=$FROM_JOB cuda=$CUDA_VISIBLE_DEVICES"'
expect_rc 0 "kiln exec runs a command in the held job's container"
expect_contains "$OUT" \
  "pwd=$repo/.kiln/work/1/broken/workspace clue=left-by-the-step env=job-env cuda=GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0" \
  "... in its workspace, with what the failed step left, the job's env and its GPU"
kiln gpus --simulate-gpus "$sim"
expect_contains "$OUT" "leased: held for debugging until" "kiln gpus shows the GPU held for debugging"
kiln exec -C "$repo" 1 other
expect_rc 2 "kiln exec of a job that is not held is bad input"
expect_contains "$ERR" "run 1 has no job 'other' kept for debugging (held: broken)" "... and says what is held"
kiln release -C "$repo" 1 broken
expect_rc 0 "kiln release ends the hold"
expect_contains "$OUT" "released run 1 job 'broken' and its GPU(s) GPU-0f1e2d3c" "kiln release says what it freed"
if wait_exit "$KILN_PID" 60; then
  if [[ $WAIT_RC -eq 1 ]]; then pass "the run ends, failed, once the hold is released"; else
    fail "kiln run exited with $WAIT_RC after the release"; fi
else
  itest_die "kiln run did not end within 60 s of kiln release"
fi
expect_contains "$(cat "$ITEST_DIR/hold.out")" "The debugging hold ended: released" "the log says how the hold ended"
DESCRIPTION="after kiln release" expect_nothing_left "$KILN_PID"
kiln gpus --simulate-gpus "$sim"
expect_not_contains "$OUT" "held for debugging" "the GPU is free again"
kiln exec -C "$repo" 1 broken
expect_rc 2 "kiln exec after the release is refused"

# The hold ends by itself; KILN_KEEP_ON_FAILURE=1 asks for it too.
printf 'debug:\n  hold: 2s\n' >"$ITEST_DIR/short.yml"
KILN_KEEP_ON_FAILURE=1 run_kiln -C "$repo" --config "$ITEST_DIR/short.yml" --simulate-gpus "$sim"
expect_rc 1 "a held job whose time runs out fails the run"
expect_contains "$OUT$ERR" "kept for debugging until" "KILN_KEEP_ON_FAILURE=1 keeps the failed job"
expect_contains "$OUT$ERR" "The debugging hold ended: its time ran out" "the hold ends by itself"
DESCRIPTION="after an expired hold" expect_nothing_left "$KILN_PID"
run_kiln -C "$repo" --simulate-gpus "$sim"
expect_rc 1 "without --keep-failed the failed job ends at once"
expect_not_contains "$OUT$ERR" "kept for debugging" "... and is not kept"
kiln run -C "$repo" --config <(printf 'debug:\n  hold: 2 days\n')
expect_rc 2 "a bad debug.hold is bad input"

# A manual run is kept when kiln.yml says so; a host job is entered in its workspace.
write_workflow "$repo" ci.yml <<EOF
on: [push, workflow_dispatch]
jobs:
  on-host:
    runs-on: linux
    env:
      FROM_JOB: host-job-env
    steps:
      - run: echo host-clue > clue.txt; exit 5
EOF
commit_all "$repo" "a failing host job"
printf 'debug:\n  hold: 1m\n  on_workflow_dispatch: true\n' >"$ITEST_DIR/dispatch.yml"
# Emptied here, before the fork: the background shell's own truncation can come after the first
# `held` check, which then reads the previous hold's line (seen under load: the run id was empty).
: >"$ITEST_DIR/hold.out"
"$KILN" run -C "$repo" --config "$ITEST_DIR/dispatch.yml" --event workflow_dispatch \
  >"$ITEST_DIR/hold.out" 2>&1 </dev/null &
KILN_PID=$!
itest_track_pid "$KILN_PID"
wait_until 60 held || itest_die "the failed manual run was not kept: $(cat "$ITEST_DIR/hold.out")"
pass "debug.on_workflow_dispatch keeps a failed workflow_dispatch run without the flag"
run_id="$(grep -o 'kiln exec [0-9]*' "$ITEST_DIR/hold.out" | head -1 | cut -d' ' -f3)"
kiln exec -C "$repo" "$run_id" on-host -- sh -c 'echo "pwd=$(pwd) clue=$(cat clue.txt) env=$FROM_JOB"'
expect_rc 0 "kiln exec enters a held host job"
expect_contains "$OUT" "pwd=$repo/.kiln/work/$run_id/on-host/workspace clue=host-clue env=host-job-env" \
  "... in its workspace, with its environment"
kiln release -C "$repo" "$run_id" on-host
expect_rc 0 "kiln release ends the host job's hold"
wait_exit "$KILN_PID" 60 || itest_die "kiln run did not end after kiln release"

# ---- a CDI specification of the NVIDIA GPUs, from a fake driver tree -------------------------
root="$ITEST_DIR/driver-root"
lib="$root/usr/lib/x86_64-linux-gnu"
mkdir -p "$root/dev" "$lib" "$root/usr/bin"
touch "$root/dev/nvidiactl" "$root/dev/nvidia0" "$root/dev/nvidia-uvm" "$root/usr/bin/nvidia-smi" \
  "$lib/libcuda.so.550.54.15" "$lib/libnvidia-ml.so.550.54.15"
ln -s libcuda.so.550.54.15 "$lib/libcuda.so.1"
ln -s libnvidia-ml.so.550.54.15 "$lib/libnvidia-ml.so.1"
kiln gpus --simulate-gpus "$KILN_SOURCE_DIR/tests/data/gpu/one-h200.json" \
  --cdi-spec "$ITEST_DIR/cdi.json" --driver-root "$root"
expect_rc 0 "kiln gpus --cdi-spec writes a CDI specification"
expect_contains "$OUT" "2 device name(s) of kind nvidia.com/gpu" "... naming the GPU by UUID and by index"
expect_contains "$ERR" "/dev/nvidia-uvm-tools is not on this host: left out" "what the host lacks is said"
spec="$(json_eval "$ITEST_DIR/cdi.json" '[d["kind"]] + [x["name"] for x in d["devices"]] + [m["containerPath"] for m in d["containerEdits"]["mounts"]]')"
expect_contains "$spec" '"nvidia.com/gpu", "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "0"' "the devices are the GPU's UUID and index"
expect_contains "$spec" "/usr/lib/x86_64-linux-gnu/libcuda.so.1" "libcuda is mounted at its soname"
expect_contains "$spec" "/usr/bin/nvidia-smi" "nvidia-smi is mounted"
kiln gpus --simulate-gpus "$KILN_SOURCE_DIR/tests/data/gpu/one-h200.json" \
  --cdi-spec "$ITEST_DIR/none.json" --driver-root "$ITEST_DIR/no-driver"
expect_rc 2 "no driver on the host: no specification"
expect_contains "$ERR" "no driver libraries" "... and the error says what is missing"

itest_end
