#!/usr/bin/env bash
# Per-step overhead of container jobs: kiln against a shell script, side by side, alternating,
# R rounds each (medians).
#
#   bench/container_steps.sh [KILN] [N=20] [R=5]
#
# kiln:   `kiln run` of a job of N trivial steps (`run: "true"`) in localhost/kiln-test:1, and of
#         the same job with 1 step; per step = (T(N) - T(1)) / (N - 1): container start, image
#         inspection and removal cancel out.
# script: `podman run -d` of the same image, N × `podman exec CONTAINER sh -e step.sh`,
#         `podman rm -f`; and the same with 1 exec; per step likewise.
# Needs podman and the test image (built from busybox-static by tests/containers/).
set -euo pipefail
kiln=${1:-$(dirname "$0")/../build/kiln}
kiln=$(cd "$(dirname "$kiln")" && pwd)/$(basename "$kiln")
steps=${2:-20}
rounds=${3:-5}
image=localhost/kiln-test:1
bash "$(dirname "$0")/../tests/containers/build_test_image.sh" podman >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

make_repo() {  # make_repo DIR STEPS
  mkdir -p "$1/.github/workflows"
  {
    echo "on: push"
    echo "jobs:"
    echo "  steps:"
    echo "    runs-on: self-hosted"
    echo "    container: $image"
    echo "    steps:"
    for _ in $(seq 1 "$2"); do echo '      - run: "true"'; done
  } > "$1/.github/workflows/bench.yml"
  git -C "$1" init -q -b main
  git -C "$1" add -A
  git -C "$1" -c user.name=bench -c user.email=bench@localhost commit -q -m bench
}
make_repo "$work/many" "$steps"
make_repo "$work/one" 1
echo "true" > "$work/step.sh"

script() {  # script EXECS
  local c
  c=$(podman run -d --init --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
        -v "$work:$work" --entrypoint tail "$image" -f /dev/null)
  for _ in $(seq 1 "$1"); do podman exec "$c" sh -e "$work/step.sh" > /dev/null; done
  podman rm -f -t 0 "$c" > /dev/null
}

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

KILN_CONTAINER_ENGINE=podman "$kiln" run -C "$work/one" > /dev/null 2>&1  # warm-up
for f in kn k1 sn s1; do : > "$work/$f.t"; done
for _ in $(seq 1 "$rounds"); do
  t0=$(now); KILN_CONTAINER_ENGINE=podman "$kiln" run -C "$work/many" > /dev/null 2>&1; t1=$(now)
  echo $(((t1 - t0) / 1000)) >> "$work/kn.t"
  t0=$(now); KILN_CONTAINER_ENGINE=podman "$kiln" run -C "$work/one" > /dev/null 2>&1; t1=$(now)
  echo $(((t1 - t0) / 1000)) >> "$work/k1.t"
  t0=$(now); script "$steps"; t1=$(now)
  echo $(((t1 - t0) / 1000)) >> "$work/sn.t"
  t0=$(now); script 1; t1=$(now)
  echo $(((t1 - t0) / 1000)) >> "$work/s1.t"
done
kn=$(median < "$work/kn.t"); k1=$(median < "$work/k1.t")
sn=$(median < "$work/sn.t"); s1=$(median < "$work/s1.t")
echo "steps=$steps rounds=$rounds (medians, milliseconds)"
awk -v kn="$kn" -v k1="$k1" -v sn="$sn" -v s1="$s1" -v n="$steps" 'BEGIN {
  printf "kiln run, %d steps: %8.1f   1 step: %8.1f   per step: %6.1f\n", n, kn/1000, k1/1000, (kn-k1)/1000/(n-1)
  printf "script,   %d execs: %8.1f   1 exec: %8.1f   per step: %6.1f\n", n, sn/1000, s1/1000, (sn-s1)/1000/(n-1)
  printf "script per step / kiln per step: %.1f\n", (sn-s1)/(kn-k1)
}'
