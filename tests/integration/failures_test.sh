#!/usr/bin/env bash
# Failure classes through the real binary (docs/failures.md): one job per class, each failed by an
# injected fault of that class, is classified as injected, with its evidence line, in the
# terminal summary, `kiln run --json`, `kiln report` (text and JSON) and the store. Faults: a step
# exiting non-zero (code), a kill -9 without kernel evidence (code), a job timeout (timeout), a
# cgroup memory limit the kernel's OOM killer enforces (oom; where a memory cgroup can be made and
# /dev/kmsg read), an Xid and a GPU that vanishes mid-job from the simulated provider
# (gpu-fault, the GPU quarantined), GPU memory held by a process that is not the job's
# (gpu-busy), a container engine killed by SIGKILL and an exception in kiln (infra), Ctrl-C
# (cancelled).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin failures_test

export SPEC="$ITEST_DIR/gpus.json" FLAGS="$ITEST_DIR/flags" GATE="$ITEST_DIR/gate"
mkdir -p "$FLAGS"
# The classes first, with no automatic retry; kiln.yml's defaults (retry.gpu-fault 1, retry.infra
# 1) below.
printf 'gpus:\n  health:\n    memory_grace: 300ms\n' >"$ITEST_DIR/defaults.yml"
printf 'retry:\n  gpu-fault: 0\n  infra: 0\n' | cat "$ITEST_DIR/defaults.yml" - >"$ITEST_DIR/no-retry.yml"
export KILN_CONFIG="$ITEST_DIR/no-retry.yml"

# Two simulated GPUs; once $FLAGS/xid-UUID exists that GPU reports an Xid, once $FLAGS/gone-UUID
# exists it is no longer listed. A fresh host store each time: no quarantine carried over.
fresh_gpus() {
  rm -f "$FLAGS"/*
  python3 - <<'PY'
import json, os
flags = os.environ["FLAGS"]
gpus = []
for i in range(2):
    uuid = "GPU-sim-%012d" % i
    gpus.append({"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90",
                 "memory_mib": 143771, "uuid": uuid,
                 "inject": {"when": f"{flags}/xid-{uuid}",
                            "faults": ["Xid 79: GPU has fallen off the bus"]}})
json.dump({"gpus": gpus}, open(os.environ["SPEC"], "w"))
PY
  export KILN_HOST_STORE="$ITEST_DIR/host-$RANDOM$RANDOM.db"
}
# vanishing_gpus: as fresh_gpus, but each GPU vanishes once $FLAGS/gone-UUID exists.
vanishing_gpus() {
  fresh_gpus
  python3 - <<'PY'
import json, os
spec = json.load(open(os.environ["SPEC"]))
for g in spec["gpus"]:
    g["inject"] = {"when": os.environ["FLAGS"] + "/gone-" + g["uuid"], "vanish": True}
json.dump(spec, open(os.environ["SPEC"], "w"))
PY
}
# hold_memory.py UUID PID MIB: the driver now shows process PID holding MIB on that GPU.
cat >"$ITEST_DIR/hold_memory.py" <<'PY'
import json, os, sys
uuid, pid, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
path = os.environ["SPEC"]
spec = json.load(open(path))
for g in spec["gpus"]:
    if g["uuid"] == uuid:
        g.setdefault("processes", []).append({"pid": pid, "memory_mib": mib})
json.dump(spec, open(path + ".tmp", "w"))
os.replace(path + ".tmp", path)
PY
export HOLD_MEMORY="$ITEST_DIR/hold_memory.py"

# A memory cgroup this test may make (v1 or v2) and a readable kernel log: the OOM case needs
# both; without them it is said and skipped, never passed.
OOM_CG=""
if [[ -w /sys/fs/cgroup/memory && -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]]; then
  OOM_CG="/sys/fs/cgroup/memory/kiln-failures-test-$$"
  OOM_LIMIT_FILE=memory.limit_in_bytes
elif [[ -w /sys/fs/cgroup/cgroup.subtree_control ]] &&
  grep -qw memory /sys/fs/cgroup/cgroup.subtree_control; then
  OOM_CG="/sys/fs/cgroup/kiln-failures-test-$$"
  OOM_LIMIT_FILE=memory.max
fi
if [[ -n "$OOM_CG" ]] && ! timeout 2 dd if=/dev/kmsg of=/dev/null count=1 status=none 2>/dev/null; then
  OOM_CG=""
fi
export OOM_CG OOM_LIMIT_FILE
cleanup_cgroup() { if [[ -n "$OOM_CG" && -d "$OOM_CG" ]]; then rmdir "$OOM_CG" 2>/dev/null || true; fi; }

mkdir -p "$ITEST_DIR/engine"
# A container engine that the kernel kills as it starts anything (SIGKILL, as the OOM killer or
# a crash would end it): only `--version` answers.
cat >"$ITEST_DIR/engine/podman" <<'SH'
#!/usr/bin/env bash
if [[ "${1:-}" == "--version" || "${1:-}" == "version" ]]; then echo "podman version 4.9.3"; exit 0; fi
kill -9 $$
SH
chmod +x "$ITEST_DIR/engine/podman"
# Real podman, except for a step's `exec -w DIR ... CONTAINER ARGV` (not kiln's lookup of the
# shell, which has no -w), which ENGINE_FAULT breaks mid-step: `kill` kills `podman exec` with
# SIGKILL once the step is running; `stop` stops the job container first, so that podman exec
# fails itself (125 by its man page; podman 4.3 exits 255, "container state improper"). The
# test image's steps run through `podman exec` with KILN_STEP_HELPER=off.
CONTAINERS=""
mkdir -p "$ITEST_DIR/engine-mid"
if command -v podman >/dev/null &&
  bash "$KILN_SOURCE_DIR/tests/containers/build_test_image.sh" podman >/dev/null; then
  CONTAINERS=yes
  cat >"$ITEST_DIR/engine-mid/podman" <<SH
#!/usr/bin/env bash
real="$(command -v podman)"
SH
  cat >>"$ITEST_DIR/engine-mid/podman" <<'SH'
if [[ "${1:-}" == exec && "${2:-}" == -w ]]; then
  case "${ENGINE_FAULT:-}" in
    kill)
      "$real" "$@" &
      for _ in $(seq 1200); do [[ -e "$GITHUB_WORKSPACE/started" ]] && break; sleep 0.05; done
      kill -9 $!
      kill -9 $$
      ;;
    stop)
      args=("${@:4}")
      while [[ "${args[0]}" == -e ]]; do args=("${args[@]:2}"); done
      "$real" stop -t 0 "${args[0]}" >/dev/null 2>&1
      ;;
  esac
fi
exec "$real" "$@"
SH
  chmod +x "$ITEST_DIR/engine-mid/podman"
fi

repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'YAML'
on: push
jobs:
  code:
    runs-on: ubuntu-latest
    steps:
      - name: fail
        run: exit 3
  killed:
    runs-on: ubuntu-latest
    steps:
      - name: kill -9
        run: kill -9 $$
  slow:
    runs-on: ubuntu-latest
    timeout-minutes: 0.03
    steps:
      - run: sleep 30
  oom:
    runs-on: ubuntu-latest
    steps:
      - name: allocate
        run: |
          mkdir -p "$OOM_CG"
          echo $((32 * 1024 * 1024)) >"$OOM_CG/$OOM_LIMIT_FILE"
          echo $$ >"$OOM_CG/cgroup.procs"
          python3 -c 'b = bytearray(512 << 20); print(len(b))'
  xid:
    runs-on: [self-hosted, gpu]
    steps:
      - name: train
        run: |
          touch "$FLAGS/xid-$KILN_GPU_UUIDS"
          echo "CUDA error: unspecified launch failure" >&2
          exit 1
  vanish:
    runs-on: [self-hosted, gpu]
    steps:
      - name: train
        run: |
          touch "$FLAGS/gone-$KILN_GPU_UUIDS"
          exit 1
  busy:
    runs-on: [self-hosted, gpu]
    steps:
      - name: train
        run: |
          python3 "$HOLD_MEMORY" "$KILN_GPU_UUIDS" "$FOREIGN_PID" 140000
          echo "CUDA out of memory" >&2
          exit 1
  engine:
    runs-on: ubuntu-latest
    container: alpine:3.20
    steps:
      - run: echo never
  engine-mid:
    runs-on: ubuntu-latest
    container: localhost/kiln-test:1
    steps:
      - name: work
        run: |
          touch started
          sleep 60
  container-125:
    runs-on: ubuntu-latest
    container: localhost/kiln-test:1
    steps:
      - name: exit 125
        run: exit 125
  container-127:
    runs-on: ubuntu-latest
    container: localhost/kiln-test:1
    steps:
      - name: not found
        run: no-such-command-here
  boom:
    runs-on: ubuntu-latest
    steps:
      - run: echo never
  unlucky:
    runs-on: [self-hosted, gpu]
    steps:
      - name: train
        run: |
          echo "$GITHUB_RUN_ATTEMPT $KILN_GPU_UUIDS" >>"$FLAGS/attempts"
          if [ "$GITHUB_RUN_ATTEMPT" = 1 ]; then
            touch "$FLAGS/xid-$KILN_GPU_UUIDS"
            exit 1
          fi
  gated:
    runs-on: ubuntu-latest
    steps:
      - run: |
          touch "$FLAGS/gated-started"
          while [ ! -e "$GATE" ]; do sleep 0.05; done
YAML
commit_all "$repo" "one job per failure class"

# run_job JOB [ARGS...]: `kiln run --job JOB --json`; the job's class and evidence in CLASS and
# EVIDENCE, the run's id in RUN.
run_job() {
  local job="$1"
  shift
  kiln run -C "$repo" --job "$job" --json --simulate-gpus "$SPEC" "$@"
  CLASS="$(json_eval - 'd["runs"][0]["jobs"][0]["failure_class"]' 2>/dev/null || echo '?')"
  EVIDENCE="$(json_eval - 'd["runs"][0]["jobs"][0]["failure_evidence"]' 2>/dev/null || echo '?')"
  RUN="$(json_eval - 'd["runs"][0]["id"]' 2>/dev/null || echo 0)"
}

# ---- code -----------------------------------------------------------------------------------
fresh_gpus
run_job code
expect_rc 1 "a failing step fails the run"
expect_eq "$CLASS" code "a step that exited non-zero is class code"
expect_eq "$EVIDENCE" "step 'fail' exited with code 3" "the evidence names the step and its code"
kiln report -C "$repo" "$RUN" --format json
expect_json 'd["jobs"][0]["failure_class"] + " | " + d["jobs"][0]["failure_evidence"]' \
  "code | step 'fail' exited with code 3" "kiln report --format json has the class from the store"
kiln report -C "$repo" "$RUN"
expect_contains "$OUT" "class code: step 'fail' exited with code 3" "kiln report shows the class"
kiln run -C "$repo" --job code --simulate-gpus "$SPEC"
expect_contains "$OUT" "class code: step 'fail' exited with code 3" \
  "the terminal summary shows the class and its evidence"

run_job killed
expect_eq "$CLASS" code "a kill -9 without an OOM record in the kernel log is class code"

# ---- timeout --------------------------------------------------------------------------------
run_job slow
expect_eq "$CLASS" timeout "a job past its timeout-minutes is class timeout"
expect_eq "$EVIDENCE" "step 'Run sleep 30' timed out" "the timeout's evidence"

# ---- oom ------------------------------------------------------------------------------------
if [[ -n "$OOM_CG" ]]; then
  run_job oom
  cleanup_cgroup
  expect_eq "$CLASS" oom "a step the kernel killed at its cgroup's memory limit is class oom"
  expect_match "$EVIDENCE" "^step 'allocate' was killed \(exit code 137\); the kernel: .*[Oo]ut of memory: Killed process [0-9]+ \(python3\)" \
    "the OOM evidence quotes the kernel's kill"
else
  echo "  skip: oom (no memory cgroup this test may make, or /dev/kmsg cannot be read)"
fi

# ---- gpu-fault: an Xid mid-job, a GPU that falls off the bus --------------------------------
fresh_gpus
run_job xid
expect_eq "$CLASS" gpu-fault "a job whose GPU reported an Xid mid-job is class gpu-fault"
expect_eq "$EVIDENCE" "GPU 0 (GPU-sim-000000000000): Xid 79: GPU has fallen off the bus" \
  "the evidence names the GPU and the Xid"
kiln gpus --json --simulate-gpus "$SPEC"
expect_json 'd["gpus"][0]["state"]["kind"]' quarantined "the faulty GPU is quarantined"
expect_json 'd["gpus"][1]["state"]["kind"]' free "the other GPU is not"

vanishing_gpus
run_job vanish
expect_eq "$CLASS" gpu-fault "a job whose GPU vanished mid-job is class gpu-fault"
expect_eq "$EVIDENCE" "GPU 0 (GPU-sim-000000000000): no longer reported by the driver" \
  "the evidence says the driver stopped listing it"

# ---- gpu-busy: memory held by a process that is not the job's -------------------------------
fresh_gpus
sleep 300 &
FOREIGN_PID=$!
export FOREIGN_PID
itest_track_pid "$FOREIGN_PID"
run_job busy
expect_eq "$CLASS" gpu-busy "a failed job whose GPU memory someone else held is class gpu-busy"
expect_match "$EVIDENCE" "^GPU 0 \(GPU-sim-000000000000\): 140000 MiB held by pid $FOREIGN_PID \(sleep\), not a process of the job$" \
  "the evidence names the holder"
kill "$FOREIGN_PID" 2>/dev/null || true

# ---- infra: a container engine killed by SIGKILL, an exception in kiln ----------------------
fresh_gpus
run_job engine --container-engine "$ITEST_DIR/engine/podman"
expect_eq "$CLASS" infra "a job whose container engine was killed is class infra"
expect_contains "$EVIDENCE" "the job's containers did not start" "the engine's evidence"
if [[ -n "$CONTAINERS" ]]; then
  mid="$ITEST_DIR/engine-mid/podman"
  ENGINE_FAULT=kill KILN_STEP_HELPER=off run_job engine-mid --container-engine "$mid"
  expect_eq "$CLASS" infra "a job whose podman exec was killed mid-step is class infra"
  expect_eq "$EVIDENCE" "step 'work': podman exec was killed by signal 9 (SIGKILL)" \
    "the evidence names the step and the engine client's signal"
  ENGINE_FAULT=stop KILN_STEP_HELPER=off run_job engine-mid --container-engine "$mid"
  expect_eq "$CLASS" infra "a job whose container stopped under a step is class infra"
  expect_match "$EVIDENCE" "^step 'work': podman exec exited with code [0-9]+, and the job container (is not running|cannot be inspected)" \
    "the evidence names podman's exit code and the stopped container"
  # The step's own exit codes stay the step's, whatever podman uses them for.
  KILN_STEP_HELPER=off run_job container-125 --container-engine "$mid"
  expect_eq "$CLASS $EVIDENCE" "code step 'exit 125' exited with code 125" \
    "a step that exits 125 in a running container is class code"
  run_job container-125
  expect_eq "$CLASS" code "through the step helper too"
  KILN_STEP_HELPER=off run_job container-127 --container-engine "$mid"
  expect_eq "$CLASS $EVIDENCE" "code step 'not found' exited with code 127" \
    "a command not found in the step's script is class code"
else
  echo "  skip: a container engine killed mid-step (podman or its test image is missing)"
fi
KILN_TEST_THROW_IN_JOB=boom run_job boom
expect_eq "$CLASS" infra "a job kiln threw in is class infra"
expect_contains "$EVIDENCE" "infrastructure failure: KILN_TEST_THROW_IN_JOB" "kiln's own failure"

# ---- cancelled ------------------------------------------------------------------------------
rm -f "$GATE"
"$KILN" run -C "$repo" --job gated --json >"$ITEST_DIR/gated.out" 2>"$ITEST_DIR/gated.err" &
gated_pid=$!
itest_track_pid "$gated_pid"
wait_until 20 test -e "$FLAGS/gated-started" || itest_die "the gated job did not start"
kill -INT "$gated_pid"
wait_exit "$gated_pid" 30
cp "$ITEST_DIR/gated.out" "$ITEST_DIR/last.out"
expect_json 'd["runs"][0]["jobs"][0]["failure_class"]' cancelled "an interrupted job is class cancelled"
run="$(json_eval - 'd["runs"][0]["id"]')"
kiln report -C "$repo" "$run" --format json
expect_json 'd["jobs"][0]["failure_class"]' cancelled "the store keeps the cancelled class"

# ---- success has none -----------------------------------------------------------------------
touch "$GATE"
run_job gated
expect_rc 0 "the gated job succeeds when its gate is open"
expect_eq "$CLASS" None "a job that succeeded has no class (null)"

# ---- automatic retry (kiln.yml defaults: gpu-fault and infra once) --------------------------
export KILN_CONFIG="$ITEST_DIR/defaults.yml"
fresh_gpus
run_job unlucky
expect_rc 0 "a run failed by a GPU fault is green on its automatic retry"
expect_json 'd["runs"][0]["attempt"]' 2 "the retry is the run's attempt 2"
expect_json 'd["runs"][0]["retry_of"] == d["retried"][0]["id"]' true \
  "the retry names the attempt it ran again"
expect_json 'd["retried"][0]["jobs"][0]["failure_class"]' gpu-fault \
  "the earlier attempt stays in the report, with its class"
expect_json 'd["runs"][0]["retry_reason"]' \
  "unlucky: gpu-fault: GPU 0 (GPU-sim-000000000000): Xid 79: GPU has fallen off the bus" \
  "the retry says why"
expect_eq "$(cat "$FLAGS/attempts")" "1 GPU-sim-000000000000
2 GPU-sim-000000000001" "github.run_attempt counts 1 then 2, and the retry ran on the other GPU"
first="$(json_eval - 'd["retried"][0]["id"]')"
kiln gpus --json --simulate-gpus "$SPEC"
expect_json 'd["gpus"][0]["state"]["kind"]' quarantined "the faulty GPU stays quarantined"
kiln runs -C "$repo" --json
expect_json "[r['status'] for r in d if r['id'] == $first][0]" failure \
  "the failed first attempt is still listed by kiln runs"
fresh_gpus
kiln run -C "$repo" --job unlucky --simulate-gpus "$SPEC"
expect_contains "$OUT" "retried automatically" "the terminal summary shows the earlier attempt"

fresh_gpus
run_job code
expect_rc 1 "a code failure stays red"
expect_json 'len(d["retried"])' 0 "a code failure is never retried"
expect_json 'd["runs"][0]["attempt"]' 1 "and runs once"

run_job engine --container-engine "$ITEST_DIR/engine/podman"
expect_rc 1 "an infrastructure failure that persists stays red"
expect_json 'len(d["retried"]), d["runs"][0]["attempt"], d["runs"][0]["jobs"][0]["failure_class"]' \
  "(1, 2, 'infra')" "an infrastructure failure is retried once (the default), then reported"

# ---- retry: in kiln.yml is checked ----------------------------------------------------------
for bad in "retry:\n  code: 1\n|never retried automatically" \
  "retry:\n  gpu-fault: 9\n|from 0 to 5" "retry:\n  flaky: 1\n|unknown key 'flaky'"; do
  printf "${bad%%|*}" >"$ITEST_DIR/bad.yml"
  kiln run -C "$repo" --job code --config "$ITEST_DIR/bad.yml"
  expect_rc 2 "kiln.yml '${bad%%|*}' is bad input"
  expect_match "$ERR" "bad.yml:2:[0-9]+: .*${bad#*|}" "its error is located and says why"
done

cleanup_cgroup
itest_end
