"""The report in a real browser: headless Chromium takes a screenshot of the page, and the charts are really
there (many colours where the charts are); the pages reference nothing on a network."""
from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from process_group import run_group

pytestmark = [pytest.mark.spark, pytest.mark.browser]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
WIDTH, HEIGHT = 1400, 2600
NETWORK_REF = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:|//|ftp:|ws:)|url\(\s*["']?\s*(?:https?:|//)""",
                         re.IGNORECASE)


def screenshot(page: Path, out: Path) -> Image.Image:
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed (setup.sh installs it)")
    with tempfile.TemporaryDirectory(prefix="rmq-chaos-chromium-") as profile:
        proc = run_group([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                          "--no-first-run", "--disable-background-networking", "--disable-component-update",
                          "--disable-sync", f"--user-data-dir={profile}", f"--screenshot={out}",
                          f"--window-size={WIDTH},{HEIGHT}", page.resolve().as_uri()], timeout=120)
    assert proc.returncode == 0 and out.exists(), proc.stderr[-2000:]
    return Image.open(out).convert("RGB")


def colours(img: Image.Image, box: tuple[int, int, int, int]) -> int:
    return len(img.crop(box).getcolors(maxcolors=1 << 20) or [])


def chart_boxes(html: str) -> int:
    return html.count('<img class="chart"')


def test_run_page_shows_its_charts(analysed, tmp_path):
    page = analysed.paths["ro-run"] / "report" / "index.html"
    html = page.read_text()
    assert chart_boxes(html) >= 5
    assert all(src.startswith("data:image/png;base64,") for src in re.findall(r'<img class="chart"[^>]*src="([^"]+)"',
                                                                              html))
    img = screenshot(page, tmp_path / "run.png")
    assert img.size == (WIDTH, HEIGHT)
    top = colours(img, (0, 0, WIDTH, 300))        # title and the start of the expectation table
    charts = colours(img, (0, 1000, WIDTH, 2600))  # below the expectations: the time-series charts
    assert charts > 300, f"only {charts} colours where the charts should be"
    assert charts > top
    # the fault window is shaded: light red pixels (alpha-blended #d62728 on white) exist in the chart area
    px = np.asarray(img.crop((0, 1000, WIDTH, 2600))).astype(int)
    r, g, b = px[..., 0], px[..., 1], px[..., 2]
    shaded = int(((r > 240) & (g > 200) & (g < 235) & (b > 200) & (b < 235)).sum())
    assert shaded > 5000


def test_compare_page_shows_its_charts(analysed, tmp_path):
    page = analysed.job.compare_dir / "index.html"
    img = screenshot(page, tmp_path / "compare.png")
    assert colours(img, (0, 500, WIDTH, 1600)) > 100


def test_pages_reference_no_network(analysed):
    pages = [analysed.paths[r] / "report" / "index.html" for r in analysed.paths] + [
        analysed.job.compare_dir / "index.html"]
    for page in pages:
        html = page.read_text()
        assert not NETWORK_REF.search(html), page
        assert "<script" not in html and "<link" not in html and "@import" not in html
