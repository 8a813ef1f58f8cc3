#!/usr/bin/env bash
# Whole-process overhead of `kiln run`: one job of N trivial steps, against the same N commands
# run by bash, side by side, alternating, R rounds each. Prints medians and ratios.
#
#   bench/run_overhead.sh [KILN] [N=50] [R=15]
#
# Baselines:
#   bash-per-step: `bash -e step_i.sh` for each step, one after another: the least a runner
#                  must do when every step is its own shell, as GitHub's semantics require.
#   bash-one:      one `bash -e` running all N commands: no per-step process at all.
set -euo pipefail
kiln=${1:-$(dirname "$0")/../build/kiln}
kiln=$(cd "$(dirname "$kiln")" && pwd)/$(basename "$kiln")
steps=${2:-50}
rounds=${3:-15}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

repo=$work/repo
mkdir -p "$repo/.github/workflows" "$work/steps"
{
  echo "on: push"
  echo "jobs:"
  echo "  steps:"
  echo "    runs-on: self-hosted"
  echo "    steps:"
  for i in $(seq 1 "$steps"); do echo "      - run: echo step $i"; done
} > "$repo/.github/workflows/bench.yml"
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=bench -c user.email=bench@localhost commit -q -m bench
for i in $(seq 1 "$steps"); do echo "echo step $i" > "$work/steps/$i.sh"; done
cat "$work"/steps/*.sh > "$work/all.sh"

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

"$kiln" run -C "$repo" > /dev/null  # warm-up (creates the store)
: > "$work/kiln.t"; : > "$work/per_step.t"; : > "$work/one.t"
for _ in $(seq 1 "$rounds"); do
  t0=$(now); "$kiln" run -C "$repo" > /dev/null; t1=$(now)
  echo $(((t1 - t0) / 1000)) >> "$work/kiln.t"
  t0=$(now); for i in $(seq 1 "$steps"); do bash -e "$work/steps/$i.sh" > /dev/null; done; t1=$(now)
  echo $(((t1 - t0) / 1000)) >> "$work/per_step.t"
  t0=$(now); bash -e "$work/all.sh" > /dev/null; t1=$(now)
  echo $(((t1 - t0) / 1000)) >> "$work/one.t"
done
k=$(median < "$work/kiln.t"); p=$(median < "$work/per_step.t"); o=$(median < "$work/one.t")
echo "steps=$steps rounds=$rounds (medians, microseconds)"
echo "kiln run:       $k"
echo "bash-per-step:  $p"
echo "bash-one:       $o"
awk -v k="$k" -v p="$p" -v o="$o" -v n="$steps" 'BEGIN {
  printf "ratio kiln / bash-per-step: %.2f\n", k / p
  printf "ratio kiln / bash-one:      %.2f\n", k / o
  printf "kiln overhead per step over bash-per-step: %.0f us\n", (k - p) / n
}'
