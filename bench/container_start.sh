#!/usr/bin/env bash
# Start of a container job: `kiln run` of a job with one trivial step in a container against
# `podman run --rm IMAGE true` on the same warm image, side by side, alternating, N rounds
# (medians), with the phases kiln logs for each run ("Containers started in ...: PHASE N ms,
# ..." and "Containers removed in N ms", docs/performance.md "Container jobs: start").
#
#   bench/container_start.sh [KILN] [N=15] [SERVICES=0]
#
# kiln:   the whole `kiln run` process (start-up, git, store, the job: image, container, the
#         step helper, the step `run: "true"`, removal) of a job in localhost/kiln-test:1; with
#         SERVICES > 0 the job also has that many services (same image, no health check).
# podman: `podman run --rm` of the same image running `true`, with the --ulimit flags kiln adds
#         on this host (engine.h, default_ulimit_args: without them no container starts here).
# Needs podman and the test image (built from busybox-static by tests/containers/).
set -euo pipefail
kiln=${1:-$(dirname "$0")/../build/kiln}
kiln=$(cd "$(dirname "$kiln")" && pwd)/$(basename "$kiln")
rounds=${2:-15}
services=${3:-0}
image=localhost/kiln-test:1
bash "$(dirname "$0")/../tests/containers/build_test_image.sh" podman >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

repo=$work/repo
mkdir -p "$repo/.github/workflows"
{
  echo "on: push"
  echo "jobs:"
  echo "  start:"
  echo "    runs-on: self-hosted"
  echo "    container: $image"
  if [ "$services" -gt 0 ]; then
    echo "    services:"
    for i in $(seq 1 "$services"); do echo "      svc$i: {image: $image}"; done
  fi
  echo "    steps:"
  echo '      - run: "true"'
} > "$repo/.github/workflows/bench.yml"
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=bench -c user.email=bench@localhost commit -q -m bench

ulimits=(--ulimit "nofile=$(ulimit -Sn):$(ulimit -Hn)")
nproc_hard=$(ulimit -Hu)
[ "$nproc_hard" = unlimited ] || [ "$nproc_hard" -gt 32768 ] && nproc_hard=32768
nproc_soft=$(ulimit -Su)
[ "$nproc_soft" = unlimited ] || [ "$nproc_soft" -gt "$nproc_hard" ] && nproc_soft=$nproc_hard
ulimits+=(--ulimit "nproc=$nproc_soft:$nproc_hard")

now() { date +%s%N; }
KILN_CONTAINER_ENGINE=podman "$kiln" run -C "$repo" > /dev/null 2>&1  # warm-up
podman run --rm "${ulimits[@]}" "$image" true
: > "$work/kiln.t"; : > "$work/podman.t"; : > "$work/phases.log"
for r in $(seq 1 "$rounds"); do
  t0=$(now)
  KILN_CONTAINER_ENGINE=podman "$kiln" run -C "$repo" --json > "$work/run.json" 2> "$work/run.log"
  t1=$(now)
  echo $(((t1 - t0) / 1000)) >> "$work/kiln.t"
  python3 - "$work/run.json" "$work/run.log" >> "$work/phases.log" <<'EOF'
import json, re, sys
run = json.load(open(sys.argv[1]))["runs"][0]
assert run["conclusion"] == "success", run
log = open(sys.argv[2]).read()
started = re.search(r"Containers started in (\d+) ms: (.*)", log)
removed = re.search(r"Containers removed in (\d+) ms", log)
phases = {"containers started": int(started.group(1))}
for part in started.group(2).split(", "):
    name, ms, _ = part.rsplit(" ", 2)
    phases[name] = int(ms)
phases["first step"] = run["jobs"][0]["steps"][0]["duration_ms"]
phases["containers removed"] = int(removed.group(1))
print(json.dumps(phases))
EOF
  t0=$(now); podman run --rm "${ulimits[@]}" "$image" true; t1=$(now)
  echo $(((t1 - t0) / 1000)) >> "$work/podman.t"
done
python3 - "$work" "$rounds" "$services" <<'EOF'
import json, statistics, sys
work, rounds, services = sys.argv[1], sys.argv[2], sys.argv[3]
kiln = [int(x) / 1000 for x in open(f"{work}/kiln.t")]
podman = [int(x) / 1000 for x in open(f"{work}/podman.t")]
rows = [json.loads(line) for line in open(f"{work}/phases.log")]
print(f"rounds={rounds} services={services} (medians, milliseconds)")
names = []
for row in rows:
    names += [n for n in row if n not in names]
for name in names:
    values = [row[name] for row in rows if name in row]
    print(f"  kiln phase {name:32s} {statistics.median(values):8.1f}")
k, p = statistics.median(kiln), statistics.median(podman)
print(f"kiln run (whole process)              {k:8.1f}")
print(f"podman run --rm IMAGE true            {p:8.1f}")
print(f"kiln / podman: {k / p:.2f}")
EOF
