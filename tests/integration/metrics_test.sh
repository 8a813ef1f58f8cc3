#!/usr/bin/env bash
# kiln metrics through the real binary: dcgm-exporter names and labels for a simulated H200,
# kiln_* metrics from the store (a finished run is counted), and the whole exposition accepted
# by promtool (Debian's prometheus package; scripts/deps installs it).
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

PROMTOOL="${PROMTOOL:-/usr/bin/promtool}"
if [[ ! -x "$PROMTOOL" ]]; then
  itest_die "$PROMTOOL is missing: scripts/deps installs Debian's prometheus for promtool"
fi
printf '%s\n' "$metrics" >"$ITEST_DIR/metrics.prom"
RC=0
"$PROMTOOL" check metrics <"$ITEST_DIR/metrics.prom" >"$ITEST_DIR/promtool.out" 2>&1 || RC=$?
# promtool exits 1 when it cannot parse the text and 3 when it only has lint advice. The advice
# it gives on dcgm-exporter's own names (camelCase labels such as modelName, an energy counter
# without _total) is expected: those names are the point (kiln_gpu_state carries the same GPU
# labels, so the two join). Any other advice is a failure.
check "promtool parses the exposition (exit $RC: 0 or 3, lint advice only)" test "$RC" -eq 0 -o "$RC" -eq 3
sed 's/^/    promtool: /' "$ITEST_DIR/promtool.out"
unexpected="$(grep -vE "^(DCGM_FI_DEV_[A-Z_]+|kiln_gpu_state) label names should be written in 'snake_case' not 'camelCase'$|^DCGM_FI_DEV_[A-Z_]+ counter metrics should have \"_total\" suffix$" "$ITEST_DIR/promtool.out" | sed '/^$/d' || true)"
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
