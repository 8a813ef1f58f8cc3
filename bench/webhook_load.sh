#!/usr/bin/env bash
# Load test of `kiln serve` (issue 8, item 7; results in docs/performance.md): signed push
# webhooks at a fixed rate on loopback to a real server whose repository's workflow is one job
# that echoes a line naming the delivery; then, through the API, that every delivery became
# exactly one trigger with one successful run whose log has its line, and the latency from
# each webhook to its run's first step (store timestamps).
#
#   bench/webhook_load.sh [--rate 200] [--duration 30] [--runs N] [--build DIR] [--work DIR]
#                         [--json FILE]
#
# --runs: serve.max_concurrent_runs (default: the number of CPUs); --build: where kiln and
# bench/webhook_load are (default: build/); --work: keep everything there (default: a temporary
# directory, removed afterwards). Exit 0 when nothing was lost. tests/integration/
# serve_load_test.sh runs a short version (50/s for 3 s).
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rate=200 duration=30 runs="$(nproc)" build="$src/build" work="" json=""
while (($#)); do
  case "$1" in
    --rate) rate="$2" ;;
    --duration) duration="$2" ;;
    --runs) runs="$2" ;;
    --build) build="$2" ;;
    --work) work="$2" ;;
    --json) json="$2" ;;
    *) echo "webhook_load.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
kiln="$build/kiln"
load="$build/bench/webhook_load"
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
serve_pid=""
cleanup() {
  if [[ -n "$serve_pid" ]] && kill -0 "$serve_pid" 2>/dev/null; then kill -9 "$serve_pid" || true; fi
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
cat >"$work/kiln.yml" <<YML
serve:
  listen: 127.0.0.1:0
  store: state/kiln.db
  work_dir: serve-work
  api_tokens: [$token]
  max_concurrent_runs: $runs
  shutdown_grace: 1m
  repositories:
    acme/load:
      clone_url: $bare
      webhook_secret: $secret
YML
"$kiln" serve --config "$work/kiln.yml" --port-file "$work/port" >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
for _ in $(seq 600); do [[ -s "$work/port" ]] && break; sleep 0.1; done
[[ -s "$work/port" ]] || { cat "$work/serve.err" >&2; echo "webhook_load.sh: kiln serve did not start" >&2; exit 3; }
base="http://127.0.0.1:$(cat "$work/port")"
echo "webhook_load.sh: $rate/s for ${duration}s to $base (max_concurrent_runs: $runs; work: $work)" >&2

rc=0
"$load" --url "$base" --secret "$secret" --repository acme/load --sha "$sha" --rate "$rate" \
  --duration "$duration" --out "$work/deliveries.jsonl" || rc=$?
start=$SECONDS
python3 "$src/bench/webhook_load_check.py" --url "$base" --token "$token" \
  --deliveries "$work/deliveries.jsonl" ${json:+--json "$json"} || rc=$?
echo "webhook_load.sh: every trigger settled $((SECONDS - start)) s after the last delivery" >&2
curl -sS "$base/metrics" | grep -E '^kiln_serve_(triggers|webhook_deliveries_total)\{' | grep -v ' 0$' >&2 || true

kill -TERM "$serve_pid"
wait "$serve_pid" || rc=$?
serve_pid=""
# What the server logged beyond its routine lines: SQLite busy errors, failed triggers.
problems="$(grep -ciE 'error|busy|locked|warn' "$work/serve.err" || true)"
echo "webhook_load.sh: $problems warning/error line(s) in the server's log ($work/serve.err)" >&2
grep -iE 'error|busy|locked|warn' "$work/serve.err" | head -5 >&2 || true
exit "$rc"
