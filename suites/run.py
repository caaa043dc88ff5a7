#!/usr/bin/env python3
"""voltgate suite runner.

Runs every cmocka suite (build/suites/test_*), every shell suite
(suites/test_*.sh: exit 0 pass, 77 skip with the reason on its last line,
anything else fail) and every Python test module (reports/tests/test_*.py,
suites/test_*.py),
independent suites side by side (--jobs).  Each suite's output is printed in
one piece when it ends, in cmocka's summary form, each skip with its reason;
last come the skip reasons with their counts, the failures, and one line over
all suites:

    N passed, N failed, N skipped

A test counts once: one cmocka test case, one shell suite, one Python test
method.  Every suite writes one JUnit file, build/reports/junit/<suite>.xml,
each test case with a classname and each skip with its reason (message=);
after the suites the runner checks that dir (one more test, "junit").  The
exit status is 1 when anything failed or no test ran.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

PYTHON_TEST_DIRS = ("reports/tests", "suites")


class Case:
    """One test's verdict: pass, skip (detail = the reason) or fail."""

    def __init__(self, classname, name, verdict, detail="", seconds=0.0):
        self.classname, self.name, self.verdict = classname, name, verdict
        self.detail, self.seconds = detail, seconds


class SuiteResult:
    def __init__(self, name):
        self.name = name
        self.cases = []
        self.output = ""     # the suite's own output (stdout + stderr)
        self.seconds = 0.0
        self.rc = 0

    def count(self, verdict):
        return sum(1 for c in self.cases if c.verdict == verdict)

    def failure_output(self):
        """The suite's own output when it failed (the JUnit file's system-out)."""
        return self.output[-20000:] if self.count("fail") else ""


def first_line(text):
    text = (text or "").strip()
    return text.splitlines()[0] if text else ""


def skip_reason(text):
    """The reason alone: 'skipped: no CUDA device' and 'no CUDA device' read alike."""
    text = (text or "").strip()
    return text[len("skipped:"):].strip() if text.startswith("skipped:") else text


# ---- cmocka -------------------------------------------------------------------------

def parse_cmocka_xml(path):
    """Yields (group, test name, verdict, detail, seconds) from a cmocka XML file."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    for ts in suites:
        group = ts.get("name", "?")
        for tc in ts.findall("testcase"):
            name = tc.get("name", "?")
            seconds = float(tc.get("time", "0") or 0)
            failure = tc.find("failure")
            error = tc.find("error")
            if failure is not None or error is not None:
                node = failure if failure is not None else error
                yield group, name, "fail", first_line(node.get("message") or node.text), seconds
            elif tc.find("skipped") is not None:
                yield group, name, "skip", "", seconds
            else:
                yield group, name, "pass", "", seconds


def read_skip_log(path):
    """{(group, test): reason} from the lines vgtest_skip() appends (GROUP\\tTEST\\tREASON)."""
    reasons = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t", 2)
                if len(parts) == 3:
                    reasons[(parts[0], parts[1])] = parts[2]
    return reasons


def run_cmocka(binary, env, timeout):
    res = SuiteResult(os.path.basename(binary))
    with tempfile.TemporaryDirectory(prefix="vg-suite-") as scratch:
        # A fresh folder: cmocka writes to stderr instead when the XML file exists.
        xml_pattern = os.path.join(scratch, "junit.%g.xml")
        skip_log = os.path.join(scratch, "skips.tsv")
        run_env = dict(env, CMOCKA_MESSAGE_OUTPUT="xml", CMOCKA_XML_FILE=xml_pattern,
                       VGTEST_SKIP_LOG=skip_log)
        start = time.time()
        res.rc, res.output = run_process([binary], run_env, timeout)
        res.seconds = time.time() - start
        reasons = read_skip_log(skip_log)
        parsed_any = False
        for f in sorted(glob.glob(os.path.join(scratch, "junit.*.xml"))):
            try:
                for group, name, verdict, detail, seconds in parse_cmocka_xml(f):
                    parsed_any = True
                    if verdict == "skip":
                        detail = reasons.get((group, name), "")
                    res.cases.append(Case(f"{res.name}.{group}", name, verdict, detail, seconds))
            except ET.ParseError as exc:
                res.cases.append(Case(res.name, os.path.basename(f), "fail",
                                      f"unreadable JUnit XML: {exc}"))
    # A crash or a non-zero exit with nothing failed in the XML is a failure
    # of its own: the XML may be cut short.
    if res.rc != 0 and res.count("fail") == 0:
        res.cases.append(Case(res.name, "(exit)", "fail", f"exit status {res.rc}"))
    if not parsed_any and res.rc == 0:
        res.cases.append(Case(res.name, "(no tests)", "fail", "no JUnit XML written"))
    return res


# ---- shell suites -------------------------------------------------------------------

def run_shell(script, env, timeout):
    res = SuiteResult(os.path.basename(script))
    start = time.time()
    res.rc, res.output = run_process(["bash", script], env, timeout)
    res.seconds = time.time() - start
    verdict = "pass" if res.rc == 0 else "skip" if res.rc == 77 else "fail"
    lines = res.output.strip().splitlines()
    last = lines[-1].strip() if lines else ""
    detail = skip_reason(last) if verdict == "skip" else last if verdict == "fail" else ""
    if verdict == "fail" and res.rc == "timeout":
        detail = f"timed out after {timeout} s"
    res.cases.append(Case("shell." + res.name, res.name, verdict, detail, res.seconds))
    return res


# ---- Python test modules ------------------------------------------------------------

class TimedResult(unittest.TestResult):
    """unittest's result, plus each test's seconds."""

    def __init__(self):
        super().__init__()
        self.seconds = {}
        self._started = {}

    def startTest(self, test):
        self._started[test.id()] = time.time()
        super().startTest(test)

    def stopTest(self, test):
        self.seconds[test.id()] = time.time() - self._started.get(test.id(), time.time())
        super().stopTest(test)


def exception_line(trace):
    """The line of a traceback that names the exception ("AssertionError: 0 != 2"),
    not the last line of a long assertion message."""
    lines = trace.strip().splitlines()
    for line in lines:
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line):
            return line
    return lines[-1] if lines else ""


def unittest_module_cases(path):
    """Runs one test module in this process; returns its cases as dicts."""
    test_dir, module_file = os.path.split(path)
    suite = unittest.TestLoader().discover(test_dir, pattern=module_file, top_level_dir=test_dir)

    def walk(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                yield from walk(t)
            else:
                yield t

    # TestSuite.run() drops each test once it has run: list them first.
    tests = list(walk(suite))
    result = TimedResult()
    suite.run(result)
    fails = {id(t): msg for t, msg in result.failures + result.errors}
    skips = {id(t): reason for t, reason in result.skipped}
    cases = []
    for t in tests:
        if id(t) in fails:
            verdict, detail = "fail", exception_line(fails[id(t)])
        elif id(t) in skips:
            verdict, detail = "skip", skips[id(t)]
        else:
            verdict, detail = "pass", ""
        classname, _, name = t.id().rpartition(".")
        cases.append({"classname": classname or module_file, "name": name, "verdict": verdict,
                      "detail": detail, "seconds": result.seconds.get(t.id(), 0.0),
                      "trace": fails.get(id(t), "")})
    # A class or module fixture that fails is not one of the tests: a failure too.
    for t, msg in result.errors:
        if not any(t is x for x in tests):
            cases.append({"classname": module_file, "name": str(t), "verdict": "fail",
                          "detail": exception_line(msg), "seconds": 0.0, "trace": msg})
    return cases


def run_python_module(path, env, timeout):
    """One test module in a child interpreter, so modules run side by side."""
    res = SuiteResult(os.path.basename(path))
    with tempfile.TemporaryDirectory(prefix="vg-suite-") as scratch:
        out_json = os.path.join(scratch, "cases.json")
        start = time.time()
        res.rc, res.output = run_process(
            [sys.executable, os.path.abspath(__file__), "--unittest-module", path,
             "--cases-json", out_json], env, timeout)
        res.seconds = time.time() - start
        try:
            with open(out_json) as f:
                cases = json.load(f)
        except (OSError, ValueError):
            cases = []
    traces = []
    for c in cases:
        res.cases.append(Case(c["classname"], c["name"], c["verdict"], c["detail"], c["seconds"]))
        if c["trace"]:
            traces.append(c["trace"])
    if traces:
        res.output = (res.output + "\n" + "\n".join(traces)).strip()
    if not cases:
        res.cases.append(Case(res.name, "(module)", "fail",
                              f"no results (exit status {res.rc}): "
                              f"{first_line(res.output[-2000:]) or 'no output'}"))
    return res


# ---- common -------------------------------------------------------------------------

def run_process(argv, env, timeout):
    """(exit status or 'timeout', stdout + stderr)."""
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout,
                              errors="replace")
        return proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or ""
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        return "timeout", out


def junit_path(junit_dir, suite):
    return os.path.join(junit_dir, suite + ".xml")


def write_junit(junit_dir, res):
    """One JUnit file per suite: every case with its classname, every skip with its reason."""
    root = ET.Element("testsuites")
    ts = ET.SubElement(root, "testsuite", name=res.name, tests=str(len(res.cases)),
                       failures=str(res.count("fail")), errors="0",
                       skipped=str(res.count("skip")), time=f"{res.seconds:.3f}")
    for c in res.cases:
        tc = ET.SubElement(ts, "testcase", classname=c.classname, name=c.name,
                           time=f"{c.seconds:.3f}")
        if c.verdict == "fail":
            ET.SubElement(tc, "failure", message=c.detail or "failed")
        elif c.verdict == "skip":
            ET.SubElement(tc, "skipped", message=c.detail)
    if res.failure_output():
        ET.SubElement(ts, "system-out").text = res.failure_output()
    ET.ElementTree(root).write(junit_path(junit_dir, res.name), encoding="utf-8",
                               xml_declaration=True)


def check_junit(junit_dir, suites):
    """What is wrong with the JUnit files of these suites: a missing or
    unreadable file, a file without test cases, a case without a classname,
    a skip without a reason.  Empty when all is well."""
    problems = []
    for suite in suites:
        path = junit_path(junit_dir, suite)
        if not os.path.exists(path):
            problems.append(f"{suite}: no JUnit file {path}")
            continue
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as exc:
            problems.append(f"{suite}: unreadable JUnit file {path}: {exc}")
            continue
        cases = root.iter("testcase")
        n = 0
        for tc in cases:
            n += 1
            label = f"{suite}: {tc.get('name') or '(unnamed)'}"
            if not tc.get("classname"):
                problems.append(f"{label}: no classname")
            if not tc.get("name"):
                problems.append(f"{label}: no name")
            skipped = tc.find("skipped")
            if skipped is not None and not (skipped.get("message") or "").strip():
                problems.append(f"{label}: skipped without a reason")
        if n == 0:
            problems.append(f"{suite}: no test case in {path}")
    return problems


def format_suite(res, verbose):
    """The suite's summary in cmocka's form, printed in one piece."""
    lines = [f"[==========] {res.name}: {len(res.cases)} test(s) run.",
             f"[  PASSED  ] {res.count('pass')} test(s)."]
    skipped = [c for c in res.cases if c.verdict == "skip"]
    if skipped:
        lines.append(f"[  SKIPPED ] {res.name}: {len(skipped)} test(s), listed below:")
        for c in skipped:
            lines.append(f"[  SKIPPED ] {c.name}: skipped: {c.detail or '(no reason given)'}")
    failed = [c for c in res.cases if c.verdict == "fail"]
    if failed:
        lines.append(f"[  FAILED  ] {res.name}: {len(failed)} test(s), listed below:")
        for c in failed:
            lines.append(f"[  FAILED  ] {c.name}{': ' + c.detail if c.detail else ''}")
    if verbose or failed:
        tail = "\n".join(res.output.strip().splitlines()[-40:])
        if tail:
            lines.append(tail)
    lines.append(f"--- {res.name}: {res.count('pass')} passed, {res.count('fail')} failed, "
                 f"{res.count('skip')} skipped ({res.seconds:.1f} s)\n")
    return "\n".join(lines)


def default_jobs():
    """--jobs when not given: $JOBS, else make's -jN (MAKEFLAGS), else the CPU count."""
    if os.environ.get("JOBS", "").isdigit() and int(os.environ["JOBS"]) > 0:
        return int(os.environ["JOBS"])
    for flag in os.environ.get("MAKEFLAGS", "").split():
        m = re.fullmatch(r"-j(\d*)|--jobs(?:=(\d+))?", flag)
        if m:
            n = m.group(1) or m.group(2)
            return int(n) if n else (os.cpu_count() or 1)
    return os.cpu_count() or 1


def load_times(path):
    try:
        with open(path) as f:
            return {k: float(v) for k, v in json.load(f).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="build folder (default: build)")
    ap.add_argument("--python", default=sys.executable, help="python used by shell suites")
    ap.add_argument("--only", action="append", default=[],
                    help="run only suites whose name or path contains this (repeatable; "
                         "'python' selects the Python test modules)")
    ap.add_argument("-j", "--jobs", type=int, default=None,
                    help="suites run at once (default: $JOBS, else make's -j, else the CPU count)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per suite")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every suite's output")
    ap.add_argument("--check-junit", metavar="DIR",
                    help="only check the JUnit files in DIR of the suites found (no run); exit 1 "
                         "on a problem")
    ap.add_argument("--unittest-module", help=argparse.SUPPRESS)
    ap.add_argument("--cases-json", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.unittest_module:
        with open(args.cases_json, "w") as f:
            json.dump(unittest_module_cases(args.unittest_module), f)
        return 0

    def wanted(*names):
        return not args.only or any(o in n for o in args.only for n in names)

    # (suite name, how to run it); suites are independent of one another.
    suites = []
    for binary in sorted(glob.glob(os.path.join(args.build, "suites", "test_*"))):
        if os.access(binary, os.X_OK) and not binary.endswith(".d") and wanted(binary):
            suites.append((os.path.basename(binary), run_cmocka, binary))
    for script in sorted(glob.glob("suites/test_*.sh")):
        if wanted(script):
            suites.append((os.path.basename(script), run_shell, script))
    for module in sorted(m for d in PYTHON_TEST_DIRS for m in glob.glob(os.path.join(d, "test_*.py"))):
        if wanted(module, "python"):
            suites.append((os.path.basename(module), run_python_module, module))

    junit_dir = os.path.join(args.build, "reports", "junit")
    if args.check_junit:
        problems = check_junit(args.check_junit, [s[0] for s in suites])
        for p in problems:
            print(p)
        print(f"junit: {len(problems)} problem(s) in {args.check_junit} over {len(suites)} suites")
        return 1 if problems else 0

    os.makedirs(junit_dir, exist_ok=True)
    # This run's suites' old files, cmocka's per-group ones (<suite>.<group>.xml) too.
    for suite, _, _ in suites:
        for old in glob.glob(junit_path(junit_dir, suite)) + \
                glob.glob(os.path.join(junit_dir, glob.escape(suite) + ".*.xml")):
            os.remove(old)
    env = dict(os.environ, VG_BUILD=args.build, VG_TOOL=os.path.join(args.build, "bin", "voltgate"),
               PYTHON=args.python)
    env.pop("VG_GEMM_TRACE", None)

    # Longest first (by the last run's times; new suites first of all), so the
    # last suites to start are short ones.
    times_path = os.path.join(args.build, "reports", "suite-times.json")
    times = load_times(times_path)
    order = sorted(suites, key=lambda s: -times.get(s[0], float("inf")))
    jobs = max(1, args.jobs if args.jobs is not None else default_jobs())
    print(f"run.py: {len(suites)} suites, {jobs} at a time")

    start = time.time()
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        pending = [pool.submit(run, path, env, args.timeout) for _, run, path in order]
        for done in concurrent.futures.as_completed(pending):
            res = done.result()
            write_junit(junit_dir, res)
            print(format_suite(res, args.verbose), flush=True)
            results.append(res)

    times.update({r.name: round(r.seconds, 2) for r in results})
    try:
        with open(times_path, "w") as f:
            json.dump(times, f, indent=1, sort_keys=True)
    except OSError:
        pass

    cases = [(r.name, c) for r in sorted(results, key=lambda r: r.name) for c in r.cases]
    problems = check_junit(junit_dir, [s[0] for s in suites])
    cases.append(("junit", Case("run.py", "junit", "fail" if problems else "pass",
                                "; ".join(problems[:5]) + (" ..." if len(problems) > 5 else ""))))
    print("[==========] junit: every suite's JUnit file, classnames, skip reasons")
    print(f"[{'PASSED' if not problems else 'FAILED':^10}] junit: {len(suites)} files"
          + "".join(f"\n  {p}" for p in problems) + "\n")

    passed = sum(1 for _, c in cases if c.verdict == "pass")
    failed = [(s, c) for s, c in cases if c.verdict == "fail"]
    skipped = [(s, c) for s, c in cases if c.verdict == "skip"]
    if skipped:
        print("skips:")
        by_reason = {}
        for s, c in skipped:
            by_reason.setdefault(c.detail or "(no reason given)", []).append(s)
        for reason, where in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
            per_suite = {}
            for s in where:
                per_suite[s] = per_suite.get(s, 0) + 1
            print(f"  skipped: {reason} -- {len(where)} test(s): "
                  + ", ".join(f"{s} ({n})" if n > 1 else s for s, n in per_suite.items()))
    if failed:
        print("failures:")
        for s, c in failed:
            print(f"  {s}: {c.name}{': ' + c.detail if c.detail else ''}")
    print(f"wall: {time.time() - start:.1f} s with {jobs} job(s)")
    print(f"{passed} passed, {len(failed)} failed, {len(skipped)} skipped")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
