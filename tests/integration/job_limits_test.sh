#!/usr/bin/env bash
# Per-job cgroups of host jobs (kiln.yml jobs.limits, core/cgroup.h) on this host's real kernel:
# a step finds itself in the job's cgroup with the memory, pids and CPU limits written; a step
# past the memory limit is OOM-killed and the job's failure class is oom, with the cgroup as the
# evidence; a step past the pids limit cannot start more processes; a process that left its
# holder (it killed it) and its environment (env -i setsid) is still killed at the job's end,
# because it is in the cgroup; no job cgroup is left behind. Bad limits are refused at their
# place in kiln.yml with exit 2. Exits 77 (skipped, said) where kiln cannot make cgroups.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin job_limits

if [[ "$(id -u)" != 0 ]] || ! [[ -w /sys/fs/cgroup/memory || -w /sys/fs/cgroup/cgroup.subtree_control ]]; then
  echo "job_limits: skipped: kiln cannot make cgroups here (needs root and cgroup v1 or v2)"
  exit 77
fi

cat >"$ITEST_DIR/kiln.yml" <<'EOF_YML'
jobs:
  limits: {memory: 64M, pids: 40, cpus: 0.5}
EOF_YML
repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'EOF_WF'
on: push
jobs:
  inside:
    runs-on: linux
    steps:
      - run: |
          cat /proc/self/cgroup
          # The limits of the cgroup this step is in, however the host lays cgroups out.
          if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
            dir=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
            echo "memory=$(cat $dir/memory.max) pids=$(cat $dir/pids.max) cpu=$(cut -d' ' -f1 $dir/cpu.max)"
          else
            mem=/sys/fs/cgroup/memory$(grep -E '^[0-9]+:memory:' /proc/self/cgroup | cut -d: -f3)
            pids=/sys/fs/cgroup/pids$(grep -E '^[0-9]+:pids:' /proc/self/cgroup | cut -d: -f3)
            cpu=/sys/fs/cgroup/cpu$(grep -E '^[0-9]+:cpu[,:]' /proc/self/cgroup | cut -d: -f3)
            echo "memory=$(cat $mem/memory.limit_in_bytes) pids=$(cat $pids/pids.max) cpu=$(cat $cpu/cpu.cfs_quota_us)"
          fi
  memory:
    runs-on: linux
    steps:
      - name: allocate past the limit
        run: python3 -c 'b = bytearray(400 * 1024 * 1024); print("allocated", len(b))'
  processes:
    runs-on: linux
    steps:
      - run: |
          python3 - <<'PY'
          import subprocess, sys
          started = []
          try:
              for _ in range(100):
                  started.append(subprocess.Popen(["sleep", "30"]))
          except OSError as error:
              print("refused after", len(started), "processes:", error.strerror)
              sys.exit(3)
          print("started all", len(started))
          PY
  escape:
    runs-on: linux
    steps:
      - continue-on-error: true
        run: |
          env -i setsid sleep 300 >/dev/null 2>&1 < /dev/null &
          echo $! > "$ESCAPED"
          sleep 0.2
          kill -9 $PPID   # the step's holder: the sleep has no subreaper left to be kept by
EOF_WF
commit_all "$repo" "jobs that test their cgroup"
escaped="$ITEST_DIR/escaped.pid"
export ESCAPED="$escaped"

before="$(find /sys/fs/cgroup -maxdepth 6 -name 'kiln-job-*' -type d 2>/dev/null | sort)"

kiln run -C "$repo" --config "$ITEST_DIR/kiln.yml" --job inside
expect_rc 0 "a job runs with its limits"
expect_contains "$OUT" "The job's processes run in a cgroup of their own (memory 64 MiB, pids 40, cpus 0.5)" \
  "the log says the job has a cgroup and its limits"
expect_contains "$OUT" "kiln-job-" "the step is in the job's cgroup"
expect_contains "$OUT" "memory=67108864 pids=40 cpu=50000" "with the memory, pids and CPU limits written"

kiln run -C "$repo" --config "$ITEST_DIR/kiln.yml" --job memory --json
expect_rc 1 "a step past the memory limit fails the job"
expect_not_contains "$OUT" "allocated 419430400" "it was stopped before it had the memory"
expect_contains "$OUT" '"failure_class": "oom"' "the job's failure class is oom"
expect_contains "$OUT" "the job's cgroup reached its memory limit (memory 64 MiB, pids 40, cpus 0.5)" \
  "and the evidence is the job's cgroup"

kiln run -C "$repo" --config "$ITEST_DIR/kiln.yml" --job processes
expect_rc 1 "a step past the pids limit fails"
expect_match "$OUT" "refused after [0-9]+ processes: Resource temporarily unavailable" \
  "it could not start more processes than the limit"
expect_not_contains "$OUT" "started all" "not all of them"

kiln run -C "$repo" --config "$ITEST_DIR/kiln.yml" --job escape
expect_rc 0 "the escaping step's job ends (continue-on-error)"
pid="$(cat "$escaped" 2>/dev/null || true)"
# Killed: gone, or a zombie its new parent (init) has not reaped yet.
running() { [[ -e "/proc/$1/stat" ]] && [[ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]]; }
if [[ -n "$pid" ]] && ! running "$pid"; then
  pass "the process that killed its holder and cleared its environment is gone"
else
  fail "process '$pid' that escaped its holder survived the job"
  kill -9 "$pid" 2>/dev/null || true
fi
expect_contains "$OUT" "(in the job's cgroup)" "it was killed as a member of the job's cgroup"

after="$(find /sys/fs/cgroup -maxdepth 6 -name 'kiln-job-*' -type d 2>/dev/null | sort)"
expect_eq "$after" "$before" "no job cgroup is left behind"

printf 'jobs:\n  limits:\n    memory: 1T5\n' >"$ITEST_DIR/bad.yml"
kiln run -C "$repo" --config "$ITEST_DIR/bad.yml" --job inside
expect_rc 2 "a limit that is no size is refused"
expect_contains "$ERR" "bad.yml:3:13: error: jobs.limits.memory:" "at its place in kiln.yml"
printf 'jobs:\n  limits: {pid: 5}\n' >"$ITEST_DIR/typo.yml"
kiln run -C "$repo" --config "$ITEST_DIR/typo.yml" --job inside
expect_rc 2 "an unknown key under jobs.limits is refused"
expect_contains "$ERR" "typo.yml:2:" "at its place"

itest_end
