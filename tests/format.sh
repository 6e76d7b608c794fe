#!/usr/bin/env bash
# Formatting, checked: every C, header and CUDA file of the tree is as clang-format 14 (Debian 12's)
# writes it with the repository's .clang-format. Skipped (exit 77) where clang-format 14 is absent:
# another major version formats differently. Fix a failure with: clang-format-14 -i FILE...
set -euo pipefail
src=${1:-$(dirname "$0")/..}
cd "$src"
cf=$(command -v clang-format-14 || true)
if [ -z "$cf" ] && command -v clang-format >/dev/null && clang-format --version | grep -q 'version 14\.'; then
  cf=$(command -v clang-format)
fi
[ -n "$cf" ] || { echo "clang-format 14 not found: format check skipped (Debian 12: apt-get install clang-format)"; exit 77; }
if [ -d .git ] || [ -f .git ]; then
  mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu')
else
  mapfile -t files < <(find src tests bench microbench -name '*.c' -o -name '*.h' -o -name '*.cu' | sort)
fi
bad=()
for f in "${files[@]}"; do
  "$cf" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ "${#bad[@]}" -gt 0 ]; then
  printf 'FAIL: not as .clang-format writes it: %s\n' "${bad[@]}"
  echo "fix: clang-format-14 -i ${bad[*]}"
  exit 1
fi
echo "format: ${#files[@]} files as .clang-format writes them"
