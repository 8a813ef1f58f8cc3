#!/usr/bin/env bash
# kiln metrics through the real binary: dcgm-exporter names and labels for a simulated H200,
# kiln_* metrics from the store (a finished run is counted), live gauges from the simulated
# provider's sampler, per-process VRAM of amdgpu from a fixture /proc, and the whole exposition
# accepted by promtool (Debian's prometheus package; scripts/deps installs it).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin metrics

repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'EOF_YML'
on: push
jobs:
  hello:
    runs-on: [self-hosted]
    steps:
      - run: echo hello
EOF_YML
commit_all "$repo" "workflow"
kiln run -C "$repo"
expect_rc 0 "a run to count"

spec="$KILN_SOURCE_DIR/tests/data/gpu/one-h200.json"
kiln metrics -C "$repo" --simulate-gpus "$spec"
expect_rc 0 "kiln metrics"
metrics="$OUT"
expect_match "$metrics" '^DCGM_FI_DEV_FB_USED\{gpu="0",UUID="GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",device="[a-z]+[0-9]+",modelName="NVIDIA H200",Hostname="[^"]+"\} [0-9]+$' "memory used under dcgm-exporter's name and labels"
expect_match "$metrics" '^DCGM_FI_DEV_FB_FREE\{gpu="0",.*\} [0-9]+$' "memory free"
expect_not_contains "$metrics" "DCGM_FI_DEV_GPU_UTIL" "utilization is left out until the sampler knows it"
expect_contains "$metrics" 'kiln_runs{status="success"} 1' "the finished run is counted"
expect_contains "$metrics" "kiln_gpus 1" "one GPU"
expect_match "$metrics" 'kiln_gpu_state\{gpu="0",.*state="free"\} 1' "the GPU is free"
expect_contains "$metrics" "kiln_gpu_leases 0" "no lease held"

# Live gauges from the simulated provider's telemetry sampler, read at scrape time; this shell
# holds 512 MiB of the GPU (the simulated driver shows it while the process exists).
cat >"$ITEST_DIR/sampled.json" <<EOF_JSON
{"gpus": [{"vendor": "nvidia", "model": "NVIDIA H200", "memory_mib": 143771, "arch": "sm_90",
           "uuid": "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
           "processes": [{"pid": $$, "memory_mib": 512}],
           "telemetry": {"utilization_pct": 87, "memory_utilization_pct": 31, "temperature_c": 64,
                         "power_w": 512.5, "energy_mj": 123456789, "sm_clock_mhz": 1980,
                         "memory_clock_mhz": 2619, "throttle_reasons": ["sw_power_cap"]}}]}
EOF_JSON
kiln metrics -C "$repo" --simulate-gpus "$ITEST_DIR/sampled.json"
expect_rc 0 "kiln metrics with a sampled GPU"
sampled="$OUT"
labels='\{gpu="0",UUID="GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",device="[a-z]+[0-9]+",modelName="NVIDIA H200",Hostname="[^"]+"'
expect_match "$sampled" "^DCGM_FI_DEV_GPU_UTIL$labels\} 87$" "utilization from the sampler"
expect_match "$sampled" "^DCGM_FI_DEV_MEM_COPY_UTIL$labels\} 31$" "memory utilization"
expect_match "$sampled" "^DCGM_FI_DEV_GPU_TEMP$labels\} 64$" "temperature"
expect_match "$sampled" "^DCGM_FI_DEV_POWER_USAGE$labels\} 512.5$" "power"
expect_match "$sampled" "^DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION$labels\} 123456789$" "the energy counter"
expect_match "$sampled" "^DCGM_FI_DEV_SM_CLOCK$labels\} 1980$" "SM clock"
expect_match "$sampled" "^DCGM_FI_DEV_MEM_CLOCK$labels\} 2619$" "memory clock"
expect_match "$sampled" "^DCGM_FI_DEV_CLOCK_THROTTLE_REASONS$labels\} 4$" "throttle reasons as NVML's bits (sw_power_cap)"
expect_match "$sampled" "^kiln_gpu_process_memory_used_mib$labels,pid=\"$$\"\} 512$" "a process's GPU memory"
expect_match "$sampled" "^DCGM_FI_DEV_FB_USED$labels\} 512$" "memory used counts the process"

# AMD: per-process VRAM from /proc/PID/fdinfo, under the fixture root (laid out as the kernel
# lays out /proc; tests/data/gpu/make_amd_fixtures.py), matched to each GPU by PCI address.
kiln metrics -C "$repo" --sysfs-root "$KILN_SOURCE_DIR/tests/data/gpu/amd-mi250"
expect_rc 0 "kiln metrics on the MI250X fixture"
amd="$OUT"
expect_match "$amd" '^kiln_gpu_process_memory_used_mib\{gpu="0",.*,pid="4242"\} 2048$' \
  "pid 4242's VRAM on GPU 0 (drm-memory-vram, a dup()ed fd counted once)"
expect_match "$amd" '^kiln_gpu_process_memory_used_mib\{gpu="0",.*,pid="5151"\} 3072$' "pid 5151's VRAM on GPU 0"
expect_match "$amd" '^kiln_gpu_process_memory_used_mib\{gpu="2",.*,pid="4242"\} 512$' \
  "pid 4242's resident VRAM on GPU 2"
expect_not_contains "$amd" 'pid="7000"' "another driver's DRM client is not an amdgpu process"
expect_match "$amd" '^DCGM_FI_DEV_GPU_UTIL\{gpu="1",.*\} 20$' "amdgpu sysfs utilization (gpu_busy_percent)"
expect_not_contains "$amd" "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" "amdgpu has no throttle reasons: left out"

PROMTOOL="${PROMTOOL:-/usr/bin/promtool}"
if [[ ! -x "$PROMTOOL" ]]; then
  itest_die "$PROMTOOL is missing: scripts/deps installs Debian's prometheus for promtool"
fi
# The sampled scrape is checked: it has every family of the first and the sampler's.
printf '%s\n' "$sampled" >"$ITEST_DIR/metrics.prom"
RC=0
"$PROMTOOL" check metrics <"$ITEST_DIR/metrics.prom" >"$ITEST_DIR/promtool.out" 2>&1 || RC=$?
# promtool exits 1 when it cannot parse the text and 3 when it only has lint advice. The advice
# it gives on dcgm-exporter's own names (camelCase labels such as modelName, an energy counter
# without _total) is expected: those names are the point (kiln_gpu_state and
# kiln_gpu_process_memory_used_mib carry the same GPU labels, so they join). Any other advice is a failure.
check "promtool parses the exposition (exit $RC: 0 or 3, lint advice only)" test "$RC" -eq 0 -o "$RC" -eq 3
sed 's/^/    promtool: /' "$ITEST_DIR/promtool.out"
unexpected="$(grep -vE "^(DCGM_FI_DEV_[A-Z_]+|kiln_gpu_state|kiln_gpu_process_memory_used_mib) label names should be written in 'snake_case' not 'camelCase'$|^DCGM_FI_DEV_[A-Z_]+ counter metrics should have \"_total\" suffix$" "$ITEST_DIR/promtool.out" | sed '/^$/d' || true)"
if [[ -z "$unexpected" ]]; then
  pass "promtool's only advice is about dcgm-exporter's own names"
else
  fail "promtool advice beyond dcgm-exporter's names:"
  sed 's/^/    | /' <<<"$unexpected" >&2
fi

# The control: promtool does reject a broken exposition.
printf 'broken{a="1" 1\n' >"$ITEST_DIR/broken.prom"
RC=0
"$PROMTOOL" check metrics <"$ITEST_DIR/broken.prom" >/dev/null 2>&1 || RC=$?
check "promtool rejects a broken exposition" test "$RC" -ne 0

kiln metrics -C "$repo" --simulate-gpus "$ITEST_DIR/missing.json"
check "a missing spec is an error (exit $RC)" test "$RC" -ne 0

itest_end
