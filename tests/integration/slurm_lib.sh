# For tests/integration/slurm_*_test.sh, after lib.sh's itest_begin: `slurm_begin` starts a
# throwaway Slurm cluster in $ITEST_DIR/slurm: its own munged (socket and key), one slurmctld and
# two slurmd "nodes" on this machine (Slurm's multiple-slurmd mode: `slurmd -N NAME`, one port
# each), with fake GPUs as GRES backed by device files the script makes:
#   kn1: 1 GPU (h100), feature hbm80; kn2: 2 GPUs (h100), feature hbm94; partition `kiln`.
# It waits until `sinfo` shows both nodes idle, exports SLURM_CONF so that sbatch, squeue and
# scancel (and kiln, which calls them) talk to it, and stops every daemon when the script exits.
# Without Slurm's binaries the script says so and exits 77 (skipped, tests/CMakeLists.txt).
# Cgroup plugins are off (proctrack/linuxproc, task/none): CI machines' cgroups vary.

SLURM_DIR=""
SLURM_PIDS=()

slurm_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

slurm_begin() {
  local bin
  for bin in slurmctld slurmd munged sbatch squeue scancel sinfo scontrol; do
    if ! command -v "$bin" >/dev/null 2>&1 && [[ ! -x "/usr/sbin/$bin" ]]; then
      echo "$ITEST_NAME: SKIPPED: no $bin (Slurm: scripts/deps installs slurm-wlm and munge)"
      trap - EXIT
      rm -rf "$ITEST_DIR"
      exit 77
    fi
  done
  export PATH="$PATH:/usr/sbin"
  SLURM_DIR="$ITEST_DIR/slurm"
  local d="$SLURM_DIR"
  mkdir -p "$d"/{state,log,run,munge,spool/kn1,spool/kn2,gpus/kn1,gpus/kn2}
  chmod 700 "$d/munge"
    # gres/gpu asks for character devices; these are copies of /dev/null, /dev/zero and /dev/full
  # (no job opens them: with task/none nothing confines a job to its devices).
  mknod "$d/gpus/kn1/nvidia0" c 1 3
  mknod "$d/gpus/kn2/nvidia0" c 1 5
  mknod "$d/gpus/kn2/nvidia1" c 1 7
  dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$d/munge/munge.key"
  # Root runs the tests; munged asks for --force to run as root.
  munged --force --socket="$d/munge/munge.sock" --key-file="$d/munge/munge.key" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/log/munged.log" \
    --seed-file="$d/munge/munged.seed" || itest_die "munged did not start (log: $d/log/munged.log)"
  SLURM_PIDS+=("$(cat "$d/munge/munged.pid")")
  trap 'slurm_on_exit' EXIT

  local ctld_port n1_port n2_port
  ctld_port="$(slurm_free_port)"
  n1_port="$(slurm_free_port)"
  n2_port="$(slurm_free_port)"
  cat >"$d/slurm.conf" <<EOF
ClusterName=kilntest
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
GresTypes=gpu
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
NodeName=kn1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$n1_port CPUs=4 RealMemory=1000 Gres=gpu:h100:1 Feature=hbm80 State=UNKNOWN
NodeName=kn2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$n2_port CPUs=4 RealMemory=1000 Gres=gpu:h100:2 Feature=hbm94 State=UNKNOWN
PartitionName=kiln Nodes=kn1,kn2 Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$d/gres.conf" <<EOF
AutoDetect=off
NodeName=kn1 Name=gpu Type=h100 File=$d/gpus/kn1/nvidia0
NodeName=kn2 Name=gpu Type=h100 File=$d/gpus/kn2/nvidia[0-1]
EOF
  export SLURM_CONF="$d/slurm.conf"

  slurmctld -D -i -f "$SLURM_CONF" >"$d/log/slurmctld.out" 2>&1 &
  SLURM_PIDS+=("$!")
  local node
  for node in kn1 kn2; do
    slurmd -D -N "$node" -f "$SLURM_CONF" >"$d/log/slurmd-$node.out" 2>&1 &
    SLURM_PIDS+=("$!")
  done
  local i
  for ((i = 0; i < 300; i++)); do
    if [[ "$(sinfo -h -N -o '%N %t' 2>/dev/null | sort | tr '\n' ' ')" == "kn1 idle kn2 idle " ]]; then
      echo "  slurm: kn1 and kn2 idle (SLURM_CONF=$SLURM_CONF)"
      return 0
    fi
    sleep 0.2
  done
  sinfo -N -l >&2 || true
  tail -n 20 "$d/log/slurmctld.log" "$d"/log/slurmd-*.log >&2 || true
  itest_die "the Slurm test cluster did not come up (logs: $d/log)"
}

slurm_on_exit() {
  local status=$?
  # As postgres_on_exit: set -e would end the trap before itest_on_exit kills the test's processes.
  set +e
  local pid i
  if [[ -n "$SLURM_DIR" ]]; then
    # Jobs first (their steps are this machine's processes), then the daemons.
    scancel --full --signal=KILL --partition=kiln >/dev/null 2>&1
  fi
  for pid in "${SLURM_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${SLURM_PIDS[@]}"; do
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
  done
  # slurmstepd processes of jobs that outlived their slurmd.
  if [[ -n "$SLURM_DIR" ]]; then
    for pid in $(pgrep -f "slurmstepd.*" 2>/dev/null); do
      if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "SLURM_CONF=$SLURM_CONF"; then
        kill -KILL "$pid" 2>/dev/null
      fi
    done
  fi
  (exit "$status")
  itest_on_exit
}

# slurm_wait_empty: until squeue shows no job of the test cluster (up to 60 s).
slurm_wait_empty() {
  local i
  for ((i = 0; i < 300; i++)); do
    [[ -z "$(squeue -h -o %i 2>/dev/null)" ]] && return 0
    sleep 0.2
  done
  return 1
}
