#!/usr/bin/env bash
# On a real NVIDIA machine with one or more GPUs: GPU leases and health through `kiln run`.
#  1. One PyTorch job per GPU, all at once (each waits until all have started, so they overlap):
#     each asserts that it sees exactly one GPU and that its UUID is the one kiln granted; the
#     grants are distinct. With two GPUs or more, a gpu:2 job sees exactly two.
#  2. A job leaves a PyTorch process holding GPU memory: while it runs, `kiln gpus --json` shows
#     the GPU leased and the process on it (NVML's process list); at the end kiln kills it and
#     says so, and no quarantine follows.
#  3. A job starts a daemon that leaves its session and clears its environment (env -i setsid
#     nohup) holding GPU memory: the step's subreaper kills it at the job's end, no quarantine.
#     A process started outside kiln holds memory on the granted GPU during a job: after the
#     grace period kiln quarantines the GPU and names the process; kiln gpus shows the
#     quarantine; after the process is killed, `kiln gpus --release` returns it.
#   KILN=/path/to/kiln tests/gpu/gpu_health_check.sh
set -uo pipefail
KILN="${KILN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/kiln}"
python=$(command -v python3 || command -v python)
work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-gpu-health.XXXXXX")"
export KILN_HOST_STORE="$work/host.db"
printf 'gpus:\n  health:\n    memory_grace: 5s\n' > "$work/kiln.yml"
export KILN_CONFIG="$work/kiln.yml"
escapee=""
cleanup() {
  [[ -n "$escapee" ]] && kill -9 "$escapee" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fails=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
mapfile -t uuids < <(nvidia-smi --query-gpu=uuid --format=csv,noheader)
n=${#uuids[@]}
echo "== $n GPU(s): ${uuids[*]}"
nvidia-smi --query-gpu=index,name,driver_version,memory.used,memory.total --format=csv,noheader

repo() {  # repo DIR: a git repository whose workflow is stdin
  mkdir -p "$1/.github/workflows"
  cat > "$1/.github/workflows/ci.yml"
  git -C "$1" init -q -b main
  git -C "$1" add -A
  git -C "$1" -c user.name=kiln -c user.email=kiln@localhost commit -qm ci
}

# ---- 1. concurrent jobs, one GPU each ---------------------------------------------------------
mkdir -p "$work/started"
{
  echo "on: push"
  echo "jobs:"
  for i in $(seq 1 "$n"); do
    cat <<YML
  train-$i:
    runs-on: [self-hosted, gpu]
    steps:
      - shell: $python {0}
        run: |
          import os, time, torch
          granted = os.environ["KILN_GPU_UUIDS"]
          open("$work/started/$i", "w").write(granted)
          deadline = time.time() + 120
          while len(os.listdir("$work/started")) < $n and time.time() < deadline:
              time.sleep(0.1)
          assert len(os.listdir("$work/started")) == $n, "the jobs did not overlap"
          assert torch.cuda.device_count() == 1, torch.cuda.device_count()
          seen = "GPU-" + str(torch.cuda.get_device_properties(0).uuid)
          a = torch.randn(8192, 8192, device="cuda")
          float((a @ a).sum())
          print(f"job $i: granted {granted}, torch sees {seen}, match={seen == granted}")
          assert seen == granted
YML
  done
  if [[ $n -ge 2 ]]; then
    cat <<YML
  pair:
    needs: [$(seq -s, -f 'train-%g' 1 "$n")]
    runs-on: [self-hosted, "gpu:2"]
    steps:
      - shell: $python {0}
        run: |
          import os, torch
          seen = sorted("GPU-" + str(torch.cuda.get_device_properties(i).uuid) for i in range(torch.cuda.device_count()))
          granted = sorted(os.environ["KILN_GPU_UUIDS"].split(","))
          print(f"pair: torch sees {torch.cuda.device_count()} GPUs, match={seen == granted}")
          assert seen == granted and len(seen) == 2
YML
  fi
} | repo "$work/concurrent"
"$KILN" run -C "$work/concurrent" > "$work/concurrent.txt" 2>&1; rc=$?
cat "$work/concurrent.txt"
[[ $rc -eq 0 ]] && pass "concurrent GPU jobs: kiln run exited 0" || fail "concurrent GPU jobs: kiln run exited $rc"
matched=$(grep -c "match=True" "$work/concurrent.txt")
[[ $matched -ge $n ]] && pass "each of the $n concurrent jobs saw exactly its granted GPU (by UUID)" \
  || fail "only $matched of $n jobs saw their granted GPU"
distinct=$(for f in "$work"/started/*; do cat "$f"; echo; done | sort -u | wc -l)
[[ $distinct -eq $n ]] && pass "the $n overlapping jobs held $n distinct GPUs" || fail "$distinct distinct grants for $n jobs"

# ---- 2. a leftover PyTorch process, seen by NVML, killed at the end ---------------------------
repo "$work/leftover" <<YML
on: push
jobs:
  leaky:
    runs-on: [self-hosted, gpu]
    steps:
      - run: |
          nohup $python -c "import torch, time; x = torch.ones(512 * 1024 * 1024, device='cuda'); time.sleep(600)" > /dev/null 2>&1 &
          echo \$! > "$work/leftover.pid"
          for i in \$(seq 1 120); do nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | grep -q "^\$(cat $work/leftover.pid), [1-9][0-9][0-9]" && break; sleep 0.5; done
          "$KILN" gpus --json > "$work/during.json"
YML
"$KILN" run -C "$work/leftover" > "$work/leftover.txt" 2>&1; rc=$?
cat "$work/leftover.txt"
[[ $rc -eq 0 ]] && pass "leftover job: kiln run exited 0" || fail "leftover job: kiln run exited $rc"
pid=$(cat "$work/leftover.pid" 2>/dev/null || echo none)
$python - "$work/during.json" "$pid" <<'PY' && pass "during the job kiln gpus showed the GPU leased, with the process and its memory from NVML" || fail "kiln gpus during the job: $(cat "$work/during.json" | head -c 2000)"
import json, sys
d = json.load(open(sys.argv[1])); pid = int(sys.argv[2])
gpu = [g for g in d["gpus"] if g["state"]["kind"] == "leased"]
assert len(gpu) == 1, [g["state"] for g in d["gpus"]]
procs = {p["pid"]: p["used_mib"] for p in gpu[0]["processes"]}
print("leased GPU", gpu[0]["index"], "holder:", gpu[0]["state"]["detail"], "processes:", procs)
assert procs.get(pid, 0) >= 2048, procs
PY
grep -q "Cleaning up: killed leftover process pid $pid" "$work/leftover.txt" \
  && pass "the leftover process $pid was killed and named in the log" || fail "no kill of $pid in the log"
grep -q "quarantined" "$work/leftover.txt" && fail "a GPU was quarantined although its memory came back" \
  || pass "its memory came back: no quarantine"

# ---- 3a. a daemon that leaves the job's session and clears its environment: killed ---------
# (env -i ... setsid nohup): no KILN_JOB_TOKEN and its own session, but reparented to the
# step's subreaper (exec/subreaper.h), which kills it at the job's end: no quarantine.
repo "$work/escape" <<YML
on: push
jobs:
  escape:
    runs-on: [self-hosted, gpu]
    steps:
      - run: |
          env -i PATH="\$PATH" HOME="\$HOME" CUDA_VISIBLE_DEVICES="\$CUDA_VISIBLE_DEVICES" setsid nohup $python -c "import torch, time; x = torch.ones(512 * 1024 * 1024, device='cuda'); time.sleep(600)" > /dev/null 2>&1 &
          echo \$! > "$work/escapee.pid"
          for i in \$(seq 1 120); do nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | grep -q "^\$(cat $work/escapee.pid), [1-9][0-9][0-9]" && break; sleep 0.5; done
YML
"$KILN" run -C "$work/escape" > "$work/escape.txt" 2>&1; rc=$?
cat "$work/escape.txt"
escapee=$(cat "$work/escapee.pid" 2>/dev/null || echo "")
sleep 1
[[ -n "$escapee" ]] && ! kill -0 "$escapee" 2>/dev/null \
  && pass "the env -i setsid daemon $escapee was killed at the job's end (the step's subreaper)" \
  || fail "the env -i setsid daemon $escapee outlived its job"
grep -q "quarantined" "$work/escape.txt" && fail "a GPU was quarantined although the daemon was killed" \
  || pass "its memory came back: no quarantine"
escapee=""

# ---- 3b. memory taken outside kiln during a job: quarantine, then --release -----------------
# A process kiln did not start (here: this script, while the job runs) holds memory on the
# granted GPU: after the grace period the GPU is quarantined, naming it.
repo "$work/outside" <<YML
on: push
jobs:
  outside:
    runs-on: [self-hosted, gpu]
    steps:
      - run: |
          echo "\$CUDA_VISIBLE_DEVICES" > "$work/outside.gpu"
          while [ ! -e "$work/hog.ready" ]; do sleep 0.2; done
YML
"$KILN" run -C "$work/outside" > "$work/escape.txt" 2>&1 &
kiln_pid=$!
for i in $(seq 1 100); do [[ -s "$work/outside.gpu" ]] && break; sleep 0.2; done
CUDA_VISIBLE_DEVICES="$(cat "$work/outside.gpu")" setsid $python -c "import torch, time; x = torch.ones(512 * 1024 * 1024, device='cuda'); time.sleep(600)" > /dev/null 2>&1 &
escapee=$!
for i in $(seq 1 120); do nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | grep -q "^$escapee, [1-9][0-9][0-9]" && break; sleep 0.5; done
touch "$work/hog.ready"
wait "$kiln_pid"
cat "$work/escape.txt"
grep -q "quarantined: memory did not come back after .*held by pid $escapee" "$work/escape.txt" \
  && pass "the GPU held by the outside process $escapee was quarantined, naming it" \
  || fail "no quarantine naming pid $escapee"
"$KILN" gpus > "$work/gpus.txt" 2>&1
cat "$work/gpus.txt"
grep -q "quarantined: memory did not come back" "$work/gpus.txt" && pass "kiln gpus shows the quarantine" \
  || fail "kiln gpus does not show the quarantine"
index=$(grep -E "^[0-9]+ .*quarantined" "$work/gpus.txt" | awk '{print $1}' | head -1)
[[ -n "$escapee" ]] && kill -9 "$escapee" 2>/dev/null
escapee=""
sleep 2
"$KILN" gpus --release "${index:-0}" > "$work/release.txt" 2>&1
cat "$work/release.txt"
grep -q "released from quarantine" "$work/release.txt" && pass "kiln gpus --release returned the GPU" \
  || fail "release did not say so"
"$KILN" gpus --json > "$work/after.json"
$python -c "import json,sys; d=json.load(open(sys.argv[1])); s=[g['state']['kind'] for g in d['gpus']]; print('states after:', s); assert all(k == 'free' for k in s)" "$work/after.json" \
  && pass "every GPU is free at the end" || fail "not every GPU is free at the end"
nvidia-smi --query-gpu=index,memory.used --format=csv,noheader | sed 's/^/== GPU memory used at the end: /'
[[ $fails -eq 0 ]] && echo "RESULT: PASS" || echo "RESULT: FAIL ($fails)"
exit $((fails > 0))
