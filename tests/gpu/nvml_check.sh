#!/usr/bin/env bash
# Checks kiln's NVML provider against nvidia-smi on a real NVIDIA machine. Builds nothing: point
# KILN at a built binary (default: build/kiln) and run it from anywhere:
#   KILN=/path/to/kiln tests/gpu/nvml_check.sh
# For every GPU it compares `kiln gpus --json` with
#   nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id,compute_cap --format=csv,noheader
# and prints PASS or FAIL per field; exit 0 only when every field matches. Record the output with
# the date, GPU and driver in docs/gpu-verification.md.
set -uo pipefail

KILN="${KILN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/kiln}"
if [[ ! -x "$KILN" ]]; then echo "nvml_check: KILN=$KILN is not an executable" >&2; exit 2; fi
if ! command -v nvidia-smi >/dev/null; then echo "nvml_check: nvidia-smi not found" >&2; exit 2; fi

work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-nvml-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "== kiln: $KILN"
echo "== date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(hostname)"
nvidia-smi --query-gpu=driver_version,name --format=csv,noheader | sed 's/^/== driver, GPU: /'

rc=0
"$KILN" gpus --json >"$work/kiln.json" 2>"$work/kiln.err" || rc=$?
if [[ $rc -ne 0 ]]; then
  echo "FAIL kiln gpus --json exited $rc:"; cat "$work/kiln.err"; exit 1
fi
nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id,compute_cap \
  --format=csv,noheader >"$work/smi.csv" || { echo "FAIL nvidia-smi failed"; exit 1; }

table_rc=0
"$KILN" gpus >"$work/kiln.txt" 2>&1 || table_rc=$?
if [[ $table_rc -eq 0 ]]; then echo "PASS kiln gpus (table) exits 0"; else echo "FAIL kiln gpus (table) exited $table_rc"; fi

python3 - "$work/kiln.json" "$work/smi.csv" "$table_rc" <<'PY'
import csv, json, sys

kiln = json.load(open(sys.argv[1]))
rows = [[c.strip() for c in row] for row in csv.reader(open(sys.argv[2])) if row]
failed = sys.argv[3] != "0"

def check(what, ok, detail):
    global failed
    print(f"{'PASS' if ok else 'FAIL'} {what}: {detail}")
    failed |= not ok

check("provider", kiln["provider"] == "nvml", f"kiln says {kiln['provider']!r}, expected 'nvml'")
check("GPU count", len(kiln["gpus"]) == len(rows),
      f"kiln {len(kiln['gpus'])}, nvidia-smi {len(rows)}")
by_index = {g["index"]: g for g in kiln["gpus"]}
for index, uuid, name, memory, bus_id, cc in rows:
    g = by_index.get(int(index))
    if g is None:
        check(f"GPU {index}", False, "missing from kiln's inventory")
        continue
    check(f"GPU {index} uuid", g["uuid"] == uuid, f"kiln {g['uuid']!r}, nvidia-smi {uuid!r}")
    check(f"GPU {index} name", g["model"] == name, f"kiln {g['model']!r}, nvidia-smi {name!r}")
    smi_mib = int(memory.split()[0])  # "143771 MiB"
    check(f"GPU {index} memory.total", abs(g["memory_total_mib"] - smi_mib) <= 1,
          f"kiln {g['memory_total_mib']} MiB, nvidia-smi {smi_mib} MiB")
    check(f"GPU {index} pci.bus_id", g["pci_bus_id"].lower() == bus_id.lower(),
          f"kiln {g['pci_bus_id']!r}, nvidia-smi {bus_id!r}")
    want_arch = "sm_" + cc.replace(".", "")
    check(f"GPU {index} compute_cap", g["arch"] == want_arch,
          f"kiln {g['arch']!r}, nvidia-smi {cc!r} ({want_arch})")
    check(f"GPU {index} device node", any(n.startswith("/dev/nvidia") for n in g["device_nodes"]),
          f"kiln {g['device_nodes']}")
    check(f"GPU {index} memory.used <= total", g["memory_used_mib"] <= g["memory_total_mib"],
          f"{g['memory_used_mib']} / {g['memory_total_mib']} MiB")
print("RESULT:", "FAIL" if failed else "PASS")
sys.exit(1 if failed else 0)
PY
