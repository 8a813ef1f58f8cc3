#!/usr/bin/env python3
"""Checks a webhook load run of `kiln serve` through its API (bench/webhook_load.sh).

    webhook_load_check.py --url BASE --token TOKEN --deliveries deliveries.jsonl
                          [--timeout 1800] [--json summary.json] [--allow-interrupted]

Waits until every trigger of the deliveries settled, then checks that each delivery the
server accepted became exactly one trigger, that the trigger finished with exactly one run,
that the run succeeded, and that the run's log holds the line the workflow echoes for that
delivery ("LOAD-LINE <n> <delivery>", from github.event.kiln_load). Latency from the
delivery's send time (webhook_load's clock) to the first step's start (the store's started_at
of the run's first step) is summarised as percentiles, with its parts: send -> trigger stored
(created_at), trigger stored -> run created, run created -> first step started.
A delivery counts as delivered when it was answered 202, or 200 {"duplicate"} (the sender
sent it again to another replica after the first one died having stored it).
--allow-interrupted (a replica was killed under the load): a trigger may hold runs that
ended `interrupted` (the dead replica's) before its one successful run, which a surviving
replica started when it requeued the trigger; they are counted, and the latency is that of the
successful run.
Prints a summary (and writes it as JSON with --json); exits 0 when nothing was lost.
"""
import argparse
import concurrent.futures
import json
import sys
import time
import urllib.request


def get(base, path, token=None):
    request = urllib.request.Request(base + path)
    if token:
        request.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def percentiles(values):
    if not values:
        return {}
    values = sorted(values)

    def at(p):
        return values[min(len(values) - 1, int(p / 100 * (len(values) - 1) + 0.5))]

    return {"p50": at(50), "p90": at(90), "p99": at(99), "max": values[-1], "count": len(values)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--deliveries", required=True)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--json")
    parser.add_argument("--allow-interrupted", action="store_true")
    args = parser.parse_args()

    with open(args.deliveries) as f:
        deliveries = [json.loads(line) for line in f if line.strip()]
    sent = {d["delivery"]: d for d in deliveries}
    accepted = {d["delivery"] for d in deliveries if d["status"] in (202, 200)}
    duplicates_answered = sum(1 for d in deliveries if d["status"] == 200)
    sent_again = sum(1 for d in deliveries if d.get("attempts", 1) > 1)

    deadline = time.time() + args.timeout
    while True:
        triggers = get(args.url, "/api/triggers?limit=0")["triggers"]
        ours = [t for t in triggers if t["delivery"] in sent]
        pending = [t for t in ours if t["status"] in ("queued", "running", "waiting_approval")]
        if not pending or time.time() > deadline:
            break
        time.sleep(1)

    by_delivery = {}
    for t in ours:
        by_delivery.setdefault(t["delivery"], []).append(t)
    duplicates = sorted(d for d, ts in by_delivery.items() if len(ts) > 1)
    missing = sorted(d for d in accepted if d not in by_delivery)
    not_finished = sorted(t["delivery"] for t in ours if t["status"] != "finished")
    def runs_ok(t):
        count = len(t["run_ids"] or [])
        return count == 1 or (args.allow_interrupted and count > 1)

    not_one_run = sorted(t["delivery"] for t in ours if not runs_ok(t))

    def inspect(trigger):
        delivery = trigger["delivery"]
        run_ids = sorted(trigger["run_ids"])
        # Earlier runs (a killed replica's, with --allow-interrupted) must have been interrupted.
        earlier = [get(args.url, f"/api/runs/{i}")["status"] for i in run_ids[:-1]]
        run_id = run_ids[-1]
        run = get(args.url, f"/api/runs/{run_id}")
        lines, after = [], 0
        while True:
            page = get(args.url, f"/api/runs/{run_id}/logs?after={after}&limit=1000", args.token)
            lines += [line["text"] for line in page["lines"]]
            if not page["lines"]:
                break
            after = page["next"]
        starts = [s["started_at"] for j in run["jobs"] for s in j["steps"] if s["started_at"]]
        expected = f"LOAD-LINE {sent[delivery]['n']} {delivery}"
        return {
            "delivery": delivery,
            "run_status": run["status"],
            "earlier": earlier,
            "has_line": any(expected in text for text in lines),
            "sent_ms": sent[delivery]["sent_ms"],
            "trigger_ms": trigger["created_at"],
            "run_ms": run["created_at"],
            "first_step_ms": min(starts) if starts else 0,
        }

    checkable = [t for t in ours if t["status"] == "finished" and runs_ok(t)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        runs = list(pool.map(inspect, checkable))
    failed_runs = sorted(r["delivery"] for r in runs if r["run_status"] != "success"
                         or any(status != "interrupted" for status in r["earlier"]))
    interrupted = sum(len(r["earlier"]) for r in runs)
    lines_missing = sorted(r["delivery"] for r in runs if not r["has_line"])
    timed = [r for r in runs if r["first_step_ms"]]
    summary = {
        "deliveries": len(deliveries),
        "accepted_202": len(accepted) - duplicates_answered,
        "answered_duplicate": duplicates_answered,
        "sent_again": sent_again,
        "triggers": len(ours),
        "missing_triggers": len(missing),
        "duplicate_triggers": len(duplicates),
        "triggers_not_finished": len(not_finished),
        "triggers_without_one_run": len(not_one_run),
        "runs_checked": len(runs),
        "runs_not_success": len(failed_runs),
        "runs_interrupted_then_requeued": interrupted,
        "log_lines_missing": len(lines_missing),
        "latency_ms": {
            "webhook_to_first_step": percentiles([r["first_step_ms"] - r["sent_ms"] for r in timed]),
            "webhook_to_trigger_stored": percentiles([r["trigger_ms"] - r["sent_ms"] for r in timed]),
            "trigger_stored_to_run_created": percentiles([r["run_ms"] - r["trigger_ms"] for r in timed]),
            "run_created_to_first_step": percentiles([r["first_step_ms"] - r["run_ms"] for r in timed]),
        },
        "last_first_step_after_first_send_s":
            round((max(r["first_step_ms"] for r in timed) - min(r["sent_ms"] for r in timed)) / 1000, 1)
            if timed else None,
        "examples": {"missing": missing[:5], "duplicates": duplicates[:5],
                     "not_finished": not_finished[:5],
                     "runs_not_success": [f'{r["delivery"]}: runs {r["earlier"] + [r["run_status"]]}'
                                          for r in runs if r["delivery"] in failed_runs[:5]],
                     "log_lines_missing": lines_missing[:5]},
    }
    lost = (len(accepted) != len(deliveries) or missing or duplicates or not_finished or not_one_run
            or failed_runs or lines_missing or len(runs) != len(accepted))
    summary["lost_anything"] = bool(lost)
    text = json.dumps(summary, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
