#!/usr/bin/env bash
# Does GPU sampling slow a job? The same GPU job run by `kiln run` with sampling at 10 Hz and
# with sampling off (kiln.yml `gpus: telemetry: enabled: false`), alternating, R rounds each;
# prints the median wall times and their ratio (issue 5 asks for <= 1.01).
#
#   bench/sampling_overhead.sh [KILN] [R=7] [WORKLOAD]
#
# WORKLOAD is the step's command: on a GPU host, something that keeps the GPU busy for tens of
# seconds (e.g. 'python3 train.py'); the default is a CPU-bound loop of about 10 s, which shows
# the CPU the sampler takes from a job. Without NVIDIA or AMD GPUs, set KILN_BENCH_SIMULATE=SPEC
# to run on a simulated GPU (--simulate-gpus SPEC).
set -euo pipefail
kiln=${1:-$(dirname "$0")/../build/kiln}
kiln=$(cd "$(dirname "$kiln")" && pwd)/$(basename "$kiln")
rounds=${2:-7}
workload=${3:-'python3 -c "sum(i * i for i in range(60_000_000))"'}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

repo=$work/repo
mkdir -p "$repo/.github/workflows"
cat > "$repo/.github/workflows/bench.yml" <<YAML
on: push
jobs:
  gpu:
    runs-on: [self-hosted, gpu]
    steps:
      - run: $workload
YAML
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=bench -c user.email=bench@localhost commit -q -m bench
printf 'gpus:\n  telemetry:\n    interval: 100ms\n' > "$work/on.yml"
printf 'gpus:\n  telemetry:\n    enabled: false\n' > "$work/off.yml"
export KILN_HOST_STORE=$work/host.db
simulate=()
if [[ -n "${KILN_BENCH_SIMULATE:-}" ]]; then simulate=(--simulate-gpus "$KILN_BENCH_SIMULATE"); fi

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {printf "%.0f\n", (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
run() {  # run CONFIG: one `kiln run`, prints its wall time in ns
  local start end
  start=$(now)
  KILN_CONFIG=$1 "$kiln" run -C "$repo" "${simulate[@]}" > /dev/null
  end=$(now)
  echo $((end - start))
}

run "$work/off.yml" > /dev/null  # warm-up (creates the store)
: > "$work/on.t"; : > "$work/off.t"
for _ in $(seq 1 "$rounds"); do
  run "$work/on.yml" >> "$work/on.t"
  run "$work/off.yml" >> "$work/off.t"
done
on=$(median < "$work/on.t")
off=$(median < "$work/off.t")
printf 'rounds: %d; workload: %s\n' "$rounds" "$workload"
printf '%-22s %10.3f s\n' "sampling 10 Hz" "$(awk -v n="$on" 'BEGIN {print n / 1e9}')"
printf '%-22s %10.3f s\n' "sampling off" "$(awk -v n="$off" 'BEGIN {print n / 1e9}')"
printf '%-22s %10.4f\n' "ratio on/off" "$(awk -v a="$on" -v b="$off" 'BEGIN {print a / b}')"
