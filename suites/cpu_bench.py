"""One CPU run of `voltgate bench` for the Python suites: a few samples of
the quick set on the grouped shape (g4n256k512 on the CPU), returning the
process and the kernel rows of its JSON by name (none when it failed)."""
import json
import os
import subprocess
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TOOL = os.environ.get("VG_TOOL") or os.path.join(ROOT, "build", "bin", "voltgate")


def bench(*args):
    with tempfile.TemporaryDirectory(prefix="vg-bench-") as tmp:
        path = os.path.join(tmp, "bench.json")
        proc = subprocess.run([TOOL, "bench", "--backend", "cpu", "--quick", "--samples", "3",
                               "--shape", "wo_a", "--json", path, *args],
                              capture_output=True, text=True, timeout=300, cwd=ROOT)
        rows = []
        if proc.returncode == 0:
            with open(path) as f:
                rows = [r for r in json.load(f)["rows"] if r["kind"] == "kernel"]
        return proc, {r["name"]: r for r in rows}
