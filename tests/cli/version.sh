#!/usr/bin/env bash
# penumbra's version and the commit it was built from: `penumbra --version` prints them and the
# JSON reports (run and what-if) carry the same; in a git checkout the commit is `git describe
# --always --dirty`'s, and cmake/version.cmake writes "unknown" for a tree without .git (a source
# archive). A build with MPI (-DPN_MPI=ON) says so after the commit. The lines after the first list
# the hardware profiles with their calibration dates.
set -euo pipefail
bin=$1 src=$2
cd "$src"
v=$("$bin" --version | head -n 1)
re='^penumbra ([0-9]+\.[0-9]+\.[0-9]+) \(([^)]+)\)( with MPI)?$'
[[ "$v" =~ $re ]] || { echo "FAIL: --version prints \"$v\""; exit 1; }
# then the shipped profiles and the day each was calibrated, as the profile files say
for p in hwprofiles/*.json; do
  name=$(basename "$p" .json) day=$(sed -n 's/.*"calibrated":[[:space:]]*"\([0-9-]*\)".*/\1/p' "$p")
  "$bin" --version | grep -qE "^  $name +calibrated $day\$" || { echo "FAIL: --version should list $name calibrated $day"; exit 1; }
done
version=${BASH_REMATCH[1]} commit=${BASH_REMATCH[2]}
grep -q "^project(penumbra VERSION $version " CMakeLists.txt || { echo "FAIL: $v is not CMakeLists.txt's version"; exit 1; }
want="  \"penumbra\": {
    \"version\": \"$version\",
    \"commit\": \"$commit\"
  },"
for what_if in "" --what-if; do
  json=$("$bin" run scenarios/llama3-8b-h100-8gpu.json $what_if --format json)
  case "$json" in *"$want"*) ;; *) echo "FAIL: run $what_if --format json should name the build of $v"; exit 1 ;; esac
done
if [ -e .git ] && command -v git >/dev/null; then
  # a commit of this repository (not necessarily HEAD: the tree may have moved since the build)
  c=${commit%-dirty}; c=${c##*-g}
  git rev-parse -q --verify "$c^{commit}" >/dev/null || { echo "FAIL: built from $commit, not a commit of this repository"; exit 1; }
fi
if command -v cmake >/dev/null; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  cmake -DPN_SOURCE_DIR="$tmp" -DPN_VERSION="$version" -DPN_OUT="$tmp/pn_version.h" \
    -DGIT_EXECUTABLE="$(command -v git || echo git)" -P cmake/version.cmake
  grep -qx '#define PN_GIT_COMMIT "unknown"' "$tmp/pn_version.h" ||
    { echo "FAIL: a tree without .git should build as \"unknown\":"; cat "$tmp/pn_version.h"; exit 1; }
fi
echo "version: $v"
