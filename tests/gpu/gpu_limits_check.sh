#!/usr/bin/env bash
# On a real NVIDIA machine: a GPU host job under kiln.yml jobs.limits (core/cgroup.h). Checks
# that the job's step runs in the job's cgroup (whatever layout the host has: v1, hybrid or v2),
# still sees its granted GPU with nvidia-smi, and that no job cgroup is left afterwards.
#   KILN=/path/to/kiln tests/gpu/gpu_limits_check.sh
set -uo pipefail
KILN="${KILN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/kiln}"
work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-gpu-limits.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo/.github/workflows"
printf 'jobs:\n  limits: {memory: 8G, pids: 512, cpus: 2}\n' >"$work/kiln.yml"
cat >"$work/repo/.github/workflows/gpu.yml" <<'YML'
on: push
jobs:
  gpu:
    runs-on: [self-hosted, 'gpu:1']
    steps:
      - run: |
          cat /proc/self/cgroup
          nvidia-smi -L
          echo "granted: CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
YML
git -C "$work/repo" init -q
git -C "$work/repo" add -A
git -C "$work/repo" -c user.email=k@k -c user.name=k commit -qm gpu
echo "== the host's cgroups"
grep cgroup /proc/mounts
echo "kiln's own: $(tr '\n' ' ' </proc/self/cgroup)"
before="$(find /sys/fs/cgroup -maxdepth 6 -name 'kiln-job-*' -type d 2>/dev/null | sort)"
out="$("$KILN" run -C "$work/repo" --config "$work/kiln.yml" 2>&1)"
rc=$?
echo "$out"
after="$(find /sys/fs/cgroup -maxdepth 6 -name 'kiln-job-*' -type d 2>/dev/null | sort)"
result=PASS
grep -q "run in a cgroup of their own" <<<"$out" || { echo "FAIL: no job cgroup made"; result=FAIL; }
grep -q "kiln-job-" <<<"$out" || { echo "FAIL: the step is not in the job's cgroup"; result=FAIL; }
grep -q "^.*GPU 0: " <<<"$out" || { echo "FAIL: nvidia-smi saw no GPU in the job's cgroup"; result=FAIL; }
[[ "$rc" == 0 ]] || { echo "FAIL: kiln run exited $rc"; result=FAIL; }
[[ "$after" == "$before" ]] || { echo "FAIL: job cgroups left: $after"; result=FAIL; }
echo "RESULT: $result"
[[ "$result" == PASS ]]
