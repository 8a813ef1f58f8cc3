#!/usr/bin/env python3
"""Writes the amdgpu sysfs fixture trees that src/kiln/gpu/amd_sysfs_provider_test.cpp and
tests/integration/gpus_test.sh read (`kiln gpus --sysfs-root DIR`).

Each tree is laid out the way the amdgpu and amdkfd drivers lay out /sys:
  sys/devices/pci<DOMAIN>:<BUS>/<root port>/<switch up>/<switch down>/<GPU>/   the PCI device, with
      vendor, device, class, uevent (PCI_SLOT_NAME), numa_node, current_link_width, and the amdgpu
      files mem_info_vram_total / mem_info_vram_used (bytes), unique_id (hex), product_name (FRU,
      server cards only), the telemetry files gpu_busy_percent (10 x N for cardN),
      mem_busy_percent (N), pp_dpm_sclk (1700 MHz current), pp_dpm_mclk (1600 MHz current),
      hwmon/hwmonN/temp1_input (45 + N C) and power1_average ((250 + N) W; power1_input on the
      W7900, as consumer cards report it), and drm/cardN, drm/renderD<minor>
  sys/class/drm/cardN -> ../../devices/.../drm/cardN, with cardN/device -> the PCI device
  sys/class/kfd/kfd/topology/nodes/<n>/{gpu_id,properties,io_links/<m>/properties}: "name value"
      lines; GPU nodes carry gfx_target_version (major*10000 + minor*100 + stepping),
      drm_render_minor, domain and location_id ((bus << 8) | (device << 3) | function) that tie the
      node to its card; io_links have type 2 (PCIe) or 11 (XGMI), node_from, node_to, weight.
  sys/module/amdgpu/version (DKMS drivers only)
  proc/<pid>/fd/<fd> -> /dev/dri/renderD<minor> and proc/<pid>/fdinfo/<fd> with the drm-* keys of
      DRM clients (amd-mi250 only: per-process VRAM, src/kiln/gpu/amd_fdinfo.h)
Run it from this folder: python3 make_amd_fixtures.py (it rewrites all three trees).
"""

import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def link(path, target):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


def props(pairs):
    return "".join(f"{k} {v}\n" for k, v in pairs)


def pci_dev(root, chain, files):
    """chain: ["pci0000:00", "0000:00:01.1", ..., "0000:03:00.0"]; returns the device dir."""
    d = os.path.join(root, "sys/devices", *chain)
    for name, text in files.items():
        write(os.path.join(d, name), text)
    return d


def add_card(root, chain, card, render_minor, dev):
    slot = chain[-1]
    files = {
        "vendor": f"0x{dev['vendor']:04x}\n",
        "device": f"0x{dev['device']:04x}\n",
        "class": f"0x{dev['class']:06x}\n",
        "numa_node": f"{dev['numa']}\n",
        "current_link_width": "16\n",
        "current_link_speed": dev.get("link_speed", "16.0 GT/s PCIe") + "\n",
        "uevent": (f"DRIVER={dev['driver']}\nPCI_CLASS={dev['class']:X}\n"
                   f"PCI_ID={dev['vendor']:04X}:{dev['device']:04X}\n"
                   f"PCI_SUBSYS_ID={dev['vendor']:04X}:0B0C\nPCI_SLOT_NAME={slot}\n"),
    }
    if dev["vendor"] == 0x1002:
        files["mem_info_vram_total"] = f"{dev['vram_total']}\n"
        files["mem_info_vram_used"] = f"{dev['vram_used']}\n"
        if dev.get("unique_id"):
            files["unique_id"] = f"{dev['unique_id']}\n"
        if dev.get("product_name"):
            files["product_name"] = f"{dev['product_name']}\n"
        # Telemetry (src/kiln/gpu/telemetry.h): values that tell the cards apart.
        files["gpu_busy_percent"] = f"{10 * card}\n"
        files["mem_busy_percent"] = f"{card}\n"
        files["pp_dpm_sclk"] = "0: 500Mhz \n1: 800Mhz \n2: 1700Mhz *\n"
        files["pp_dpm_mclk"] = "0: 400Mhz \n1: 1600Mhz *\n"
        files[f"hwmon/hwmon{card}/temp1_input"] = f"{45000 + 1000 * card}\n"
        files[f"hwmon/hwmon{card}/{dev.get('power_file', 'power1_average')}"] = (
            f"{(250 + card) * 1000000}\n")
    d = pci_dev(root, chain, files)
    rel = os.path.relpath(d, os.path.join(root, "sys/class/drm"))
    write(os.path.join(d, f"drm/card{card}/dev"), f"226:{card}\n")
    link(os.path.join(d, f"drm/card{card}/device"), "../../../" + slot)
    link(os.path.join(root, f"sys/class/drm/card{card}"), f"{rel}/drm/card{card}")
    if render_minor is not None:
        write(os.path.join(d, f"drm/renderD{render_minor}/dev"), f"226:{render_minor}\n")
        link(os.path.join(d, f"drm/renderD{render_minor}/device"), "../../../" + slot)
        link(os.path.join(root, f"sys/class/drm/renderD{render_minor}"),
             f"{rel}/drm/renderD{render_minor}")


def location_id(slot):
    _, bus, devfn = slot.split(":")
    dev, fn = devfn.split(".")
    return (int(bus, 16) << 8) | (int(dev, 16) << 3) | int(fn)


def kfd_cpu_node(root, n, cores, links):
    d = os.path.join(root, "sys/class/kfd/kfd/topology/nodes", str(n))
    write(os.path.join(d, "gpu_id"), "0\n")
    write(os.path.join(d, "properties"), props([
        ("cpu_cores_count", cores), ("simd_count", 0), ("mem_banks_count", 1),
        ("caches_count", 0), ("io_links_count", len(links)), ("p2p_links_count", 0),
        ("cpu_core_id_base", n * cores), ("simd_id_base", 0), ("max_waves_per_simd", 0),
        ("lds_size_in_kb", 0), ("gds_size_in_kb", 0), ("num_gws", 0), ("wave_front_size", 0),
        ("array_count", 0), ("simd_arrays_per_engine", 0), ("cu_per_simd_array", 0),
        ("simd_per_cu", 0), ("max_slots_scratch_cu", 0), ("gfx_target_version", 0),
        ("vendor_id", 0), ("device_id", 0), ("location_id", 0), ("domain", 0),
        ("drm_render_minor", 0), ("hive_id", 0), ("num_sdma_engines", 0),
        ("num_sdma_xgmi_engines", 0), ("num_sdma_queues_per_engine", 0), ("num_cp_queues", 0),
        ("max_engine_clk_ccompute", 3700)]))
    write_links(d, n, links)


def write_links(d, n, links):
    for i, (kind, to, weight) in enumerate(links):
        write(os.path.join(d, f"io_links/{i}/properties"), props([
            ("type", kind), ("version_major", 0), ("version_minor", 0), ("node_from", n),
            ("node_to", to), ("weight", weight), ("min_latency", 0), ("max_latency", 0),
            ("min_bandwidth", 312 if kind == 2 else 50000),
            ("max_bandwidth", 64000 if kind == 2 else 100000),
            ("recommended_transfer_size", 0), ("recommended_sdma_engine_id", 0),
            ("flags", 1)]))


def kfd_gpu_node(root, n, gpu_id, slot, render_minor, gfx, dev, unique_id_dec, hive, links,
                 overrides=None):
    """overrides: property values of another chip than the MI250's (same names, same order)."""
    d = os.path.join(root, "sys/class/kfd/kfd/topology/nodes", str(n))
    write(os.path.join(d, "gpu_id"), f"{gpu_id}\n")
    overrides = overrides or {}
    write(os.path.join(d, "properties"), props((k, overrides.get(k, v)) for k, v in [
        ("cpu_cores_count", 0), ("simd_count", 416), ("mem_banks_count", 1),
        ("caches_count", 202), ("io_links_count", len(links)), ("p2p_links_count", 0),
        ("cpu_core_id_base", 0), ("simd_id_base", 2147487744), ("max_waves_per_simd", 8),
        ("lds_size_in_kb", 64), ("gds_size_in_kb", 0), ("num_gws", 64), ("wave_front_size", 64),
        ("array_count", 8), ("simd_arrays_per_engine", 1), ("cu_per_simd_array", 13),
        ("simd_per_cu", 4), ("max_slots_scratch_cu", 32), ("gfx_target_version", gfx),
        ("vendor_id", dev["vendor"]), ("device_id", dev["device"]),
        ("location_id", location_id(slot)), ("domain", int(slot.split(":")[0], 16)),
        ("drm_render_minor", render_minor), ("hive_id", hive), ("num_sdma_engines", 2),
        ("num_sdma_xgmi_engines", 3), ("num_sdma_queues_per_engine", 8), ("num_cp_queues", 24),
        ("max_engine_clk_fcompute", 1700), ("local_mem_size", 0), ("fw_version", 78),
        ("capability", 746349184), ("debug_prop", 1495), ("sdma_fw_version", 8),
        ("unique_id", unique_id_dec), ("num_xcc", 1), ("max_engine_clk_ccompute", 3700)]))
    write_links(d, n, links)


def bmc_vga(root, chain=("pci0000:00", "0000:00:07.1", "0000:0a:00.0")):
    # The board's own VGA (ASPEED) is card0 on most servers: not an amdgpu device.
    add_card(root, list(chain), 0, None,
             {"vendor": 0x1a03, "device": 0x2000, "class": 0x030000, "numa": 0,
              "driver": "ast"})


def drm_fd(root, pid, fd, target, fdinfo):
    """One open file of a process as the kernel shows it: proc/<pid>/fd/<fd> links to `target`,
    proc/<pid>/fdinfo/<fd> holds the common pos/flags/mnt_id/ino lines, then `fdinfo`."""
    link(os.path.join(root, f"proc/{pid}/fd/{fd}"), target)
    write(os.path.join(root, f"proc/{pid}/fdinfo/{fd}"),
          f"pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t{1000 + fd}\n" + fdinfo)


def mi250_processes(root):
    """DRM clients of the MI250X cards in /proc (amd_fdinfo.h): pid 4242 has GCD0 open twice
    (one client, dup()ed fd: counted once) with the pre-6.8 drm-memory-vram key, and GCD2 with
    the newer resident/total keys; pid 5151 has GCD0 open with only drm-total-vram; pid 6000
    has /dev/null open; pid 7000 has a DRM client of another driver."""
    legacy = ("drm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\ndrm-client-id:\t7\n"
              "drm-engine-gfx:\t123456 ns\ndrm-memory-vram:\t2097152 KiB\n"
              "drm-memory-gtt:\t4096 KiB\ndrm-memory-cpu:\t0 KiB\n")
    drm_fd(root, 4242, 5, "/dev/dri/renderD128", legacy)
    drm_fd(root, 4242, 6, "/dev/dri/renderD128", legacy)
    drm_fd(root, 4242, 7, "/dev/dri/renderD130",
           "drm-driver:\tamdgpu\ndrm-pdev:\t0000:83:00.0\ndrm-client-id:\t9\n"
           "drm-total-vram:\t1048576 KiB\ndrm-shared-vram:\t0\ndrm-resident-vram:\t524288 KiB\n"
           "drm-total-gtt:\t2048 KiB\n")
    drm_fd(root, 5151, 3, "/dev/dri/renderD128",
           "drm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\ndrm-client-id:\t11\n"
           "drm-total-vram:\t3 GiB\n")
    link(os.path.join(root, "proc/6000/fd/1"), "/dev/null")
    write(os.path.join(root, "proc/6000/fdinfo/1"), "pos:\t0\nflags:\t0100002\nmnt_id:\t5\n")
    drm_fd(root, 7000, 3, "/dev/dri/renderD131",
           "drm-driver:\ti915\ndrm-pdev:\t0000:84:00.0\ndrm-client-id:\t3\n"
           "drm-total-local0:\t4096 KiB\n")


def mi250(root):
    """Two MI250X packages (two GCDs each, one per NUMA node): four amdgpu cards. XGMI inside each
    package and between GCD0-GCD2 and GCD1-GCD3; GCD0-GCD3 and GCD1-GCD2 have no direct link."""
    bmc_vga(root)
    write(os.path.join(root, "sys/class/drm/version"), "drm 1.1.0 20060810\n")
    write(os.path.join(root, "sys/module/amdgpu/version"), "6.7.0\n")
    gcds = [
        # chain, card, render minor, numa, unique id (hex), used bytes
        (["pci0000:00", "0000:00:01.1", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0"],
         1, 128, 0, "3a5e8b6c0f1d2e47", 15925248),
        (["pci0000:00", "0000:00:01.1", "0000:01:00.0", "0000:02:01.0", "0000:04:00.0"],
         2, 129, 0, "6b1f2c3d4e5a6978", 15925248),
        (["pci0000:80", "0000:80:01.1", "0000:81:00.0", "0000:82:00.0", "0000:83:00.0"],
         3, 130, 1, "7c2a3b4c5d6e7f80", 8589934592),
        (["pci0000:80", "0000:80:01.1", "0000:81:00.0", "0000:82:01.0", "0000:84:00.0"],
         4, 131, 1, "0d3b4c5d6e7f8091", 15925248),
    ]
    xgmi = {(0, 1): 15, (2, 3): 15, (0, 2): 41, (1, 3): 41}
    kfd_cpu_node(root, 0, 64, [(2, 2, 20), (2, 3, 20)])
    kfd_cpu_node(root, 1, 64, [(2, 4, 20), (2, 5, 20)])
    for i, (chain, card, minor, numa, uid, used) in enumerate(gcds):
        dev = {"vendor": 0x1002, "device": 0x740C, "class": 0x038000, "numa": numa,
               "driver": "amdgpu", "vram_total": 68702699520, "vram_used": used,
               "unique_id": uid, "product_name": "AMD Instinct MI250X"}
        add_card(root, chain, card, minor, dev)
        node = 2 + i
        links = [(2, numa, 20)]
        for (a, b), weight in sorted(xgmi.items()):
            if i in (a, b):
                links.append((11, 2 + (b if i == a else a), weight))
        kfd_gpu_node(root, node, 40000 + 1111 * i, chain[-1], minor, 90010, dev, int(uid, 16),
                     0x5c1a2b3c4d5e6f70, links)
    mi250_processes(root)


def w7900(root):
    """Two Radeon PRO W7900 (gfx1100) behind one PCIe switch; no FRU, so no product_name, and no
    unique_id file in the card directory (the kfd node still has one)."""
    gpus = [
        (["pci0000:40", "0000:40:03.1", "0000:41:00.0", "0000:42:00.0", "0000:43:00.0"], 0, 128,
         0x1a2b3c4d5e6f7081),
        (["pci0000:40", "0000:40:03.1", "0000:41:00.0", "0000:42:01.0", "0000:44:00.0"], 1, 129,
         0x2b3c4d5e6f708192),
    ]
    kfd_cpu_node(root, 0, 32, [(2, 1, 20), (2, 2, 20)])
    for i, (chain, card, minor, uid) in enumerate(gpus):
        dev = {"vendor": 0x1002, "device": 0x7448, "class": 0x030000, "numa": -1,
               "driver": "amdgpu", "vram_total": 51522830336, "vram_used": 0,
               "power_file": "power1_input"}
        add_card(root, chain, card, minor, dev)
        kfd_gpu_node(root, 1 + i, 50000 + i, chain[-1], minor, 110000, dev, uid, 0,
                     [(2, 0, 20)])


def mi300x(root):
    """An MI300X platform: eight OAM modules (gfx942, 192 GiB HBM3 each), four per socket, every
    pair linked by one XGMI hop (all-to-all, weight 15: one hive). Each GPU sits alone behind its
    own PCIe switch (board switch, then the AMD bridge of the module) below a root port of its
    socket's host bridge. The PCI class is 0x120000 (processing accelerator, not display). The kfd
    topology lists the two CPU nodes first (0, 1) and then the GPUs (2..9) in PCI bus order; each
    GPU node has one PCIe io_link to its socket's CPU node and seven XGMI io_links."""
    bmc_vga(root, ("pci0000:00", "0000:00:08.1", "0000:70:00.0"))
    write(os.path.join(root, "sys/class/drm/version"), "drm 1.1.0 20060810\n")
    write(os.path.join(root, "sys/module/amdgpu/version"), "6.10.5\n")
    # (host bridge, root port, switch up, switch down, AMD bridge, GPU) buses; NUMA node.
    buses = [("00", "01.1", "05", "08", "0a", "0c", 0), ("00", "03.1", "0e", "11", "13", "15", 0),
             ("00", "05.1", "17", "1a", "1c", "1e", 0), ("00", "07.1", "62", "65", "67", "69", 0),
             ("80", "01.1", "98", "9b", "9d", "9f", 1), ("80", "03.1", "a8", "ab", "ad", "af", 1),
             ("80", "05.1", "b8", "bb", "bd", "bf", 1), ("80", "07.1", "d8", "db", "dd", "df", 1)]
    used = [299687936] * 8
    used[5] = 68719476736  # 64 GiB still held by a process on GPU 5
    kfd_cpu_node(root, 0, 96, [(2, 2 + i, 20) for i in range(4)])
    kfd_cpu_node(root, 1, 96, [(2, 6 + i, 20) for i in range(4)])
    for i, (host, port, up, down, bridge, bus, numa) in enumerate(buses):
        chain = [f"pci0000:{host}", f"0000:{host}:{port}", f"0000:{up}:00.0", f"0000:{down}:00.0",
                 f"0000:{bridge}:00.0", f"0000:{bus}:00.0"]
        uid = f"{0x4c1e0a7b93d2f600 + 0x1111 * i:016x}"
        dev = {"vendor": 0x1002, "device": 0x74A1, "class": 0x120000, "numa": numa,
               "driver": "amdgpu", "vram_total": 205822885888, "vram_used": used[i],
               "unique_id": uid, "product_name": "AMD Instinct MI300X",
               "link_speed": "32.0 GT/s PCIe"}
        add_card(root, chain, 1 + i, 128 + i, dev)
        links = [(2, numa, 20)] + [(11, 2 + j, 15) for j in range(8) if j != i]
        kfd_gpu_node(root, 2 + i, 61000 + 3 * i, chain[-1], 128 + i, 90402, dev, int(uid, 16),
                     0x7a3c5e1f2b4d6e80, links,
                     {"simd_count": 1216, "caches_count": 626, "max_waves_per_simd": 8,
                      "array_count": 32, "simd_arrays_per_engine": 1, "cu_per_simd_array": 10,
                      "num_sdma_xgmi_engines": 14, "max_engine_clk_fcompute": 2100,
                      "local_mem_size": 0, "fw_version": 177, "sdma_fw_version": 20,
                      "num_xcc": 8, "max_engine_clk_ccompute": 3700})


for name, build in (("amd-mi250", mi250), ("amd-w7900", w7900), ("amd-mi300x", mi300x)):
    root = os.path.join(HERE, name)
    shutil.rmtree(root, ignore_errors=True)
    build(root)
    print("wrote", root)
