#!/usr/bin/env bash
# Golden outputs: tests/golden/NAME.args holds the arguments of `penumbra run` (one per line,
# relative paths from the source dir); tests/golden/NAME.json is the expected JSON report.
# Regenerate after an intended model change with: PN_GOLDEN_UPDATE=1 ctest -R cli_golden
# penumbra's version and commit (the report's "penumbra" object) change with every commit and
# are compared as "(build)".
set -euo pipefail
bin=$1 src=$2
cd "$src"
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
fail=0 n=0
for args in tests/golden/*.args; do
  name=${args%.args}
  mapfile -t argv <"$args"
  "$bin" run "${argv[@]}" --format json |
    sed -E '/^  "penumbra": \{$/,/^  \},$/ s/^(    "(version|commit)": )".*"(,?)$/\1"(build)"\3/' >"$tmp"
  if [ "${PN_GOLDEN_UPDATE:-0}" = 1 ]; then cp "$tmp" "$name.json"; fi
  if ! cmp -s "$tmp" "$name.json"; then
    echo "FAIL: $name differs from its golden output:"; diff "$name.json" "$tmp" | head -20; fail=1
  fi
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "no golden cases"; exit 1; }
[ "$fail" = 0 ] && echo "golden: $n cases match"
exit $fail
