"""The report page in a headless Chromium at 1400 and 1920 px wide: nothing
runs off the page or out of its section -- every table and command either
fits or scrolls inside its own box.  Skipped, with the reason, where no
Chromium is installed (apt-get install chromium).

VG_SCREENSHOT_DIR=DIR keeps a screenshot of each width there
(page-1400.png, page-1920.png)."""
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import gen_records  # noqa: E402
import report  # noqa: E402

WIDTHS = (1400, 1920)

# Runs in the page once laid out: each table, pre and image whose box or
# content reaches past its section (the body's content box) while its
# parent does not scroll, and a page wider than the window.
MEASURE_JS = """
<script>
(function () {
  var W = document.documentElement.clientWidth;
  var body = document.body.getBoundingClientRect();
  var limit = Math.min(W, body.right);
  var problems = [];
  if (document.documentElement.scrollWidth > W + 1)
    problems.push('page is ' + document.documentElement.scrollWidth + ' px wide in a ' + W + ' px window');
  var els = document.querySelectorAll('table, pre, img, p, code');
  for (var i = 0; i < els.length; i++) {
    var el = els[i], scrolls = false;
    for (var a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      var ox = getComputedStyle(a).overflowX;
      if (ox === 'auto' || ox === 'scroll') { scrolls = a.getBoundingClientRect().right <= limit + 1; break; }
    }
    if (scrolls) continue;
    var r = el.getBoundingClientRect();
    var own = getComputedStyle(el).overflowX;
    var spills = el.scrollWidth > el.clientWidth + 1 && own !== 'auto' && own !== 'scroll'
                 && el.tagName !== 'IMG' && el.tagName !== 'CODE' && el.clientWidth > 0;
    if (r.right > limit + 1 || spills)
      problems.push(el.tagName.toLowerCase() + ' "' + (el.textContent || el.getAttribute('alt') || '')
                    .replace(/\\s+/g, ' ').slice(0, 60) + '" reaches ' + Math.round(Math.max(r.right, r.left + el.scrollWidth))
                    + ' px, its section ends at ' + Math.round(limit));
  }
  var out = document.createElement('pre');
  out.id = 'vg-width-check';
  out.textContent = JSON.stringify({width: W, problems: problems});
  document.body.appendChild(out);
})();
</script>
"""


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium_args(browser, width, profile):
    return [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
            f"--window-size={width},2000"]


def measure(browser, page, width, profile):
    """{'width': W, 'problems': [...]} of page in a window width px wide."""
    proc = subprocess.run(chromium_args(browser, width, profile) + ["--dump-dom", "file://" + page],
                          capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="vg-width-check">(.*?)</pre>', proc.stdout, re.S)
    if not m:
        raise AssertionError(f"chromium gave no measurement (exit {proc.returncode}): {proc.stderr[-800:]}")
    text = m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return json.loads(text)


def screenshot(browser, page, width, profile, png):
    subprocess.run(chromium_args(browser, width, profile)[:-1]
                   + [f"--window-size={width},3200", f"--screenshot={png}", "file://" + page],
                   capture_output=True, timeout=120)


@unittest.skipUnless(find_chromium(), "no chromium on PATH (apt-get install chromium)")
class PageWidth(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="vg-page-width-")
        self.browser = find_chromium()

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_nothing_runs_off_the_page(self):
        # Two shards, a slowdown and a failing golden case: the wide tables,
        # the bisect commands and the golden table with its command all show.
        hist = os.path.join(self.dir, "history")
        out = os.path.join(self.dir, "out")
        gen_records.make_history(hist, commits=3, nsamp=12, shards=2, slow_last=0.1,
                                 fail_last="fp8_moe_small")
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            rc = report.main(["--history", hist, "--out", out])
        self.assertEqual(rc, 1)
        index = os.path.join(out, "index.html")
        with open(index, encoding="utf-8") as f:
            page = f.read()
        self.assertTrue("git bisect run" in page, "no bisect commands on the page")
        measured = os.path.join(out, "measured.html")
        with open(measured, "w", encoding="utf-8") as f:
            f.write(page.replace("</body>", MEASURE_JS + "</body>"))
        keep = os.environ.get("VG_SCREENSHOT_DIR")
        for width in WIDTHS:
            with self.subTest(width=width):
                res = measure(self.browser, measured, width, os.path.join(self.dir, "profile"))
                self.assertEqual(res["problems"], [], f"at {width} px")
                if keep:
                    os.makedirs(keep, exist_ok=True)
                    screenshot(self.browser, index, width, os.path.join(self.dir, "profile"),
                               os.path.join(os.path.abspath(keep), f"page-{width}.png"))
        # What the wide parts are for: the failing case's command and links.
        self.assertTrue("voltgate golden verify --backend cpu --plan" in page, "no reproduce command")
        self.assertTrue(re.search(r"<a href='[^']*fp8_moe_small[^']*\.h5'>fp8_moe_small</a>", page),
                        "the failing golden case does not link to its file")


if __name__ == "__main__":
    unittest.main()
