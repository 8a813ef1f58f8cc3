#!/usr/bin/env bash
# On a real NVIDIA machine with a podman (../shared/tools/gpu-podman's, or the host's): a GPU
# container job through `kiln run`, with the GPU given by the CDI specification Kiln writes.
#  1. `kiln gpus --cdi-spec` writes /etc/cdi/kiln-nvidia.json from NVML and the file system.
#  2. An image without CUDA or a driver (busybox plus the host's C library, so the driver's
#     nvidia-smi can start) runs a `runs-on: [self-hosted, gpu:1]` job: inside, nvidia-smi lists
#     exactly the granted GPU, by the UUID kiln granted.
#  3. A container job that asks for no GPU sees none.
#   KILN=/path/to/kiln BUSYBOX_ROOT=rootfs.tar tests/gpu/gpu_container_check.sh
# BUSYBOX_ROOT: a tar of tests/containers/rootfs.sh's make_busybox_root (GPU hosts may lack
# busybox-static).
set -uo pipefail
KILN="${KILN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/kiln}"
work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-gpu-container.XXXXXX")"
export KILN_HOST_STORE="$work/host.db"
trap 'rm -rf "$work"' EXIT
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

mkdir -p /etc/cdi
if "$KILN" gpus --cdi-spec /etc/cdi/kiln-nvidia.json; then
  pass "kiln gpus --cdi-spec wrote the specification"
else
  fail "kiln gpus --cdi-spec failed"
fi
echo "--- the specification's devices and mounts"
python3 - <<'PY'
import json
spec = json.load(open("/etc/cdi/kiln-nvidia.json"))
print("kind", spec["kind"], "cdiVersion", spec["cdiVersion"])
for d in spec["devices"]:
    print("device", d["name"], [n["path"] for n in d["containerEdits"].get("deviceNodes", [])])
edits = spec.get("containerEdits", {})
print("nodes", [n["path"] for n in edits.get("deviceNodes", [])])
print("mounts", len(edits.get("mounts", [])), [m["containerPath"] for m in edits.get("mounts", [])][:8])
PY

# The image: busybox and the host's C library (the driver's programs are dynamically linked).
root="$work/root"
mkdir -p "$root"
tar -C "$root" -xf "$BUSYBOX_ROOT"
for lib in $(ldd "$(command -v nvidia-smi)" | awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
tar -C "$root" -c . | podman import --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' - \
  localhost/kiln-gpu-test:1 >/dev/null && pass "the test image was imported"

repo="$work/repo"
mkdir -p "$repo/.github/workflows"
cat >"$repo/.github/workflows/gpu.yml" <<'YAML'
on: push
jobs:
  with-gpu:
    runs-on: [self-hosted, 'gpu:1']
    container: localhost/kiln-gpu-test:1
    steps:
      - run: |
          echo "granted $KILN_GPU_UUIDS"
          nvidia-smi -L
          echo "visible $(nvidia-smi -L | wc -l)"
  without-gpu:
    needs: with-gpu
    runs-on: self-hosted
    container: localhost/kiln-gpu-test:1
    steps:
      - run: |
          if nvidia-smi -L 2>/dev/null; then echo "NO-GPU-JOB-SEES-A-GPU"; else echo "no GPU here"; fi
          ls /dev/nvidia* 2>/dev/null || echo "no nvidia device nodes"
YAML
git -C "$repo" init -q -b main
git -C "$repo" add -A
git -C "$repo" -c user.name=gpu -c user.email=gpu@localhost commit -q -m gpu
out="$work/run.out"
"$KILN" run -C "$repo" --pull never >"$out" 2>&1
rc=$?
cat "$out"
[[ $rc -eq 0 ]] && pass "kiln run of the GPU container jobs exits 0" || fail "kiln run exited $rc"
granted=$(sed -n 's/.*granted \(GPU-[0-9a-f-]*\).*/\1/p' "$out" | head -1)
if [[ -n "$granted" ]] && grep -q "UUID: $granted" "$out"; then
  pass "nvidia-smi in the container lists the granted GPU ($granted)"
else
  fail "the granted GPU '$granted' is not what nvidia-smi lists in the container"
fi
grep -qx "\[with-gpu\] visible 1" "$out" && pass "the container sees exactly one GPU" || fail "the container does not see exactly one GPU"
grep -qx "\[without-gpu\] NO-GPU-JOB-SEES-A-GPU" "$out" && fail "a container job without a GPU request sees a GPU" ||
  pass "a container job without a GPU request sees none"
[[ $fails -eq 0 ]] && echo "RESULT: PASS" || echo "RESULT: FAIL ($fails)"
exit $((fails > 0))
