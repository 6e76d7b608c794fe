#!/usr/bin/env bash
# penumbra plan's index.html as a person sees it: rendered by headless Chromium (no network),
# every figure loaded with a non-zero size (the page's script writes each image's natural size
# into its data-size attribute, which --dump-dom shows), and a screenshot taken. Skipped (77)
# without chromium. PN_PLAN_SCREENSHOT=FILE keeps the screenshot.
set -euo pipefail
bin=$1 src=$2
cd "$src"
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: chromium not found (Debian's chromium renders the report)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" plan --model llama3-8b --tokens 1e10 --gpus 8:8 --seq-length 1024 --global-batch-tokens 64K:64K -j 2 \
  --out "$tmp/r" >/dev/null
flags=(--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$tmp/profile"
  --virtual-time-budget=5000 --proxy-server=127.0.0.1:9)
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$tmp/r/index.html" >"$tmp/dom.html" 2>/dev/null
timeout 120 "$browser" "${flags[@]}" --window-size=1280,4000 --screenshot="$tmp/shot.png" \
  "file://$tmp/r/index.html" >/dev/null 2>&1
python3 - "$tmp/dom.html" "$tmp/shot.png" <<'PY'
import re, sys
dom = open(sys.argv[1]).read()
imgs = re.findall(r'<img[^>]*>', dom)
assert len(imgs) == 6, f"expected 6 figures, found {len(imgs)}"
for img in imgs:
    src = re.search(r'src="([^"]+)"', img).group(1)
    size = re.search(r'data-size="(\d+)x(\d+)"', img)
    assert size, f"{src}: no size written (the page's script did not run)"
    w, h = int(size.group(1)), int(size.group(2))
    assert w > 0 and h > 0, f"{src}: not loaded ({w}x{h})"
    print(f"{src}: {w}x{h}")
png = open(sys.argv[2], "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000, "screenshot missing or blank"
PY
if [ -n "${PN_PLAN_SCREENSHOT:-}" ]; then cp "$tmp/shot.png" "$PN_PLAN_SCREENSHOT"; fi
echo "plan_chromium: ok"
