#!/usr/bin/env bash
# GPU telemetry through the real binary on a simulated GPU (docs/gpus.md "Telemetry"): a job's
# GPU summary in the terminal summary, in `kiln run --json` and in the job's store row; a job
# whose step raises its simulated GPU memory above its gpu-mem-budget label fails naming the
# budget, the peak and the process. No timings are asserted: the budget job waits until kiln's
# sampler has seen it and killed it.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin gpu_telemetry_test

SPEC="$ITEST_DIR/gpus.json"
export SPEC
cat >"$SPEC" <<'JSON'
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm_90", "memory_mib": 143771,
           "telemetry": {"utilization_pct": 80, "temperature_c": 65, "power_w": 500,
                         "sm_clock_mhz": 1980, "throttle_reasons": ["gpu_idle"]}}]}
JSON
# The step's tool: gives process PID MIB of the simulated GPU, as a driver would show it.
cat >"$ITEST_DIR/hold.py" <<'PY'
import json, os, sys
path = os.environ["SPEC"]
spec = json.load(open(path))
spec["gpus"][0]["processes"] = [{"pid": int(sys.argv[1]), "memory_mib": int(sys.argv[2])}]
json.dump(spec, open(path + ".tmp", "w"))
os.replace(path + ".tmp", path)
PY
export HOLD="$ITEST_DIR/hold.py"
printf 'gpus:\n  telemetry:\n    interval: 100ms\n  health:\n    memory_grace: 300ms\n' \
  >"$ITEST_DIR/kiln.yml"
export KILN_CONFIG="$ITEST_DIR/kiln.yml"

# ---- a GPU job within its budget: the summary --------------------------------------------------
make_repo "$ITEST_DIR/ok"
write_workflow "$ITEST_DIR/ok" ci.yml <<'YAML'
on: push
jobs:
  train:
    runs-on: [self-hosted, gpu, gpu-mem-budget:8G]
    steps:
      - run: echo "on $KILN_GPU_UUIDS"
YAML
commit_all "$ITEST_DIR/ok" "a GPU job"
kiln run -C "$ITEST_DIR/ok" --simulate-gpus "$SPEC" --json
expect_rc 0 "a GPU job within its budget succeeds"
expect_json 'd["runs"][0]["jobs"][0]["gpu"]["gpus"]' 1 "--json has the job's GPU summary"
expect_json 'd["runs"][0]["jobs"][0]["gpu"]["samples"] >= 1' true "the job was sampled"
expect_json 'd["runs"][0]["jobs"][0]["gpu"]["mean_utilization_pct"]' 80.0 \
  "mean utilization from the simulated telemetry"
expect_json 'd["runs"][0]["jobs"][0]["gpu"]["max_temperature_c"]' 65.0 "max temperature"
expect_json 'd["runs"][0]["jobs"][0]["gpu"]["throttled_seconds"]' 0.0 "gpu_idle is not throttling"
expect_json 'd["runs"][0]["jobs"][0]["gpu"]["energy_wh"] is not None' true "energy is reported"

kiln run -C "$ITEST_DIR/ok" --simulate-gpus "$SPEC"
expect_rc 0 "the same job, terminal output"
expect_match "$OUT$ERR" "GPU train: 1 GPU\(s\), memory peak 0 MiB.*utilization 80%.*max 65 C" \
  "the run summary shows the GPU summary"

# ---- a step that goes over its budget ----------------------------------------------------------
make_repo "$ITEST_DIR/over"
write_workflow "$ITEST_DIR/over" ci.yml <<'YAML'
on: push
jobs:
  greedy:
    runs-on: [self-hosted, gpu, gpu-mem-budget:2G]
    steps:
      - run: |
          python3 "$HOLD" $$ 4096
          # Holds the memory until kiln's sampler sees it and kills the job's processes.
          while true; do sleep 0.1; done
YAML
commit_all "$ITEST_DIR/over" "a job over its GPU memory budget"
kiln run -C "$ITEST_DIR/over" --simulate-gpus "$SPEC" --json
expect_rc 1 "a job over its GPU memory budget fails"
expect_json 'd["runs"][0]["jobs"][0]["conclusion"]' failure "the job's conclusion is failure"
expect_match "$(json_eval - 'd["runs"][0]["jobs"][0]["reason"]')" \
  "GPU memory budget of 2048 MiB exceeded on GPU 0: peak 4096 MiB, pid [0-9]+ \((bash|sh)\) used 4096 MiB" \
  "the reason names the budget, the peak and the process"
expect_json 'd["runs"][0]["jobs"][0]["gpu"]["peak_memory_mib"]' 4096 "the summary's peak memory"

# ---- a process left holding GPU memory after the steps: a leak ---------------------------------
make_repo "$ITEST_DIR/leak"
write_workflow "$ITEST_DIR/leak" ci.yml <<'YAML'
on: push
jobs:
  leaky:
    runs-on: [self-hosted, gpu]
    steps:
      - run: |
          sleep 300 &
          python3 "$HOLD" $! 1024
YAML
commit_all "$ITEST_DIR/leak" "a job leaving a process on the GPU"
kiln run -C "$ITEST_DIR/leak" --simulate-gpus "$SPEC"
expect_rc 0 "a job that leaves a process on its GPU still succeeds"
expect_match "$OUT" "GPU memory leak: pid [0-9]+ \(sleep\) still held 1024 MiB on GPU 0 after the job's steps ended" \
  "the leak is reported with the process"
expect_match "$OUT" "Cleaning up: killed leftover process pid [0-9]+ \(sleep\)" "and the process is killed"

itest_end
