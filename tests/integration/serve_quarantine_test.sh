#!/usr/bin/env bash
# Quarantined tests over kiln serve's API (docs/serve.md, docs/failures.md "Quarantined tests"):
# GET /api/tests/quarantine lists the tests in quarantine now of the served repositories, with
# repository, test, reason, manual, since and expires_at; not one that was released, nor one of
# a repository the server does not serve (unless ?repository= names it); kiln tests quarantine
# and release on the server's store show at once.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
itest_begin serve_quarantine

repo="$ITEST_DIR/work"
bare="$ITEST_DIR/forge/acme/widgets.git"
make_repo "$repo"
mkdir -p "$(dirname "$bare")" "$ITEST_DIR/state"
git clone -q --bare "$repo" "$bare"
store="$ITEST_DIR/state/kiln.db"

quarantine() { kiln tests quarantine "$@" --store "$store"; }
quarantine unit::test_io --repository acme/widgets --for 7d --reason "flaky on the GPU runner"
expect_rc 0 "kiln tests quarantine on the server's store"
quarantine unit::test_gone --repository acme/widgets
kiln tests release unit::test_gone --repository acme/widgets --store "$store"
expect_rc 0 "kiln tests release"
quarantine unit::test_elsewhere --repository other/repo --reason "not served here"

serve_start acme/widgets "$bare" secret-$RANDOM token-$RANDOM
http GET /api/tests/quarantine
expect_status 200 "GET /api/tests/quarantine answers without a token, as the runs do"
expect_json '[(q["repository"], q["test"], q["reason"], q["manual"]) for q in d["quarantined"]]' \
  '[["acme/widgets", "unit::test_io", "flaky on the GPU runner", true]]' \
  "it lists the served repository's test in quarantine, not the released one nor another repository's"
expect_json 'd["quarantined"][0]["expires_at"] - d["quarantined"][0]["since"]' $((7 * 86400000)) \
  "since and expires_at are the quarantine's times in ms (--for 7d)"
http GET "/api/tests/quarantine?repository=other%2Frepo"
expect_json '[q["test"] for q in d["quarantined"]]' '["unit::test_elsewhere"]' \
  "?repository= names the repository"

# Changes by the CLI on the server's store show at once.
kiln tests release unit::test_io --repository acme/widgets --store "$store"
http GET /api/tests/quarantine
expect_json 'd["quarantined"]' "[]" "a released test is no longer listed"
serve_stop
itest_end
