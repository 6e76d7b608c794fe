#!/usr/bin/env bash
# valgrind memcheck over every golden scenario (tests/golden/*.args): no invalid access, no use
# of uninitialised memory, no leak (definite, indirect or possible; GLib's one-time allocations
# are "still reachable" and not counted). Exit 77 (CTest: skipped) when valgrind is absent.
set -uo pipefail
bin=$1 src=$2
if ! command -v valgrind >/dev/null 2>&1; then
  echo "valgrind not installed: skipped (Debian: apt-get install valgrind)"
  exit 77
fi
cd "$src" || exit 1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
for args in tests/golden/*.args; do
  name=$(basename "${args%.args}")
  mapfile -t argv <"$args"
  # a report file as well, so the atomic-write path runs under memcheck too
  if valgrind -q --error-exitcode=1 --leak-check=full --show-leak-kinds=definite,indirect,possible \
      --errors-for-leak-kinds=definite,indirect,possible --log-file="$tmp/$name.vg" \
      "$bin" run "${argv[@]}" --format json --output "$tmp/$name.json"; then
    # the build's version and commit compare as "(build)", as in tests/cli/golden.sh
    sed -E '/^  "penumbra": \{$/,/^  \},$/ s/^(    "(version|commit)": )".*"(,?)$/\1"(build)"\3/' \
      "$tmp/$name.json" >"$tmp/$name.cmp.json"
    if ! cmp -s "$tmp/$name.cmp.json" "tests/golden/$name.json"; then
      echo "FAIL: $name: output under valgrind differs from its golden output"; fail=1
    fi
  else
    echo "FAIL: $name: valgrind reported errors:"; cat "$tmp/$name.vg"; fail=1
  fi
  n=$((n + 1))
done
[ "$fail" = 0 ] && echo "valgrind: $n golden scenarios clean (memcheck, full leak check)"
exit $fail
