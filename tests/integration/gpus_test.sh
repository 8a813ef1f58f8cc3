#!/usr/bin/env bash
# kiln gpus: the inventory from a simulated spec and from amdgpu sysfs fixture trees
# (tests/data/gpu/), as a table and as JSON; bad specs are exit code 2 with a one-line error.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin gpus_test
DATA="$KILN_SOURCE_DIR/tests/data/gpu"

# ---- simulated: 8 H100 in two NVLink islands of 4 -------------------------------------------
kiln gpus --json --simulate-gpus "$DATA/h100-8x-two-islands.json"
expect_rc 0 "simulated inventory as JSON"
expect_json 'd["provider"]' simulated "the provider is named as a simulation"
expect_json 'len(d["gpus"])' 8 "eight GPUs"
expect_json 'd["gpus"][0]["uuid"]' GPU-sim-000000000000 "a generated UUID is marked as simulated"
expect_json 'd["gpus"][5]["memory_used_mib"]' 40000 "memory used is carried"
expect_json 'd["gpus"][7]["pci_bus_id"]' 00000000:DB:00.0 "the PCI bus id is carried"
expect_json 'sorted({(l["a"], l["b"]) for l in d["links"] if l["kind"] == "nvlink"})' \
  '[[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3], [4, 5], [4, 6], [4, 7], [5, 6], [5, 7], [6, 7]]' \
  "two NVLink islands of four"
expect_json '[l["width"] for l in d["links"] if l["kind"] == "nvlink"][0]' 18 "NVLink width"

kiln gpus --simulate-gpus "$DATA/h100-8x-two-islands.json"
expect_rc 0 "simulated inventory as a table"
expect_contains "$OUT" "provider: simulated (a simulated inventory, not this host's GPUs)" \
  "the table says it is a simulation"
expect_contains "$OUT" "NVIDIA H100 80GB HBM3" "the table lists the model"
expect_contains "$OUT" "40000 / 81559 MiB" "the table shows memory used / total"
row0="$(grep -E '^GPU0 ' <<<"$OUT" || true)"
expect_contains "$row0" "X     NV18  NV18  NV18  SYS   SYS   SYS   SYS" \
  "link matrix: GPU0 has NVLink to its island, SYS to the other"
row5="$(grep -E '^GPU5 ' <<<"$OUT" || true)"
expect_contains "$row5" "SYS   SYS   SYS   SYS   NV18  X     NV18  NV18" "link matrix row of GPU5"

kiln gpus --simulate-gpus "$DATA/one-h200.json"
expect_rc 0 "a single GPU"
expect_contains "$OUT" "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0" "a given UUID is kept"
if grep -q "^links:" <<<"$OUT"; then fail "no link matrix for one GPU"; else pass "no link matrix for one GPU"; fi

# ---- bad specs --------------------------------------------------------------------------------
kiln gpus --simulate-gpus "$DATA/bad-unknown-key.json"
expect_rc 2 "an unknown key is bad input"
expect_contains "$ERR" "bad-unknown-key.json: error: gpus[1].memory_mb: unknown key" \
  "the error names the file and the JSON path"
if [[ "$(wc -l <<<"$ERR")" == 1 ]]; then pass "the error is one line"; else fail "the error is one line: $ERR"; fi

printf '{"gpus": [{"vendor": "nvidia", "model": "m", "memory_mib": 1}],\n "links": [{"a": 0, "b": 3, "kind": "nvlink"}]}\n' >"$ITEST_DIR/bad-link.json"
kiln gpus --json --simulate-gpus "$ITEST_DIR/bad-link.json"
expect_rc 2 "a link to a GPU that does not exist is bad input"
expect_contains "$ERR" "links[0].b: GPU index 3 does not exist (1 GPUs)" "the bad link is named"
if [[ -z "$OUT" ]]; then pass "nothing on stdout on error"; else fail "stdout on error: $OUT"; fi

printf '{"gpus": [\n  {"vendor": "nvidia",}\n]}\n' >"$ITEST_DIR/bad-syntax.json"
kiln gpus --simulate-gpus "$ITEST_DIR/bad-syntax.json"
expect_rc 2 "a JSON syntax error is bad input"
expect_contains "$ERR" "bad-syntax.json:2:" "a syntax error has a line"

kiln gpus --simulate-gpus "$ITEST_DIR/missing.json"
expect_rc 2 "a missing spec file is bad input"
expect_contains "$ERR" "missing.json: error: cannot read the simulated GPU inventory" "missing file named"

# ---- amdgpu sysfs fixtures --------------------------------------------------------------------
kiln gpus --json --sysfs-root "$DATA/amd-mi250"
expect_rc 0 "MI250 sysfs tree as JSON"
expect_json 'd["provider"]' amdgpu-sysfs "provider amdgpu-sysfs"
expect_json 'len(d["gpus"])' 4 "four GCDs (the BMC VGA card is skipped)"
expect_json '[g["arch"] for g in d["gpus"]]' '["gfx90a", "gfx90a", "gfx90a", "gfx90a"]' "gfx90a from kfd"
expect_json 'd["gpus"][0]["device_nodes"]' '["/dev/dri/card1", "/dev/dri/renderD128"]' "render node from kfd"
expect_json 'd["gpus"][0]["uuid"]' GPU-3a5e8b6c0f1d2e47 "UUID from unique_id"
expect_json 'd["gpus"][0]["memory_total_mib"]' 65520 "VRAM total in MiB"
expect_json 'sorted((l["a"], l["b"]) for l in d["links"] if l["kind"] == "xgmi")' \
  '[[0, 1], [0, 2], [1, 3], [2, 3]]' "XGMI links from kfd io_links"

kiln gpus --sysfs-root "$DATA/amd-mi250"
expect_rc 0 "MI250 sysfs tree as a table"
expect_contains "$OUT" "provider: amdgpu-sysfs" "the table names the provider"
row0="$(grep -E '^GPU0 ' <<<"$OUT" || true)"
expect_contains "$row0" "X     XGMI  XGMI  SYS" "link matrix of an MI250 GCD"

kiln gpus --json --sysfs-root "$DATA/amd-w7900"
expect_rc 0 "W7900 sysfs tree"
expect_json '[g["model"] for g in d["gpus"]]' '["AMD GPU 0x7448", "AMD GPU 0x7448"]' "model without FRU"
expect_json 'd["links"]' '[{"a": 0, "b": 1, "kind": "pcie-switch", "width": 0}]' "PCIe switch from the device path"

kiln gpus --json --sysfs-root "$DATA/amd-mi300x"
expect_rc 0 "MI300X sysfs tree"
expect_json 'len(d["gpus"])' 8 "eight MI300X GPUs (the BMC VGA card is skipped)"
expect_json 'sorted(set(g["arch"] for g in d["gpus"]))' '["gfx942"]' "gfx942 from kfd"
expect_json 'd["gpus"][7]["device_nodes"]' '["/dev/dri/card8", "/dev/dri/renderD135"]' "render node of the last GPU"
expect_json 'd["gpus"][0]["memory_total_mib"]' 196288 "192 GiB of VRAM less what the driver keeps"
expect_json 'len(d["links"])' 28 "a link for every pair"
expect_json 'sorted(set(l["kind"] for l in d["links"]))' '["xgmi"]' "all-to-all XGMI"

mkdir -p "$ITEST_DIR/empty/sys/class/drm"
kiln gpus --sysfs-root "$ITEST_DIR/empty"
expect_rc 0 "no GPUs is not an error"
expect_contains "$OUT" "no GPUs found" "no GPUs found"
kiln gpus --json --sysfs-root "$ITEST_DIR/empty"
expect_json 'd["gpus"]' '[]' "an empty JSON list"

itest_end
