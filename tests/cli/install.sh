#!/usr/bin/env bash
# cmake --install into a temporary prefix: the binary, the data (models, profiles, scenarios, the
# validation records, the gnuplot scripts), the man page and the bash completion land there, and the installed binary
# reads its data from the prefix's share/penumbra, run from anywhere (also after the prefix is
# moved). The man page is the commands' own --help; the completion asks the binary.
set -euo pipefail
bin=$1 src=$2
command -v cmake >/dev/null || exit 77
build=$(dirname "$bin")
[ -f "$build/cmake_install.cmake" ] || exit 77
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null || fail "cmake --install"
for f in bin/penumbra share/man/man1/penumbra.1 share/bash-completion/completions/penumbra \
  share/penumbra/models/llama3-8b.json share/penumbra/hwprofiles/h100-sxm.json \
  share/penumbra/scenarios/llama3-8b-h100-8gpu.json share/penumbra/tests/data/validation/published-visible.json; do
  [ -e "$tmp/prefix/$f" ] || fail "not installed: $f"
done
mv "$tmp/prefix" "$tmp/moved" # relocatable: found beside the binary, not at the configured prefix
pn=$tmp/moved/bin/penumbra
cd "$tmp"
[ "$("$pn" --data-dir)" = "$tmp/moved/share/penumbra" ] || fail "data dir: $("$pn" --data-dir)"
"$pn" --version | grep -q "^hardware profiles ($tmp/moved/share/penumbra/hwprofiles):" || fail "--version: $("$pn" --version)"
# a scenario far from any models/ folder: its model and profile names resolve in the installed data
mkdir -p elsewhere && cp "$tmp/moved/share/penumbra/scenarios/llama3-8b-h100-8gpu.json" elsewhere/s.json
a=$("$pn" run elsewhere/s.json -f json | grep '"iteration_time_s"')
b=$("$bin" run "$src/scenarios/llama3-8b-h100-8gpu.json" -f json | grep '"iteration_time_s"')
[ "$a" = "$b" ] || fail "the installed binary predicts $a, the build $b"
"$pn" validate >/dev/null 2>&1 || fail "validate should find the installed records"
# the gnuplot scripts (run --gantt, regress --plot, plan's figures) are found in the installed data
[ -f "$tmp/moved/share/penumbra/plots/plan.gp" ] || fail "not installed: share/penumbra/plots/plan.gp"
if command -v gnuplot >/dev/null; then
  "$pn" run elsewhere/s.json --gantt g.svg >/dev/null 2>"$tmp/gantt.err" || fail "run --gantt: $(cat "$tmp/gantt.err")"
  [ -s g.svg ] || fail "run --gantt drew nothing"
fi
# the man page: every command, the exit statuses
man=$tmp/moved/share/man/man1/penumbra.1
for c in $("$pn" --list-commands); do grep -q "^\.SS $c\$" "$man" || fail "man page lacks $c"; done
grep -q '^\.SH EXIT STATUS' "$man" && grep -q 'NO_COLOR' "$man" || fail "man page lacks exit status or NO_COLOR"
# the completion: commands, options, profile names
comp() { bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _penumbra; printf "%s\n" "${COMPREPLY[@]}"' \
  _ "$tmp/moved/share/bash-completion/completions/penumbra" "$pn" "$@"; }
comp co | grep -qx compare || fail "completion of commands: $(comp co)"
comp run --wh | grep -qx -- --what-if || fail "completion of options: $(comp run --wh)"
comp calibrate --profile h1 | grep -qx h100-sxm || fail "completion of profiles: $(comp calibrate --profile h1)"
echo "install: binary, data, man page and completion; data found from $tmp/moved"
