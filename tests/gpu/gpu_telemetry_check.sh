#!/usr/bin/env bash
# On a real NVIDIA machine: GPU telemetry through `kiln run`, `kiln report` and `kiln metrics`
# (docs/gpus.md "Telemetry"). A job multiplies matrices on its GPU for about 10 s, sampled at
# 10 Hz; its stored samples (`kiln report --format json`) must show the load the job put on the
# GPU: utilization near 100 %, the memory the job itself reported holding, power well above idle,
# a temperature, and energy in the summary. The HTML report is written to $OUT (or the work
# directory) for a look. `kiln metrics` must carry the live DCGM-named gauges read from NVML.
#   KILN=/path/to/kiln tests/gpu/gpu_telemetry_check.sh
set -uo pipefail
KILN="${KILN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/kiln}"
python=$(command -v python3 || command -v python)
work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-gpu-telemetry.XXXXXX")"
out="${OUT:-$work}"
export KILN_HOST_STORE="$work/host.db"
printf 'gpus:\n  telemetry:\n    interval: 100ms\n' > "$work/kiln.yml"
export KILN_CONFIG="$work/kiln.yml"
trap 'rm -rf "$work"' EXIT
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
nvidia-smi --query-gpu=index,name,driver_version,memory.used,power.draw --format=csv,noheader

mkdir -p "$work/repo/.github/workflows"
cat > "$work/repo/.github/workflows/ci.yml" <<YML
on: push
jobs:
  matmul:
    runs-on: [self-hosted, gpu]
    steps:
      - shell: $python {0}
        run: |
          import time, torch
          a = torch.randn(8192, 8192, device="cuda")
          torch.cuda.synchronize()
          held = (torch.cuda.mem_get_info()[1] - torch.cuda.mem_get_info()[0]) // (1024 * 1024)
          print(f"device memory used while working: {held} MiB", flush=True)
          open("$work/held", "w").write(str(held))
          end = time.time() + 10
          while time.time() < end:
              for _ in range(20):
                  b = a @ a
              torch.cuda.synchronize()
YML
git -C "$work/repo" init -q -b main && git -C "$work/repo" add -A &&
  git -C "$work/repo" -c user.name=kiln -c user.email=kiln@localhost commit -qm ci
"$KILN" run -C "$work/repo" --json > "$work/run.json" 2> "$work/run.err"; rc=$?
cat "$work/run.err"
[[ $rc -eq 0 ]] && pass "the GPU job ran (exit 0)" || fail "kiln run exited $rc"
run=$($python -c 'import json,sys; print(json.load(open(sys.argv[1]))["runs"][0]["id"])' "$work/run.json")
"$KILN" report -C "$work/repo" "$run" --format json > "$work/report.json"; rc=$?
[[ $rc -eq 0 ]] && pass "kiln report --format json (exit 0)" || fail "kiln report exited $rc"
"$KILN" report -C "$work/repo" "$run" --format html -o "$out/gpu-report.html" \
  && pass "kiln report --format html -o $out/gpu-report.html" || fail "kiln report --format html"
$python - "$work/report.json" "$(cat "$work/held" 2>/dev/null || echo 0)" <<'PY' \
  && pass "the stored samples show the job's load" || fail "the stored samples"
import json, sys
d = json.load(open(sys.argv[1])); held = int(sys.argv[2])
job = d["jobs"][0]
series = job["gpu_samples"]
assert len(series) == 1, len(series)
points = series[0]["points"]
util = [p["util"] for p in points if p.get("util") is not None]
mem = [p["mem_mib"] for p in points if p.get("mem_mib") is not None]
power = [p["power_w"] for p in points if p.get("power_w") is not None]
temp = [p["temp_c"] for p in points if p.get("temp_c") is not None]
summary = job["gpu_summary"]
print(f"samples stored: {job['gpu_sample_count']} (summary {summary['samples']}), "
      f"util max {max(util)} %, memory max {max(mem)} MiB (job reported {held} MiB), "
      f"power max {max(power):.0f} W min {min(power):.0f} W, temperature max {max(temp)} C, "
      f"energy {summary.get('energy_wh')} Wh, GPU-seconds busy {summary['gpu_seconds_busy']:.1f} "
      f"of {summary['gpu_seconds_held']:.1f} held")
assert job["gpu_sample_count"] >= 50, job["gpu_sample_count"]   # 10 s at 10 Hz
assert max(util) >= 90, max(util)
assert max(mem) >= held > 0, (max(mem), held)
assert max(power) >= 200, max(power)                            # an idle H200 draws ~75-120 W
assert temp and max(temp) > 20, temp[:3]
assert summary.get("energy_wh") and summary["energy_wh"] > 0, summary
PY
"$KILN" metrics > "$work/metrics.txt"; rc=$?
[[ $rc -eq 0 ]] && pass "kiln metrics (exit 0)" || fail "kiln metrics exited $rc"
grep -E '^DCGM_FI_DEV_(GPU_UTIL|FB_USED|GPU_TEMP|POWER_USAGE|TOTAL_ENERGY_CONSUMPTION|SM_CLOCK|MEM_CLOCK)\{' "$work/metrics.txt"
for m in GPU_UTIL FB_USED FB_FREE GPU_TEMP POWER_USAGE TOTAL_ENERGY_CONSUMPTION SM_CLOCK MEM_CLOCK; do
  grep -qE "^DCGM_FI_DEV_${m}\{gpu=\"0\",UUID=\"GPU-[0-9a-f-]+\".*\} [0-9.]+$" "$work/metrics.txt" \
    && pass "kiln metrics: DCGM_FI_DEV_$m of GPU 0 from NVML" || fail "kiln metrics: no DCGM_FI_DEV_$m"
done
cp "$work/report.json" "$out/gpu-report.json" 2>/dev/null
echo "RESULT: $([[ $fails -eq 0 ]] && echo PASS || echo "FAIL ($fails)")"
[[ $fails -eq 0 ]]
