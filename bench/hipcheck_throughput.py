#!/usr/bin/env python3
"""Whole-process throughput and memory of `kiln hipcheck` (issue 17 targets), one thread.

usage: bench/hipcheck_throughput.py KILN [TREES] [--rounds R] [--against OLD] [--formats F,..]
  KILN   the kiln binary (a Release build for published numbers)
  TREES  optional: a folder of real CUDA projects (tests/data/hipcheck/corpus/labels.tsv names
         them and their commits); each subfolder is scanned as one tree
  OLD    optional: a second kiln binary (say, a build of main) run alternately with KILN, round
         by round, so that both see the same load; its CPU time and MB/s are printed beside
  F      the formats, default text,json (sarif is the third)

Generated inputs (in a temporary folder, removed afterwards):
  dense     67 MB: 150 files of 10,000 lines, one CUDA finding per line (1.5 M findings)
  line-40k  one 760 KB line with 40,000 findings (issue 17: took 17 s)
  line-10m  one 10 MB line with 770,000 findings (issue 17: never ended)
Each input is scanned with `-j 1 --fail-on none`, as text to /dev/null and as JSON to
/dev/null (GNU time measures); the median of R rounds of user+system CPU time gives MB/s per
core (MB = 10^6 bytes of scanned source), and the largest resident set size is reported.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile



def run(kiln, path, fmt):
    """CPU seconds (user + system) and peak RSS (KiB) of one scan, as GNU time reports them."""
    with tempfile.NamedTemporaryFile(mode="r") as report:
        subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", report.name, kiln, "hipcheck",
                        "-j", "1", "--fail-on", "none", "--format", fmt, "-o", "/dev/null", path],
                       stderr=subprocess.DEVNULL, check=True)
        user, system, rss = report.read().split()[-3:]
    return float(user) + float(system), int(rss)


def source_bytes(kiln, path):
    out = subprocess.run([kiln, "hipcheck", "--format", "json", "--fail-on", "none", path],
                         capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    total = 0
    for f in doc["files"]:
        total += os.path.getsize(f["path"])
    findings = sum(len(f["findings"]) for f in doc["files"])
    return total, findings


def generate(folder):
    inputs = {}
    dense = os.path.join(folder, "dense")
    os.makedirs(dense)
    lines = ["  cudaMemcpy(dst + %d, src, n, cudaMemcpyHostToDevice);  // copy\n",
             "  v += __shfl_down_sync(0xffffffff, v, %d);\n",
             "  CUresult r%d = cuCtxSynchronize();\n",
             "  cudaFree(buffers[%d]);\n"]
    for f in range(150):
        with open(os.path.join(dense, f"f{f:03}.cu"), "w") as out:
            out.write("".join(lines[i % 4] % i for i in range(10000)))
    inputs["dense"] = dense
    for name, count in (("line-40k", 40000), ("line-10m", 770000)):
        path = os.path.join(folder, name + ".cu")
        with open(path, "w") as out:
            out.write("cudaFree(p); " * count + "\n")
        inputs[name] = path
    return inputs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kiln")
    parser.add_argument("trees", nargs="?")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against")
    parser.add_argument("--formats", default="text,json")
    args = parser.parse_args()
    kiln = os.path.abspath(args.kiln)
    old = os.path.abspath(args.against) if args.against else None
    with tempfile.TemporaryDirectory() as folder:
        inputs = generate(folder)
        if args.trees:
            for name in sorted(os.listdir(args.trees)):
                if os.path.isdir(os.path.join(args.trees, name)):
                    inputs[name] = os.path.join(args.trees, name)
        formats = args.formats.split(",")
        if old:
            print("| input | MB | findings | format | before: CPU s | MB/s per core | after: CPU s "
                  "| MB/s per core | peak RSS MB before / after |")
            print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
        else:
            print("| input | MB | findings | format | CPU s (median) | MB/s per core | peak RSS MB |")
            print("|---|---:|---:|---|---:|---:|---:|")

        def speed(size, cpu):
            return f"{size / 1e6 / cpu:.0f}" if cpu > 0 else "-"  # under the clock's tick

        for name, path in inputs.items():
            size, findings = source_bytes(kiln, path)
            for fmt in formats:
                new_runs, old_runs = [], []
                for _ in range(args.rounds):
                    if old:
                        old_runs.append(run(old, path, fmt))
                    new_runs.append(run(kiln, path, fmt))
                cpu = statistics.median(r[0] for r in new_runs)
                rss = max(r[1] for r in new_runs) / 1024
                head = f"| {name} | {size / 1e6:.1f} | {findings:,} | {fmt} |"
                if old:
                    old_cpu = statistics.median(r[0] for r in old_runs)
                    old_rss = max(r[1] for r in old_runs) / 1024
                    print(f"{head} {old_cpu:.3f} | {speed(size, old_cpu)} | {cpu:.3f} | "
                          f"{speed(size, cpu)} | {old_rss:.0f} / {rss:.0f} |", flush=True)
                else:
                    print(f"{head} {cpu:.3f} | {speed(size, cpu)} | {rss:.0f} |", flush=True)

if __name__ == "__main__":
    main()
