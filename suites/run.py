#!/usr/bin/env python3
"""voltgate suite runner.

Runs every cmocka suite (build/suites/test_*), every shell suite
(suites/test_*.sh: exit 0 pass, 77 skip, anything else fail) and the Python
unit tests (reports/tests/test_*.py).  Each cmocka suite writes its JUnit XML
under build/reports/junit/ (cmocka's own XML output); the runner prints each
suite's summary in cmocka's form and, last, one line over all suites:

    N passed, N failed, N skipped

A test counts once: one cmocka test case, one shell suite, one Python test
method.  The exit status is 1 when anything failed or no test ran.
"""
import argparse
import glob
import os
import subprocess
import sys
import time
import unittest
import xml.etree.ElementTree as ET


class Tally:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.failures = []

    def add(self, suite, name, verdict, detail=""):
        if verdict == "pass":
            self.passed += 1
        elif verdict == "skip":
            self.skipped += 1
        else:
            self.failed += 1
            self.failures.append(f"{suite}: {name}{': ' + detail if detail else ''}")


def parse_junit(path):
    """Yields (group, test name, verdict, detail) from a cmocka XML file."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    for ts in suites:
        group = ts.get("name", "?")
        for tc in ts.findall("testcase"):
            name = tc.get("name", "?")
            failure = tc.find("failure")
            error = tc.find("error")
            if failure is not None or error is not None:
                node = failure if failure is not None else error
                text = (node.get("message") or node.text or "").strip()
                yield group, name, "fail", text.splitlines()[0] if text else ""
            elif tc.find("skipped") is not None:
                yield group, name, "skip", ""
            else:
                yield group, name, "pass", ""


def run_cmocka(binary, junit_dir, tally, env, timeout, verbose):
    suite = os.path.basename(binary)
    # cmocka writes to stderr instead when the XML file already exists.
    for stale in glob.glob(os.path.join(junit_dir, suite + "*.xml")):
        os.remove(stale)
    xml_path = os.path.join(junit_dir, suite + ".%g.xml")
    run_env = dict(env, CMOCKA_MESSAGE_OUTPUT="xml", CMOCKA_XML_FILE=xml_path)
    start = time.time()
    try:
        proc = subprocess.run([binary], env=run_env, capture_output=True, text=True,
                              timeout=timeout)
        rc, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out = "timeout", (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
    elapsed = time.time() - start
    files = sorted(glob.glob(os.path.join(junit_dir, suite + ".*.xml")))
    counts = {"pass": 0, "skip": 0, "fail": 0}
    groups = {}
    parsed_any = False
    for f in files:
        try:
            for group, name, verdict, detail in parse_junit(f):
                parsed_any = True
                counts[verdict] += 1
                groups.setdefault(group, []).append((name, verdict, detail))
                tally.add(suite, name, verdict, detail)
        except ET.ParseError as exc:
            tally.add(suite, os.path.basename(f), "fail", f"unreadable JUnit XML: {exc}")
            counts["fail"] += 1
    for group, tests in groups.items():
        print(f"[==========] {group}: {len(tests)} test(s) run.")
        n_pass = sum(1 for t in tests if t[1] == "pass")
        print(f"[  PASSED  ] {n_pass} test(s).")
        skipped = [t for t in tests if t[1] == "skip"]
        if skipped:
            print(f"[  SKIPPED ] {group}: {len(skipped)} test(s), listed below:")
            for t in skipped:
                print(f"[  SKIPPED ] {t[0]}")
        failed = [t for t in tests if t[1] == "fail"]
        if failed:
            print(f"[  FAILED  ] {group}: {len(failed)} test(s), listed below:")
            for t in failed:
                print(f"[  FAILED  ] {t[0]}{': ' + t[2] if t[2] else ''}")
    # A crash or a non-zero exit with nothing failed in the XML is a failure
    # of its own: the XML may be cut short.
    if rc != 0 and counts["fail"] == 0:
        tally.add(suite, "(exit)", "fail", f"exit status {rc}")
        print(f"[  FAILED  ] {suite}: exited with status {rc}")
    if not parsed_any and rc == 0:
        tally.add(suite, "(no tests)", "fail", "no JUnit XML written")
    if verbose or rc != 0:
        tail = "\n".join(out.strip().splitlines()[-40:])
        if tail:
            print(tail)
    print(f"--- {suite}: {counts['pass']} passed, {counts['fail']} failed, "
          f"{counts['skip']} skipped ({elapsed:.1f} s)\n")


def run_shell(script, tally, env, timeout, verbose):
    suite = os.path.basename(script)
    start = time.time()
    try:
        proc = subprocess.run(["bash", script], env=env, capture_output=True, text=True,
                              timeout=timeout)
        rc, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired:
        rc, out = "timeout", ""
    verdict = "pass" if rc == 0 else "skip" if rc == 77 else "fail"
    last = out.strip().splitlines()[-1] if out.strip() else ""
    tally.add(suite, suite, verdict, last)
    print(f"[==========] {suite}: 1 test(s) run.")
    label = {"pass": "PASSED", "skip": "SKIPPED", "fail": "FAILED"}[verdict]
    print(f"[{label:^10}] {suite}{': ' + last if verdict != 'pass' and last else ''}")
    if verbose or verdict == "fail":
        print("\n".join(out.strip().splitlines()[-40:]))
    print(f"--- {suite}: {verdict} ({time.time() - start:.1f} s)\n")


def run_python_tests(test_dir, tally, verbose):
    if not glob.glob(os.path.join(test_dir, "test_*.py")):
        return
    loader = unittest.TestLoader()
    suite = loader.discover(test_dir, pattern="test_*.py", top_level_dir=test_dir)
    def walk(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                yield from walk(t)
            else:
                yield t

    # TestSuite.run() drops each test once it has run: list them first.
    tests = list(walk(suite))
    result = unittest.TestResult()
    start = time.time()
    suite.run(result)
    fails = {id(t): msg for t, msg in result.failures + result.errors}
    skips = {id(t) for t, _ in result.skipped}

    n = {"pass": 0, "fail": 0, "skip": 0}
    for t in tests:
        if id(t) in fails:
            verdict, detail = "fail", fails[id(t)].strip().splitlines()[-1]
        elif id(t) in skips:
            verdict, detail = "skip", ""
        else:
            verdict, detail = "pass", ""
        n[verdict] += 1
        tally.add("python:" + test_dir, t.id(), verdict, detail)
    # Loader errors (a test module that does not import) are failures too.
    for t, msg in result.errors:
        if not any(t is x for x in tests):
            n["fail"] += 1
            tally.add("python:" + test_dir, str(t), "fail", msg.strip().splitlines()[-1])
    print(f"[==========] python {test_dir}: {sum(n.values())} test(s) run.")
    print(f"[  PASSED  ] {n['pass']} test(s).")
    for t, msg in result.failures + result.errors:
        print(f"[  FAILED  ] {t}: {msg.strip().splitlines()[-1]}")
        if verbose:
            print(msg)
    print(f"--- python {test_dir}: {n['pass']} passed, {n['fail']} failed, "
          f"{n['skip']} skipped ({time.time() - start:.1f} s)\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="build folder (default: build)")
    ap.add_argument("--python", default=sys.executable, help="python used by shell suites")
    ap.add_argument("--only", action="append", default=[],
                    help="run only suites whose name contains this (repeatable)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per suite")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every suite's output")
    args = ap.parse_args()

    junit_dir = os.path.join(args.build, "reports", "junit")
    os.makedirs(junit_dir, exist_ok=True)
    env = dict(os.environ, VG_BUILD=args.build, VG_TOOL=os.path.join(args.build, "bin", "voltgate"),
               PYTHON=args.python)
    env.pop("VG_GEMM_TRACE", None)

    def wanted(name):
        return not args.only or any(o in name for o in args.only)

    tally = Tally()
    for binary in sorted(glob.glob(os.path.join(args.build, "suites", "test_*"))):
        if os.access(binary, os.X_OK) and not binary.endswith(".d") and wanted(binary):
            run_cmocka(binary, junit_dir, tally, env, args.timeout, args.verbose)
    for script in sorted(glob.glob("suites/test_*.sh")):
        if wanted(script):
            run_shell(script, tally, env, args.timeout, args.verbose)
    if wanted("python"):
        run_python_tests("reports/tests", tally, args.verbose)

    if tally.failures:
        print("failures:")
        for f in tally.failures:
            print("  " + f)
    print(f"{tally.passed} passed, {tally.failed} failed, {tally.skipped} skipped")
    return 1 if tally.failed or tally.passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
