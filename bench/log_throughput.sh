#!/usr/bin/env bash
# Log throughput of `kiln run`: one step printing N lines of 80 bytes, against the same command
# writing to a file, side by side, alternating, R rounds each. Prints medians, lines/s and the
# cost per line over the file baseline.
#
#   bench/log_throughput.sh [KILN] [N=200000] [R=5]
set -euo pipefail
kiln=${1:-$(dirname "$0")/../build/kiln}
kiln=$(cd "$(dirname "$kiln")" && pwd)/$(basename "$kiln")
lines=${2:-200000}
rounds=${3:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 80 bytes a line with the newline: "line NNNNNNNNN " and 64 bytes of padding.
repo=$work/repo
mkdir -p "$repo/.github/workflows"
cat > "$work/gen.py" <<'PY'
import sys
write = sys.stdout.write
for i in range(int(sys.argv[1])):
    write("line %09d %s\n" % (i, "x" * 64))
PY
cmd="python3 $work/gen.py $lines"
cat > "$repo/.github/workflows/bench.yml" <<YAML
on: push
jobs:
  log:
    runs-on: self-hosted
    steps:
      - run: $cmd
YAML
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=bench -c user.email=bench@localhost commit -q -m bench

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

"$kiln" run -C "$repo" > "$work/warm.out" || { cat "$work/warm.out"; exit 1; }  # warm-up (creates the store)
: > "$work/kiln.t"; : > "$work/file.t"
for _ in $(seq 1 "$rounds"); do
  t=$(now); $cmd > "$work/out.txt"; echo $(( $(now) - t )) >> "$work/file.t"
  t=$(now); "$kiln" run -C "$repo" > "$work/kiln.out"; echo $(( $(now) - t )) >> "$work/kiln.t"
  stored=$("$kiln" logs -C "$repo" "$("$kiln" runs -C "$repo" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')" log | grep -c '^line ' || true)
  [ "$stored" -eq "$lines" ] || { echo "stored $stored lines of $lines" >&2; exit 1; }
done
file_ms=$(median < "$work/file.t" | awk '{print $1 / 1e6}')
kiln_ms=$(median < "$work/kiln.t" | awk '{print $1 / 1e6}')
awk -v n="$lines" -v f="$file_ms" -v k="$kiln_ms" 'BEGIN {
  printf "lines %d  > file: %.0f ms  kiln run: %.0f ms  ratio %.2f\n", n, f, k, k / f
  printf "kiln run: %.0f lines/s, %.2f us a line over the file\n", n / (k / 1000), (k - f) * 1000 / n }'
