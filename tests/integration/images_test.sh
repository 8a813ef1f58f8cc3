#!/usr/bin/env bash
# kiln images [--pull] on real podman: the images a repository's workflows name (job
# containers, services, docker:// steps, matrix expressions), each with what its tag resolves to
# on this host; images only a run can name are reported with FILE:LINE:COL; --pull fetches them
# from a throwaway local registry (docker-registry, Debian's distribution/registry) and says
# which tag moved. Bad input exits 2.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_begin images

command -v podman >/dev/null || itest_die "podman is not installed (./scripts/deps installs it)"
command -v docker-registry >/dev/null ||
  itest_die "docker-registry is not installed (./scripts/deps installs it)"
export KILN_CONTAINER_ENGINE=podman
bash "$KILN_SOURCE_DIR/tests/containers/build_test_image.sh" podman >/dev/null ||
  itest_die "cannot build the test image"
image=localhost/kiln-test:1

# A registry on a free port, served over plain HTTP, which podman is told to accept.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
registry="localhost:$port"
mkdir -p "$ITEST_DIR/registry"
cat >"$ITEST_DIR/registry.yml" <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: $ITEST_DIR/registry
http:
  addr: 127.0.0.1:$port
EOF
docker-registry serve "$ITEST_DIR/registry.yml" >"$ITEST_DIR/registry.log" 2>&1 &
itest_track_pid $!
cat >"$ITEST_DIR/registries.conf" <<EOF
[[registry]]
location = "$registry"
insecure = true
EOF
export CONTAINERS_REGISTRIES_CONF="$ITEST_DIR/registries.conf"
registry_up() { python3 -c "import urllib.request; urllib.request.urlopen('http://$registry/v2/')" 2>/dev/null; }
wait_until 20 registry_up || itest_die "the registry did not start: $(cat "$ITEST_DIR/registry.log")"
moving="$registry/kiln/moving:1"
absent="$registry/kiln/absent:1"
remove_test_images() { podman rmi -f "$moving" "$registry/kiln/other:1" >/dev/null 2>&1 || true; }
trap 'remove_test_images; itest_on_exit' EXIT
podman tag "$image" "$moving"
podman push -q "$moving" >/dev/null || itest_die "cannot push to the test registry"
podman rmi "$moving" >/dev/null

repo="$ITEST_DIR/repo"
make_repo "$repo"
write_workflow "$repo" ci.yml <<EOF
on: push
jobs:
  build:
    runs-on: linux
    container: $image
    services:
      cache: {image: "$moving"}
    strategy:
      matrix:
        name: [moving, absent]
    steps:
      - uses: docker://$registry/kiln/\${{ matrix.name }}:1
  release:
    runs-on: linux
    container: \${{ inputs.image }}
    steps:
      - run: echo
EOF
commit_all "$repo" "images"

# ---- listing --------------------------------------------------------------------------------
kiln images -C "$repo"
expect_rc 0 "kiln images lists the images"
expect_match "$OUT" "^$image +localhost/kiln-test@sha256:[0-9a-f]{64} +\.github/workflows/ci\.yml:5:16 job build \(container\)" \
  "a present image is listed with its digest and where it is named"
expect_match "$OUT" "^$moving +not present +\.github/workflows/ci\.yml:7:22 job build \(service cache\) and 1 more" \
  "an image named twice (a service, a matrix docker:// step) is listed once, not present yet"
expect_match "$OUT" "^$absent +not present .*docker:// step 1" "each matrix combination's image is listed"
expect_contains "$ERR" ".github/workflows/ci.yml:15:16: warning: job release (container): image '\${{ inputs.image }}' is not listed: it reads inputs" \
  "an image only a run can name is reported where it is written"
expect_contains "$OUT" "3 images, 1 on this host, 1 not resolvable before a run" "the summary counts them"

kiln images -C "$repo" --json
expect_rc 0 "kiln images --json"
expect_json '[i["image"] for i in d["images"]]' "[\"$image\", \"$moving\", \"$absent\"]" "--json lists the images in file order"
expect_json 'd["images"][0]["id"].startswith("sha256:") and d["images"][0]["present"]' true "--json gives the image id"
expect_json '[(u["line"], u["role"]) for u in d["images"][1]["uses"]]' '[[7, "service cache"], [12, "docker:// step 1"]]' \
  "--json gives every use"
expect_json '[d["unresolved"][0]["line"], d["unresolved"][0]["column"], d["unresolved"][0]["text"]]' \
  '[15, 16, "${{ inputs.image }}"]' "--json names the unresolved image's place"

# ---- --pull ---------------------------------------------------------------------------------
kiln images -C "$repo" --pull
expect_rc 1 "a pull that fails (an image the registry does not have) exits 1"
expect_match "$OUT" "^$moving +$registry/kiln/moving@sha256:[0-9a-f]{64} \(pulled; unchanged\)" "--pull fetches an image"
expect_match "$OUT" "^$absent +pull failed: .*$absent" "the failed pull is shown with the image"
digest_before="$(podman image inspect --format '{{.Id}}' "$moving")"

# The tag moves in the registry: another image pushed under the same name.
mkdir -p "$ITEST_DIR/other"
echo "another image" >"$ITEST_DIR/other/marker"
tar -C "$ITEST_DIR/other" -c . | podman import - "$registry/kiln/other:1" >/dev/null
podman push -q "$registry/kiln/other:1" "docker://$moving" >/dev/null 2>&1 || itest_die "cannot move the tag"
kiln images -C "$repo" -W "$repo/.github/workflows/ci.yml" --pull --json
expect_json "[i for i in d['images'] if i['image'] == '$moving'][0]['pulled']" true "the moved tag is pulled again"
expect_json "[i for i in d['images'] if i['image'] == '$moving'][0]['moved_from'] is not None" true \
  "--pull says the tag moved"
digest_after="$(podman image inspect --format '{{.Id}}' "$moving")"
if [[ -n "$digest_after" && "$digest_after" != "$digest_before" ]]; then
  pass "the host now has the image the tag names"
else
  fail "the moved tag still names $digest_before on this host"
fi
kiln images -C "$repo" --pull
expect_match "$OUT" "^$moving +.*\(pulled; unchanged\)" "a second pull finds the tag where it was"

# ---- kiln run: a job container pulled on the way, services beside it -------------------------
# The job container starts with --pull=never while its image is inspected; missing, the image
# is pulled (--pull missing) and the container started again.
fresh="$registry/kiln/fresh:1"
podman tag "$image" "$fresh"
podman push -q "$fresh" >/dev/null 2>&1 || itest_die "cannot push $fresh"
podman rmi "$fresh" >/dev/null
remove_test_images() { podman rmi -f "$moving" "$fresh" "$registry/kiln/other:1" >/dev/null 2>&1 || true; }
run_repo="$ITEST_DIR/run"
make_repo "$run_repo"
write_workflow "$run_repo" ci.yml <<EOF
on: push
jobs:
  pulljob:
    runs-on: linux
    container: $fresh
    services:
      a: {image: "$image"}
      b: {image: "$image"}
    steps:
      - run: echo "inside \$(tr '\000' ' ' < /proc/1/cmdline)"
EOF
commit_all "$run_repo" "a job whose image is pulled"
kiln run -C "$run_repo" --pull missing
expect_rc 0 "a job whose container image is not on the host yet runs (--pull missing)"
expect_match "$OUT$ERR" "Image $fresh: sha256:[0-9a-f]{64} $registry/kiln/fresh@sha256:" "its image is pulled and recorded"
expect_contains "$OUT$ERR" "inside /run/podman-init -- /.kiln/step-helper serve" \
  "the step ran in the job container, served by the step helper under --init"
for phase in "network" "service a" "service b" "image inspect \(in parallel\)" \
  "run \(create\+start\+helper ready\)"; do
  expect_match "$OUT$ERR" "Containers started in [0-9]+ ms: .*$phase [0-9]+ ms" "the start's phases are logged: $phase"
done
expect_match "$OUT$ERR" "Containers removed in [0-9]+ ms" "the removal is timed"
expect_not_contains "$OUT$ERR" "the job container ended with" "the job container ended cleanly when its helper was told to"
left="$(podman ps -a --format '{{.Names}}' | grep -- '-pulljob-' || true)"
if [[ -z "$left" ]]; then pass "no container of the job is left"; else fail "containers left: $left"; fi
kiln run -C "$run_repo" --pull never
expect_rc 0 "the pulled image serves the next run under --pull never"

# ---- bad input ------------------------------------------------------------------------------
kiln images -C "$ITEST_DIR/nowhere"
expect_rc 2 "a missing directory is bad input"
bad="$ITEST_DIR/bad"
make_repo "$bad"
write_workflow "$bad" ci.yml <<EOF
on: push
jobs:
  a:
    runs-on: linux
    container: {image: x:1, imagee: y}
    steps:
      - run: echo
EOF
kiln images -C "$bad"
expect_rc 2 "an invalid workflow is bad input"
expect_match "$ERR" "ci\.yml:5:29: error: .*imagee" "the invalid key is located"
kiln images -C "$repo" --container-engine nothing
expect_rc 2 "an unknown engine is bad input"

itest_end
