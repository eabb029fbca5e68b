"""Make docs/report-forecast.png, the picture of a forecast report in docs/forecast.md, from a real trace.

Runs ``nodecast forecast`` on a real nsys trace from ../shared/data/traces
with ``--html``, opens the page in Debian's Chromium (headless, offline, as
tests/report do), and stacks three parts of it into one PNG: the answer,
the measured and forecast timelines, and the critical-path breakdown.
Palette-quantized to keep the file small.

    python docs/make_screenshot.py [--trace PATH] [--to MACHINE] [--out docs/report-forecast.png]
"""

from __future__ import annotations

import argparse
import io
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "data" / "traces" / "nsys_omp-offload-heat-8000_t4_data-region.sqlite"
PARTS = ("#answer", "#timeline", "#critical-path")


def main() -> None:
    from PIL import Image
    from playwright.sync_api import sync_playwright

    from nodecast.cli import main as nodecast

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--to", default="h100-pcie-server")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "report-forecast.png")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "forecast.html"
        if nodecast(["forecast", str(args.trace), "--to", args.to, "--html", str(html)]) != 0:
            raise SystemExit("nodecast forecast failed")
        with sync_playwright() as p:
            ctx = p.chromium.launch_persistent_context(str(Path(tmp) / "profile"), executable_path="/usr/bin/chromium",
                                                       headless=True, offline=True, args=["--no-sandbox", "--disable-gpu"],
                                                       viewport={"width": 1280, "height": 900})
            page = ctx.new_page()
            page.goto(html.as_uri())
            page.wait_for_function("() => window.Bokeh && Bokeh.documents.length && Bokeh.documents[0].is_idle "
                                   "&& Object.values(window.ncTimelines || {}).every(t => (t.draws || 0) >= 1)")
            page.wait_for_timeout(500)
            shots = [Image.open(io.BytesIO(page.locator(sel).screenshot())).convert("RGB") for sel in PARTS]
            ctx.close()
    width = max(s.width for s in shots)
    out = Image.new("RGB", (width, sum(s.height for s in shots)), "white")
    y = 0
    for s in shots:
        out.paste(s, (0, y))
        y += s.height
    out.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(args.out, optimize=True)
    print(f"wrote {args.out}: {out.width} x {out.height} px, {args.out.stat().st_size:,} B")


if __name__ == "__main__":
    main()
