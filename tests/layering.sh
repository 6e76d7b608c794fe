#!/usr/bin/env bash
# Layering, enforced: every `#include "<layer>/..."` in src/<layer>/ must name the layer itself or one
# that the matrix in src/README.md (between the layering:begin/end markers) allows; cJSON is
# included by io/ alone. Every src/ folder must have a row, and the CMake link lines must not
# link a layer to one the matrix forbids. Prints each violation as FILE:LINE: ... and fails.
set -euo pipefail
src=${1:-$(dirname "$0")/..}
cd "$src"
declare -A allowed
while IFS='|' read -r _ layer deps _; do
  layer=$(echo "$layer" | tr -d ' `'); [ -n "$layer" ] || continue
  allowed[$layer]=" $layer $deps "
done < <(sed -n '/<!-- layering:begin -->/,/<!-- layering:end -->/p' src/README.md | grep '^| `')
[ "${#allowed[@]}" -gt 0 ] || { echo "FAIL: no layering matrix in src/README.md"; exit 1; }
bad=0 n=0
for dir in src/*/; do
  layer=$(basename "$dir")
  [ -n "${allowed[$layer]:-}" ] || { echo "FAIL: src/$layer/ has no row in the matrix of src/README.md"; bad=1; continue; }
  for f in "$dir"*.[ch]; do
    [ -e "$f" ] || continue
    while IFS=: read -r line inc; do
      n=$((n + 1))
      case "${allowed[$layer]}" in *" $inc "*) ;; *)
        echo "$f:$line: includes \"$inc/...\": $layer may include only:${allowed[$layer]}"; bad=1 ;;
      esac
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]*/' "$f" | sed 's/^\([0-9]*\):.*include[[:space:]]*"\([a-z_]*\)\/.*/\1:\2/')
    if grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"\.\./' "$f"; then
      echo "$f: includes by a relative path: write \"<layer>/file.h\""; bad=1
    fi
    if [ "$layer" != io ] && grep -n 'include[[:space:]]*<cjson/' "$f" >/dev/null; then
      echo "$f:$(grep -n 'include[[:space:]]*<cjson/' "$f" | head -1 | cut -d: -f1): includes cJSON: only io/ reads or writes JSON"; bad=1
    fi
  done
done
# the link lines: pn_layer(NAME deps...) in CMakeLists.txt
while read -r layer deps; do
  for d in $deps; do
    case "$d" in pn_*) d=${d#pn_}; case "${allowed[$layer]:-}" in *" $d "*) ;; *)
      echo "CMakeLists.txt: pn_layer($layer) links pn_$d: $layer may use only:${allowed[$layer]:-}"; bad=1 ;; esac ;;
    esac
  done
done < <(grep -o '^pn_layer([^)]*)' CMakeLists.txt | sed 's/pn_layer(//;s/)//')
[ "$bad" = 0 ] || exit 1
echo "layering: $n includes in $(ls -d src/*/ | wc -l) layers follow src/README.md"
