#!/usr/bin/env bash
# Load test of `kiln serve` (issue 8, item 7; results in docs/performance.md): signed push
# webhooks at a fixed rate on loopback to a real server whose repository's workflow is one job
# that echoes a line naming the delivery; then, through the API, that every delivery became
# exactly one trigger with one successful run whose log has its line, and the latency from
# each webhook to its run's first step (store timestamps).
#
#   bench/webhook_load.sh [--rate 200] [--duration 30] [--runs N] [--build DIR] [--work DIR]
#                         [--json FILE] [--store sqlite|postgresql] [--replicas N]
#                         [--kill-replica-after SECONDS]
#
# --runs: serve.max_concurrent_runs (default: the number of CPUs); --build: where kiln and
# bench/webhook_load are (default: build/); --work: keep everything there (default: a temporary
# directory, removed afterwards); --store postgresql: a throwaway PostgreSQL server
# (scripts/postgres-test-server) holds the store; --replicas N: N `kiln serve` processes on that
# one database (docs/scale-out.md), the sender's connections split across them, the check made
# through the first one's API (every replica shows every run); --kill-replica-after S: the last
# replica is killed with SIGKILL S seconds into the load (issue 21: the sender fails over to the
# others, webhook_load.cpp; the runs the dead replica had started are requeued by a survivor,
# so a trigger may then hold one interrupted run before its successful one). Exit 0 when nothing
# was lost. tests/integration/serve_load_test.sh runs short versions (50/s for a few seconds).
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rate=200 duration=30 runs="$(nproc)" build="$src/build" work="" json="" store=sqlite replicas=1
kill_after=""
while (($#)); do
  case "$1" in
    --rate) rate="$2" ;;
    --duration) duration="$2" ;;
    --runs) runs="$2" ;;
    --build) build="$2" ;;
    --work) work="$2" ;;
    --json) json="$2" ;;
    --store) store="$2" ;;
    --replicas) replicas="$2" ;;
    --kill-replica-after) kill_after="$2" ;;
    *) echo "webhook_load.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
kiln="$build/kiln"
load="$build/bench/webhook_load"
case "$store" in sqlite | postgresql) ;; *) echo "webhook_load.sh: --store $store: sqlite or postgresql" >&2; exit 2 ;; esac
[[ "$replicas" =~ ^[1-9][0-9]*$ ]] || { echo "webhook_load.sh: --replicas $replicas: a number of at least 1" >&2; exit 2; }
if [[ "$store" == sqlite && "$replicas" != 1 ]]; then
  echo "webhook_load.sh: replicas share a PostgreSQL store (--store postgresql)" >&2; exit 2
fi
if [[ -n "$kill_after" ]] && { ((replicas < 2)) || ! [[ "$kill_after" =~ ^[0-9]+(\.[0-9]+)?$ ]]; }; then
  echo "webhook_load.sh: --kill-replica-after SECONDS needs --replicas 2 or more" >&2; exit 2
fi
for tool in "$kiln" "$load"; do
  [[ -x "$tool" ]] || { echo "webhook_load.sh: $tool is missing (ninja -C $build kiln webhook_load)" >&2; exit 2; }
done
keep=1
if [[ -z "$work" ]]; then work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-load.XXXXXX")"; keep=0; fi
mkdir -p "$work"
work="$(cd "$work" && pwd)"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null NO_COLOR=1
export GIT_AUTHOR_NAME="Kiln Load" GIT_AUTHOR_EMAIL="load@example.invalid"
export GIT_COMMITTER_NAME="Kiln Load" GIT_COMMITTER_EMAIL="load@example.invalid"
export KILN_HOST_STORE="$work/host.db"
serve_pids=()
cleanup() {
  for pid in "${serve_pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  if [[ "$store" == postgresql ]]; then "$src/scripts/postgres-test-server" stop "$work/pg" || true; fi
  if ((keep == 0)); then rm -rf "$work"; fi
}
trap cleanup EXIT

secret="load-secret-$RANDOM" token="load-token-$RANDOM"
repo="$work/repo" bare="$work/forge/acme/load.git"
mkdir -p "$repo/.github/workflows"
git -C "$repo" init -q -b main
cat >"$repo/.github/workflows/load.yml" <<'YML'
name: load
on: push
jobs:
  echo:
    runs-on: linux
    steps:
      - run: echo "LOAD-LINE ${{ github.event.kiln_load.n }} ${{ github.event.kiln_load.delivery }}"
YML
git -C "$repo" add -A && git -C "$repo" commit -q -m "the load workflow"
mkdir -p "$(dirname "$bare")" && git clone -q --bare "$repo" "$bare"
sha="$(git -C "$repo" rev-parse HEAD)"
store_line="store: state/kiln.db"
if [[ "$store" == postgresql ]]; then
  chmod 755 "$work"  # the server's user (nobody, when root runs this) must reach pg/
  # fsync on, as a production server runs (the test server's default is off).
  KILN_POSTGRES_FSYNC="${KILN_POSTGRES_FSYNC:-on}" "$src/scripts/postgres-test-server" start "$work/pg" >/dev/null ||
    { echo "webhook_load.sh: the PostgreSQL server did not start" >&2; exit 3; }
  store_line="store: $(cat "$work/pg/url")"
fi
urls=()
for ((r = 0; r < replicas; ++r)); do
  cat >"$work/kiln-$r.yml" <<YML
serve:
  listen: 127.0.0.1:0
  $store_line
  work_dir: serve-work-$r
  api_tokens: [$token]
  max_concurrent_runs: $runs
  shutdown_grace: 1m
  repositories:
    acme/load:
      clone_url: $bare
      webhook_secret: $secret
YML
  "$kiln" serve --config "$work/kiln-$r.yml" --port-file "$work/port-$r" \
    >"$work/serve-$r.out" 2>"$work/serve-$r.err" &
  serve_pids+=($!)
  for _ in $(seq 600); do [[ -s "$work/port-$r" ]] && break; sleep 0.1; done
  [[ -s "$work/port-$r" ]] || { cat "$work/serve-$r.err" >&2; echo "webhook_load.sh: kiln serve $r did not start" >&2; exit 3; }
  urls+=("http://127.0.0.1:$(cat "$work/port-$r")")
done
base="${urls[0]}"
echo "webhook_load.sh: $rate/s for ${duration}s to ${urls[*]} ($store store, max_concurrent_runs: $runs; work: $work)" >&2

rc=0
url_flags=()
for url in "${urls[@]}"; do url_flags+=(--url "$url"); done
killer="" check_flags=()
if [[ -n "$kill_after" ]]; then
  victim="${serve_pids[$((replicas - 1))]}"
  (sleep "$kill_after" && kill -9 "$victim" &&
    echo "webhook_load.sh: replica $((replicas - 1)) (pid $victim) killed with SIGKILL after ${kill_after}s" >&2) &
  killer=$!
  check_flags=(--allow-interrupted)
fi
"$load" "${url_flags[@]}" --secret "$secret" --repository acme/load --sha "$sha" --rate "$rate" \
  --duration "$duration" --out "$work/deliveries.jsonl" || rc=$?
if [[ -n "$killer" ]]; then
  wait "$killer" || { echo "webhook_load.sh: the replica was not killed during the load" >&2; rc=1; }
  wait "$victim" 2>/dev/null || true
  unset "serve_pids[$((replicas - 1))]"
fi
start=$SECONDS
python3 "$src/bench/webhook_load_check.py" --url "$base" --token "$token" \
  --deliveries "$work/deliveries.jsonl" ${json:+--json "$json"} "${check_flags[@]}" || rc=$?
echo "webhook_load.sh: every trigger settled $((SECONDS - start)) s after the last delivery" >&2
curl -sS "$base/metrics" | grep -E '^kiln_serve_(triggers|webhook_deliveries_total)\{' | grep -v ' 0$' >&2 || true

for pid in "${serve_pids[@]}"; do kill -TERM "$pid"; done
for pid in "${serve_pids[@]}"; do wait "$pid" || rc=$?; done
serve_pids=()
# What the servers logged beyond their routine lines: SQLite busy errors, failed triggers.
problems="$(cat "$work"/serve-*.err | grep -ciE 'error|busy|locked|warn' || true)"
echo "webhook_load.sh: $problems warning/error line(s) in the servers' logs ($work/serve-*.err)" >&2
cat "$work"/serve-*.err | grep -iE 'error|busy|locked|warn' | head -5 >&2 || true
exit "$rc"
