#!/usr/bin/env bash
# kiln serve with serve.tls: HTTPS with a self-signed certificate made here by the openssl
# CLI; curl trusting that certificate gets answers, plain HTTP to the same port gets none; a
# missing certificate file, a file that is no certificate and a key of another certificate are
# configuration errors at FILE:LINE:COL with exit code 2.
# Checks call small functions indirectly (wait_until, check).
# shellcheck disable=SC2317
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin serve_tls

secret="webhook-secret-$RANDOM"
token="api-token-$RANDOM"
repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
make_repo "$repo"
write_workflow "$repo" ci.yml <<'EOF2'
name: CI
on: push
jobs:
  build:
    runs-on: linux
    steps:
      - run: echo "HELLO-OVER-TLS"
EOF2
commit_all "$repo" "a workflow"
mkdir -p "$(dirname "$bare")"
git clone -q --bare "$repo" "$bare"
sha="$(git -C "$repo" rev-parse HEAD)"

mkdir -p "$ITEST_DIR/tls"
# A self-signed certificate for 127.0.0.1 (curl checks the address against subjectAltName).
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1" \
  -keyout "$ITEST_DIR/tls/key.pem" -out "$ITEST_DIR/tls/cert.pem" 2>/dev/null ||
  itest_die "openssl could not make a test certificate"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=other" \
  -keyout "$ITEST_DIR/tls/other-key.pem" -out "$ITEST_DIR/tls/other-cert.pem" 2>/dev/null ||
  itest_die "openssl could not make a second certificate"

# write_config CERT KEY: kiln.yml with serve.tls on those files (cert is on line 5, key on 6).
write_config() {
  cat >"$ITEST_DIR/kiln.yml" <<EOF2
serve:
  listen: 127.0.0.1:0
  store: state/kiln.db
  tls:
    cert: $1
    key: $2
  api_tokens: [$token]
  repositories:
    acme/widgets:
      clone_url: $bare
      webhook_secret: $secret
EOF2
}

# ---- configuration errors: FILE:LINE:COL, exit code 2 -------------------------------------
write_config tls/missing.pem tls/key.pem
kiln serve --config "$ITEST_DIR/kiln.yml"
expect_rc 2 "a missing certificate file is a configuration error"
expect_contains "$ERR" "$ITEST_DIR/kiln.yml:5:11: error: serve.tls.cert: cannot read" \
  "the error names the cert key's place in kiln.yml"
write_config tls/key.pem tls/key.pem
kiln serve --config "$ITEST_DIR/kiln.yml"
expect_rc 2 "a file that is no certificate is a configuration error"
expect_contains "$ERR" "kiln.yml:5:11: error: serve.tls.cert:" "it points at serve.tls.cert"
write_config tls/cert.pem tls/nothing-here.pem
kiln serve --config "$ITEST_DIR/kiln.yml"
expect_rc 2 "a missing key file is a configuration error"
expect_contains "$ERR" "kiln.yml:6:10: error: serve.tls.key: cannot read" \
  "the error names the key's place in kiln.yml"
write_config tls/cert.pem tls/other-key.pem
kiln serve --config "$ITEST_DIR/kiln.yml"
expect_rc 2 "a key of another certificate is a configuration error"
expect_contains "$ERR" "kiln.yml:6:10: error: serve.tls.key:" "it points at serve.tls.key"
expect_contains "$ERR" "is not the key of the certificate" "it says the key does not match"

# ---- HTTPS -------------------------------------------------------------------------------
write_config tls/cert.pem tls/key.pem
"$KILN" serve --config "$ITEST_DIR/kiln.yml" --port-file "$ITEST_DIR/port" \
  >"$ITEST_DIR/serve.out" 2>"$ITEST_DIR/serve.err" &
serve_pid=$!
itest_track_pid "$serve_pid"
wait_until 60 test -s "$ITEST_DIR/port" || {
  cat "$ITEST_DIR/serve.err" >&2
  itest_die "kiln serve did not start listening"
}
port="$(cat "$ITEST_DIR/port")"
expect_contains "$(cat "$ITEST_DIR/serve.err" "$ITEST_DIR/serve.out")" \
  "listening on https://127.0.0.1:$port" "the server says it listens on HTTPS"

code="$(curl -sS --cacert "$ITEST_DIR/tls/cert.pem" -o "$ITEST_DIR/last.out" -w '%{http_code}' \
  "https://127.0.0.1:$port/healthz")" || code="curl-failed"
if [[ "$code" == 200 ]]; then pass "GET /healthz over HTTPS with the certificate trusted"
else fail "GET /healthz over HTTPS: $code"; fi
expect_json 'd["status"]' ok "the answer over HTTPS is the health document"

rc=0
curl -sS -o /dev/null "https://127.0.0.1:$port/healthz" 2>"$ITEST_DIR/untrusted.err" || rc=$?
if [[ $rc != 0 ]]; then pass "curl without the certificate refuses the self-signed server"
else fail "curl accepted an untrusted certificate"; fi

rc=0
code="$(curl -sS -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz" \
  2>"$ITEST_DIR/plain.err")" || rc=$?
if [[ $rc != 0 && "$code" != 200 ]]; then
  pass "plain HTTP to the HTTPS port gets no answer (curl exit $rc)"
else
  fail "plain HTTP was answered: rc=$rc code=$code"
fi

# A signed push over HTTPS runs to the end.
cat >"$ITEST_DIR/push.json" <<EOF2
{"ref": "refs/heads/main", "before": "0000000000000000000000000000000000000000",
 "after": "$sha", "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice"}}
EOF2
signature="sha256=$(openssl dgst -sha256 -hmac "$secret" <"$ITEST_DIR/push.json" | sed 's/^.*= //')"
code="$(curl -sS --cacert "$ITEST_DIR/tls/cert.pem" -o "$ITEST_DIR/last.out" -w '%{http_code}' \
  -H "X-GitHub-Event: push" -H "X-GitHub-Delivery: tls-1" -H "X-Hub-Signature-256: $signature" \
  -H 'Content-Type: application/json' --data-binary "@$ITEST_DIR/push.json" \
  "https://127.0.0.1:$port/webhooks/github")" || code="curl-failed"
if [[ "$code" == 202 ]]; then pass "a signed push over HTTPS is accepted"; else fail "push over HTTPS: $code"; fi
trigger_id="$(json_eval - 'd["trigger"]')"
trigger_finished() {
  curl -sS --cacert "$ITEST_DIR/tls/cert.pem" -o "$ITEST_DIR/last.out" \
    "https://127.0.0.1:$port/api/triggers/$trigger_id" &&
    [[ "$(json_eval - 'd["status"]')" =~ ^(finished|failed|cancelled)$ ]]
}
wait_until 300 trigger_finished || itest_die "the trigger did not settle"
expect_json 'd["status"]' finished "the push's trigger finished"

# kiln trigger over HTTPS: it checks the server against --cacert (or $KILN_CA_CERT).
kiln trigger acme/widgets main --server "https://127.0.0.1:$port" --token "$token"
expect_rc 3 "kiln trigger refuses the self-signed server without --cacert"
kiln trigger acme/widgets main --server "https://127.0.0.1:$port" --token "$token" \
  --cacert "$ITEST_DIR/tls/cert.pem"
expect_rc 0 "kiln trigger --cacert reaches the HTTPS server"
expect_json 'd["sha"]' "$sha" "the triggered push is of the branch's commit"
KILN_CA_CERT="$ITEST_DIR/tls/cert.pem" kiln approve 999 --server "https://127.0.0.1:$port" \
  --token "$token"
expect_rc 2 "kiln approve with \$KILN_CA_CERT reaches the server (which knows no trigger 999)"

kill -TERM "$serve_pid"
if wait_exit "$serve_pid" 120 && [[ "$WAIT_RC" == 0 ]]; then pass "SIGTERM stops the HTTPS server"
else fail "the HTTPS server did not stop cleanly"; fi

itest_end
