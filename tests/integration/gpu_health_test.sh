#!/usr/bin/env bash
# GPU leases and health through the real binary, on simulated inventories (docs/gpus.md):
# two kiln processes share one GPU in turn; a kill -9'd kiln's lease is reclaimed; a process
# left holding GPU memory is killed; memory that does not come back quarantines the GPU until
# `kiln gpus --release` or a passing re-check; a driver fault quarantines it; custom labels come
# from kiln.yml; kiln validate rejects a request the host can never satisfy.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin gpu_health_test

SPEC="$ITEST_DIR/gpus.json"
export SPEC GATE="$ITEST_DIR/gate" EVENTS="$ITEST_DIR/events"
# spec.py memory GPU MIB | process GPU PID MIB | fault GPU TEXT | clear: edits the simulated
# inventory the way a driver's answers would change.
cat >"$ITEST_DIR/spec.py" <<'PY'
import json, os, sys
path = os.environ["SPEC"]
spec = json.load(open(path))
what, args = sys.argv[1], sys.argv[2:]
if what == "clear":
    for gpu in spec["gpus"]:
        for key in ("memory_used_mib", "processes", "faults"):
            gpu.pop(key, None)
else:
    gpu = spec["gpus"][int(args[0])]
    if what == "memory":
        gpu["memory_used_mib"] = int(args[1])
    elif what == "process":
        gpu.setdefault("processes", []).append({"pid": int(args[1]), "memory_mib": int(args[2])})
    elif what == "fault":
        gpu.setdefault("faults", []).append(args[1])
json.dump(spec, open(path + ".tmp", "w"))
os.replace(path + ".tmp", path)
PY
export SPEC_TOOL="$ITEST_DIR/spec.py"
two_gpus() {
  cat >"$SPEC" <<'JSON'
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771},
          {"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771}],
 "links": [{"a": 0, "b": 1, "kind": "nvlink", "width": 18}]}
JSON
}
one_gpu() {
  cat >"$SPEC" <<'JSON'
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771}]}
JSON
}
printf 'gpus:\n  health:\n    memory_grace: 300ms\n' >"$ITEST_DIR/kiln.yml"
export KILN_CONFIG="$ITEST_DIR/kiln.yml"

# A repository whose one job takes a GPU, says when it starts, and waits for $GATE.
gated_repo() {
  make_repo "$1"
  write_workflow "$1" ci.yml <<'YAML'
on: push
jobs:
  train:
    runs-on: [self-hosted, gpu]
    steps:
      - run: |
          echo "start $KILN_GPU_UUIDS" >>"$EVENTS"
          while [ ! -e "$GATE" ]; do sleep 0.05; done
          echo "end" >>"$EVENTS"
YAML
  commit_all "$1" "gated GPU job"
}

# ---- two kiln processes, one GPU: the second waits for the first's lease --------------------
one_gpu
gated_repo "$ITEST_DIR/a"
gated_repo "$ITEST_DIR/b"
: >"$EVENTS"
"$KILN" run -C "$ITEST_DIR/a" --simulate-gpus "$SPEC" >"$ITEST_DIR/a.out" 2>&1 &
a_pid=$!
itest_track_pid "$a_pid"
wait_until 20 grep -q "start" "$EVENTS" || itest_die "the first run's GPU job did not start"
kiln gpus --json --simulate-gpus "$SPEC"
expect_rc 0 "kiln gpus while a job holds the GPU"
expect_json 'd["gpus"][0]["state"]["kind"]' leased "the GPU is shown leased"
expect_json '"train" in d["gpus"][0]["state"]["detail"]' true "the holder names the job"
"$KILN" run -C "$ITEST_DIR/b" --simulate-gpus "$SPEC" >"$ITEST_DIR/b.out" 2>&1 &
b_pid=$!
itest_track_pid "$b_pid"
sleep 1
if [[ "$(grep -c start "$EVENTS")" == 1 ]]; then
  pass "the second kiln's GPU job waits while the first holds the GPU"
else
  fail "both kiln processes ran a job on the one GPU: $(cat "$EVENTS")"
fi
touch "$GATE"
wait_exit "$a_pid" 30 || itest_die "the first run did not end"
wait_exit "$b_pid" 30 || itest_die "the second run did not end"
expect_contains "$(cat "$EVENTS")" "$(printf 'start GPU-sim-000000000000\nend\nstart GPU-sim-000000000000\nend')" \
  "the second job started after the first ended, on the same GPU"
kiln gpus --json --simulate-gpus "$SPEC"
expect_json 'd["gpus"][0]["state"]["kind"]' free "the lease is released at the end"

# ---- kill -9 of a kiln holding a lease: the next kiln reclaims it ---------------------------
rm -f "$GATE"
: >"$EVENTS"
"$KILN" run -C "$ITEST_DIR/a" --simulate-gpus "$SPEC" >"$ITEST_DIR/a2.out" 2>&1 &
a_pid=$!
itest_track_pid "$a_pid"
wait_until 20 grep -q "start" "$EVENTS" || itest_die "the GPU job did not start"
kill -9 "$a_pid"
wait_exit "$a_pid" 10 || true
kiln gpus --json --simulate-gpus "$SPEC"
expect_json 'd["gpus"][0]["state"]["kind"]' free "a dead kiln's lease leaves the GPU free in kiln gpus"
expect_json '"train" in d["gpus"][0]["state"]["detail"] and "is gone" in d["gpus"][0]["state"]["detail"]' \
  true "kiln gpus says whose the void lease was"
touch "$GATE"
kiln run -C "$ITEST_DIR/b" --simulate-gpus "$SPEC"
expect_rc 0 "a run after kill -9 of the lease holder"
expect_contains "$OUT$ERR" "reclaimed the lease on GPU GPU-sim-000000000000" \
  "the dead kiln's lease is reclaimed, and said so"

# ---- leftover process holding memory, memory that does not come back -----------------------
two_gpus
make_repo "$ITEST_DIR/c"
write_workflow "$ITEST_DIR/c" ci.yml <<'YAML'
on: push
jobs:
  leaky:
    runs-on: [self-hosted, gpu]
    steps:
      - run: |
          sleep 300 &
          python3 "$SPEC_TOOL" process 0 $! 20000
          echo "left pid $! holding 20000 MiB"
YAML
commit_all "$ITEST_DIR/c" "a job leaving a process on the GPU"
kiln run -C "$ITEST_DIR/c" --simulate-gpus "$SPEC"
expect_rc 0 "the job that leaves a process succeeds"
expect_match "$OUT" "Cleaning up: killed leftover process pid [0-9]+ \(sleep\)" \
  "the leftover process is killed and named in the log"
expect_not_contains "$OUT$ERR" "quarantined" "its memory came back with it: no quarantine"

write_workflow "$ITEST_DIR/c" ci.yml <<'YAML'
on: push
jobs:
  leaky:
    runs-on: [self-hosted, gpu]
    steps:
      - run: python3 "$SPEC_TOOL" memory 0 30000
YAML
commit_all "$ITEST_DIR/c" "a job whose GPU memory does not come back"
kiln run -C "$ITEST_DIR/c" --simulate-gpus "$SPEC"
expect_rc 0 "the job itself succeeds"
expect_contains "$OUT" "GPU 0 (GPU-sim-000000000000) quarantined: memory did not come back after" \
  "the GPU whose memory stays in use is quarantined, in the job's log"
kiln gpus --json --simulate-gpus "$SPEC"
expect_json 'd["gpus"][0]["state"]["kind"]' quarantined "kiln gpus shows the quarantine"
expect_json '"30000 MiB in use" in d["gpus"][0]["state"]["detail"]' true "with the reason"
kiln gpus --simulate-gpus "$SPEC"
expect_match "$OUT" "^0 .*quarantined: memory did not come back" "the table shows it too"

# The next GPU job gets the other GPU.
kiln run -C "$ITEST_DIR/b" --simulate-gpus "$SPEC"
expect_rc 0 "a GPU job while GPU 0 is quarantined"
expect_contains "$(grep start "$EVENTS" | tail -1)" "GPU-sim-000000000001" \
  "it is placed on the healthy GPU"

kiln gpus --simulate-gpus "$SPEC" --release 0
expect_rc 0 "kiln gpus --release"
expect_contains "$OUT" "GPU 0 released from quarantine" "release says so"
kiln gpus --simulate-gpus "$SPEC" --release 0
expect_contains "$OUT" "GPU 0 was not quarantined" "a second release says there was nothing to do"
kiln gpus --simulate-gpus "$SPEC" --release 7
expect_rc 2 "releasing a GPU that does not exist is bad input"

# Quarantined again; this time the memory comes back and the re-check returns it to service.
python3 "$SPEC_TOOL" clear
kiln run -C "$ITEST_DIR/c" --simulate-gpus "$SPEC"
expect_contains "$OUT" "quarantined: memory did not come back" "quarantined again"
python3 "$SPEC_TOOL" clear
kiln run -C "$ITEST_DIR/b" --simulate-gpus "$SPEC"
expect_rc 0 "a GPU job after the memory came back"
expect_contains "$OUT$ERR" "GPU 0 (GPU-sim-000000000000) passed its re-check and is back in service" \
  "the re-check returns the GPU"

# ---- a driver fault quarantines the GPU --------------------------------------------------------
python3 "$SPEC_TOOL" fault 1 "2 uncorrected ECC errors since the driver loaded"
kiln gpus --json --simulate-gpus "$SPEC"
expect_json 'd["gpus"][1]["faults"]' '["2 uncorrected ECC errors since the driver loaded"]' \
  "the fault is in the inventory"
kiln run -C "$ITEST_DIR/b" --simulate-gpus "$SPEC"
expect_rc 0 "a GPU job next to a faulty GPU"
expect_contains "$OUT$ERR" "GPU 1 (GPU-sim-000000000001) quarantined: fault: 2 uncorrected ECC errors" \
  "the faulty GPU is quarantined with the fault"
expect_contains "$(grep start "$EVENTS" | tail -1)" "GPU-sim-000000000000" "the job runs on the healthy GPU"

python3 "$SPEC_TOOL" clear
kiln run -C "$ITEST_DIR/b" --simulate-gpus "$SPEC"
kiln gpus --json --simulate-gpus "$SPEC"
expect_json 'd["gpus"][1]["state"]["kind"]' quarantined \
  "a fault quarantine stays after the fault is gone: only --release lifts it"
kiln gpus --simulate-gpus "$SPEC" --release 1
expect_contains "$OUT" "GPU 1 released from quarantine" "--release lifts a fault quarantine"

# ---- custom labels from kiln.yml ---------------------------------------------------------------
cat >"$ITEST_DIR/labels.yml" <<'YAML'
gpus:
  labels:
    gpu-h200x2: gpu:2 gpu-model:h200
    linux.cuda.gpu.{arch}.{count}: gpu:{count} gpu-arch:{arch}
YAML
make_repo "$ITEST_DIR/d"
write_workflow "$ITEST_DIR/d" ci.yml <<'YAML'
on: push
jobs:
  pair:
    runs-on: [self-hosted, gpu-h200x2]
    steps:
      - run: echo "pair got $KILN_GPUS GPUs"
  pattern:
    needs: pair
    runs-on: [self-hosted, linux.cuda.gpu.sm_90.1]
    steps:
      - run: echo "pattern got $KILN_GPUS GPU"
YAML
commit_all "$ITEST_DIR/d" "custom GPU labels"
kiln run -C "$ITEST_DIR/d" --simulate-gpus "$SPEC" --config "$ITEST_DIR/labels.yml"
expect_rc 0 "jobs with custom labels"
expect_contains "$OUT" "pair got 2 GPUs" "an exact custom label maps to its request"
expect_contains "$OUT" "pattern got 1 GPU" "a pattern label maps its placeholders"

printf 'gpus:\n  labels:\n    gpu-h200x2: gpu:two\n' >"$ITEST_DIR/bad.yml"
kiln run -C "$ITEST_DIR/d" --simulate-gpus "$SPEC" --config "$ITEST_DIR/bad.yml"
expect_rc 2 "a bad host config is bad input"
expect_contains "$ERR" "bad.yml:3:17: error: runs-on label 'gpu:two'" "the error names FILE:LINE:COL"
if [[ "$(wc -l <<<"$ERR")" == 1 ]]; then pass "one line"; else fail "one line: $ERR"; fi

# ---- kiln validate: a request this host can never satisfy ---------------------------------------
one_gpu
kiln validate "$ITEST_DIR/d" --simulate-gpus "$SPEC" --config "$ITEST_DIR/labels.yml"
expect_rc 2 "validate rejects a request the host can never satisfy"
expect_contains "$ERR" ".github/workflows/ci.yml:4:28: error: job 'pair' asks for gpu:2 gpu-model:h200: never satisfiable on this host" \
  "at the label's FILE:LINE:COL, with the reason"
kiln validate "$ITEST_DIR/d" --config "$ITEST_DIR/labels.yml"
expect_rc 0 "without GPUs to check against, only the grammar is checked"

# A job that asks for GPUs only through its container's options.
make_repo "$ITEST_DIR/e"
write_workflow "$ITEST_DIR/e" ci.yml <<'YAML'
on: push
jobs:
  train:
    runs-on: [self-hosted]
    container:
      image: localhost/pytorch:1
      options: --gpus 2 --shm-size=2gb
    steps:
      - run: nvidia-smi
YAML
commit_all "$ITEST_DIR/e" "GPUs from container options"
kiln validate "$ITEST_DIR/e" --simulate-gpus "$SPEC"
expect_rc 2 "container options asking for more GPUs than the host has"
expect_contains "$ERR" "ci.yml:7:16: error: job 'train' asks for gpu:2 gpu-vendor:nvidia: never satisfiable" \
  "the error points at the container options"

itest_end
