#!/usr/bin/env bash
# The memory of `kiln serve` under oversized unauthenticated uploads (issue 26; results in
# docs/performance.md): N concurrent chunked POSTs of SIZE MiB each to /webhooks/github without
# a signature, from curl reading /dev/zero (`curl -T -`: chunked, streamed). Samples the server's
# RSS every 20 ms while they run; prints the answers, the peak RSS sampled and the kernel's
# high-water mark (VmHWM), and the time until every upload was answered.
#
#   bench/serve_upload_memory.sh [--uploads 10] [--mib 1024] [--build DIR]
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
uploads=10 mib=1024 build="$src/build"
while (($#)); do
  case "$1" in
    --uploads) uploads="$2" ;;
    --mib) mib="$2" ;;
    --build) build="$2" ;;
    *) echo "serve_upload_memory.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
kiln="$build/kiln"
[[ -x "$kiln" ]] || { echo "serve_upload_memory.sh: $kiln is missing" >&2; exit 2; }
work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-upload.XXXXXX")"
serve_pid=""
cleanup() {
  if [[ -n "$serve_pid" ]] && kill -0 "$serve_pid" 2>/dev/null; then
    kill -TERM "$serve_pid" || true
    wait "$serve_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
export KILN_HOST_STORE="$work/host.db"
cat >"$work/kiln.yml" <<EOF
serve:
  listen: 127.0.0.1:0
  store: kiln.db
  work_dir: work
  repositories:
    acme/widgets:
      clone_url: $work/none.git
      webhook_secret: bench-secret
EOF
"$kiln" serve --config "$work/kiln.yml" --port-file "$work/port" >"$work/serve.out" 2>&1 &
serve_pid=$!
for _ in $(seq 100); do [[ -s "$work/port" ]] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$work/port")/webhooks/github"
status_kb() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$serve_pid/status"; }
idle_kb="$(status_kb VmRSS)"

start="$(date +%s.%N)"
pids=()
for i in $(seq "$uploads"); do
  (head -c "$((mib * 1024 * 1024))" /dev/zero |
    curl -sS -o /dev/null -w '%{http_code}\n' -X POST -T - -H 'X-GitHub-Event: push' \
      -H "X-GitHub-Delivery: upload-$i" -H 'Content-Type: application/json' "$url" \
      >"$work/answer.$i" 2>/dev/null || true) &
  pids+=($!)
done
peak_kb="$idle_kb"
while true; do
  running=0
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && running=1; done
  rss="$(status_kb VmRSS)"
  ((rss > peak_kb)) && peak_kb="$rss"
  ((running)) || break
  sleep 0.02
done
end="$(date +%s.%N)"
answers="$(cat "$work"/answer.* | sort | uniq -c | awk '{printf "%s x %s, ", $1, $2}')"
echo "uploads: $uploads x $mib MiB chunked, unsigned"
echo "answers: ${answers%, }"
echo "server RSS idle: $((idle_kb / 1024)) MiB; peak sampled: $((peak_kb / 1024)) MiB;" \
  "VmHWM: $(($(status_kb VmHWM) / 1024)) MiB"
echo "all answered after: $(echo "$end - $start" | bc) s"
