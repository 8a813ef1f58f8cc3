#!/usr/bin/env python3
"""Scores `kiln hipcheck` against the hand labels in labels.tsv (issue 17 targets).

usage: score.py KILN TREES
  KILN   the kiln binary
  TREES  a folder holding each labelled project, extracted at the commit labels.tsv names, in a
         folder named as the project column (TREES/llm.c, TREES/nccl, ...)

Runs `kiln hipcheck --format json --fail-on none PROJECT` in TREES for each project and prints
  precision: of the labelled gate-failing findings hipcheck still reports, the share labelled tp
             (a labelled finding hipcheck no longer reports is listed as gone, not counted);
  recall:    of the labelled expected uses, the share hipcheck reports (same line, rule, name).
Exit status 1 when precision < 0.95 or recall < 1.0.
"""
import csv
import json
import os
import subprocess
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    kiln, trees = sys.argv[1], sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "labels.tsv")) as f:
        rows = [r for r in csv.DictReader((l for l in f if not l.startswith("#")), delimiter="\t")]
    found = {}
    for project in sorted({r["project"] for r in rows}):
        out = subprocess.run([kiln, "hipcheck", "--format", "json", "--fail-on", "none", project],
                             cwd=trees, capture_output=True, text=True, check=True).stdout
        for file in json.loads(out)["files"]:
            path = file["path"].split("/", 1)[1]
            for x in file["findings"]:
                failing = x["category"] != "convertible" and not x.get("guarded")
                found[(project, path, x["line"], x["rule"], x["name"])] = failing
    tp = fp = gone = expected = hit = 0
    for r in rows:
        key = (r["project"], r["path"], int(r["line"]), r["rule"], r["name"])
        if r["kind"] == "precision":
            if not found.get(key):
                gone += 1
                print("gone:", *key)
            elif r["verdict"] == "tp":
                tp += 1
            else:
                fp += 1
                print("false positive:", *key)
        else:
            expected += 1
            if key in found:
                hit += 1
            else:
                print("missed:", *key)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = hit / expected if expected else 1.0
    print(f"precision of gate-failing findings: {tp}/{tp + fp} = {precision:.3f} ({gone} gone)")
    print(f"recall of named APIs, launches and PTX: {hit}/{expected} = {recall:.3f}")
    sys.exit(0 if precision >= 0.95 and recall >= 1.0 else 1)


if __name__ == "__main__":
    main()
