#!/usr/bin/env bash
# On a real NVIDIA machine: `kiln run` of a workflow whose job asks for a GPU (runs-on: gpu),
# uses it with PyTorch and leaves a process holding GPU memory in the background, beside a job
# that asks for none. Checks that the GPU job is granted the GPU by UUID, that the other job
# sees no GPU, that the log says the leftover process was killed, and that no process of the
# job still holds GPU memory afterwards (nvidia-smi --query-compute-apps).
#   KILN=/path/to/kiln tests/gpu/gpu_job_check.sh
set -uo pipefail
KILN="${KILN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/kiln}"
python=$(command -v python3 || command -v python)
work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-gpu-job.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo/.github/workflows"
cat > "$work/repo/.github/workflows/gpu.yml" <<YML
on: push
jobs:
  gpu:
    runs-on: [self-hosted, gpu]
    steps:
      - name: GPU visible
        run: |
          nvidia-smi -L
          echo "granted: KILN_GPUS=\$KILN_GPUS CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES"
      - name: Matrix multiply on the GPU
        shell: $python {0}
        run: |
          import torch
          assert torch.cuda.is_available()
          a = torch.randn(4096, 4096, device="cuda")
          print("sum of a@a:", float((a @ a).sum()), "on", torch.cuda.get_device_name(0))
      - name: Leave a process holding GPU memory
        run: |
          nohup $python -c "import torch, time; x = torch.ones(256 * 1024 * 1024, device='cuda'); time.sleep(600)" > /dev/null 2>&1 &
          echo \$! > "$work/leftover.pid"
          for i in \$(seq 1 60); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -qw "\$(cat $work/leftover.pid)" && break; sleep 0.5; done
          nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
  cpu-only:
    runs-on: [self-hosted]
    steps:
      - shell: $python {0}
        run: |
          import torch
          print("cpu-only job: cuda available =", torch.cuda.is_available())
YML
git -C "$work/repo" init -q -b main
git -C "$work/repo" add -A
git -C "$work/repo" -c user.name=kiln -c user.email=kiln@localhost commit -qm gpu
fails=0
"$KILN" run -C "$work/repo" > "$work/out.txt" 2>&1; rc=$?
cat "$work/out.txt"
[[ $rc -eq 0 ]] && echo "PASS kiln run exited 0" || { echo "FAIL kiln run exited $rc"; fails=$((fails + 1)); }
grep -q "killed leftover process" "$work/out.txt" && echo "PASS the log names the killed leftover process" \
  || { echo "FAIL no 'killed leftover process' line"; fails=$((fails + 1)); }
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -n 1)
grep -q "granted: KILN_GPUS=1 CUDA_VISIBLE_DEVICES=$uuid" "$work/out.txt" \
  && echo "PASS the gpu job was granted GPU $uuid through CUDA_VISIBLE_DEVICES" \
  || { echo "FAIL the gpu job's grant is not CUDA_VISIBLE_DEVICES=$uuid"; fails=$((fails + 1)); }
grep -q "cpu-only job: cuda available = False" "$work/out.txt" \
  && echo "PASS a job that asked for no GPU sees none" \
  || { echo "FAIL the cpu-only job saw a GPU"; fails=$((fails + 1)); }
pid=$(cat "$work/leftover.pid" 2>/dev/null || echo none)
sleep 1
if nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -qw "$pid"; then
  echo "FAIL pid $pid still holds GPU memory"; fails=$((fails + 1))
else
  echo "PASS pid $pid holds no GPU memory after the job"
fi
nvidia-smi --query-gpu=memory.used --format=csv,noheader | sed 's/^/== GPU memory used after the job: /'
[[ $fails -eq 0 ]] && echo "RESULT: PASS" || echo "RESULT: FAIL ($fails)"
exit $((fails > 0))
