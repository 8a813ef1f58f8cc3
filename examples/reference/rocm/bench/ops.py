"""Times a few operators and writes Kiln's custom benchmark JSON (smaller is better)."""
import argparse
import json
import os
import time


def time_op(fn, repeats=20):
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return samples


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    results = []
    for name, fn in {"sum_1m": lambda: sum(range(1_000_000)), "sort_100k": lambda: sorted(range(100_000, 0, -1))}.items():
        samples = time_op(fn)
        results.append({"name": name, "unit": "ms", "value": sorted(samples)[len(samples) // 2],
                        "samples": samples, "direction": "smaller_is_better"})
    os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
    with open(args.json, "w") as out:
        json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
