#!/usr/bin/env bash
# GPU telemetry through the real binary on a simulated GPU (docs/gpus.md "Telemetry"): a job's
# GPU summary in the terminal summary, in `kiln run --json` and in the job's store row; a job
# whose step raises its simulated GPU memory above its gpu-mem-budget label fails naming the
# budget, the peak and the process. No timings are asserted: the budget job waits until kiln's
# sampler has seen it and killed it. The samples are stored: `kiln report --format json` and
# `kiln serve`'s GET /api/runs/ID/telemetry return them, and those committed while a job ran
# survive kill -9 of kiln.
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

ok_run="$(json_eval - 'd["runs"][0]["id"]')"

# ---- the stored samples: kiln report and kiln serve's /api/runs/ID/telemetry -------------------
kiln report -C "$ITEST_DIR/ok" "$ok_run" --format json
expect_rc 0 "kiln report --format json of the GPU run"
expect_json 'd["jobs"][0]["gpu_sample_count"] >= 1' true "the job's samples are stored"
expect_json 'd["jobs"][0]["gpu_sample_count"] == d["jobs"][0]["gpu_summary"]["samples"]' true \
  "every sample of a short job is stored (no thinning below the cap)"
expect_json '{p["util"] for p in d["jobs"][0]["gpu_samples"][0]["points"]}' '{80.0}' \
  "the stored utilization"
cat >"$ITEST_DIR/serve.yml" <<YAML
serve:
  listen: 127.0.0.1:0
  store: $ITEST_DIR/ok/.kiln/kiln.db
  work_dir: $ITEST_DIR/serve-work
  repositories:
    acme/ok:
      clone_url: $ITEST_DIR/ok
      webhook_secret: not-used-here
YAML
"$KILN" serve --config "$ITEST_DIR/serve.yml" --port-file "$ITEST_DIR/serve.port" \
  >"$ITEST_DIR/serve.out" 2>"$ITEST_DIR/serve.err" &
serve_pid=$!
itest_track_pid "$serve_pid"
wait_until 60 test -s "$ITEST_DIR/serve.port" || {
  cat "$ITEST_DIR/serve.err" >&2
  itest_die "kiln serve did not start listening"
}
base="http://127.0.0.1:$(cat "$ITEST_DIR/serve.port")"
curl -sS -o "$ITEST_DIR/last.out" -w '%{http_code}' "$base/api/runs/$ok_run/telemetry" >"$ITEST_DIR/code"
check "GET /api/runs/$ok_run/telemetry is 200" test "$(cat "$ITEST_DIR/code")" = 200
expect_json 'sorted(d.keys()) == ["jobs"] and sorted(d["jobs"][0].keys()) == ["gpus", "job_id", "key"]' true \
  "the document has the dashboard's keys"
expect_json 'd["jobs"][0]["key"]' train "the job's key"
expect_json 'sorted(d["jobs"][0]["gpus"][0].keys())' '["index", "samples", "uuid"]' "a GPU's keys"
expect_json 'd["jobs"][0]["gpus"][0]["uuid"].startswith("GPU-")' true "the GPU's UUID"
expect_json 'sorted(d["jobs"][0]["gpus"][0]["samples"][0].keys())' \
  '["mem_total_mib", "mem_used_mib", "mem_util", "power_w", "t", "temp_c", "throttle", "util"]' \
  "a sample's keys"
expect_json '[(s["util"], s["temp_c"], s["power_w"], s["mem_total_mib"], s["throttle"]) for s in d["jobs"][0]["gpus"][0]["samples"][:1]]' \
  '[[80.0, 65.0, 500.0, 143771, 1]]' "a sample's readings (gpu_idle is bit 0x1)"
expect_json 'all(a["t"] <= b["t"] for a, b in zip(d["jobs"][0]["gpus"][0]["samples"], d["jobs"][0]["gpus"][0]["samples"][1:]))' true \
  "samples in time order"
curl -sS -o /dev/null -w '%{http_code}' "$base/api/runs/4242/telemetry" >"$ITEST_DIR/code"
check "an unknown run is 404" test "$(cat "$ITEST_DIR/code")" = 404
kill -TERM "$serve_pid"
wait_exit "$serve_pid" 30 || fail "kiln serve did not stop on SIGTERM"

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

# ---- kill -9 of kiln while a GPU job runs: the samples written so far stay ------------------
make_repo "$ITEST_DIR/crash"
marker="gpu-crash-$RANDOM"
write_workflow "$ITEST_DIR/crash" ci.yml <<YAML
on: push
jobs:
  long:
    runs-on: [self-hosted, gpu]
    env:
      ITEST_MARKER: $marker
    steps:
      - run: sleep 300
YAML
commit_all "$ITEST_DIR/crash" "a long GPU job"
"$KILN" run -C "$ITEST_DIR/crash" --simulate-gpus "$SPEC" >"$ITEST_DIR/crash.out" 2>&1 </dev/null &
crash_pid=$!
itest_track_pid "$crash_pid"
run_id_known() { grep -q '^kiln: .* (run [0-9]*)$' "$ITEST_DIR/crash.out" 2>/dev/null; }
wait_until 20 run_id_known || itest_die "kiln run printed no run id: $(cat "$ITEST_DIR/crash.out")"
crash_run="$(sed -n 's/^kiln: .* (run \([0-9]*\))$/\1/p' "$ITEST_DIR/crash.out" | head -1)"
stored_samples() {
  "$KILN" report -C "$ITEST_DIR/crash" "$crash_run" --format json 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["gpu_sample_count"])' 2>/dev/null
}
# Batches are committed every few seconds while the job runs (no timing is asserted: wait).
samples_stored() { [[ "$(stored_samples)" -ge 2 ]]; }
if wait_until 60 samples_stored; then
  pass "samples reach the store while the job runs ($(stored_samples) so far)"
else
  fail "no samples in the store while the job ran"
fi
for token in $(tokens_with_marker "$marker"); do itest_track_token "$token"; done
before="$(stored_samples)"
kill -9 "$crash_pid"
wait_exit "$crash_pid" 10 || itest_die "kiln survived kill -9"
after="$(stored_samples)"
check "the samples committed before kill -9 are still there ($before <= $after)" \
  test "${after:-0}" -ge "${before:-1}"

itest_end
