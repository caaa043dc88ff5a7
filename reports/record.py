#!/usr/bin/python3
"""Builds one voltgate results record from the tools' JSON outputs.

    record.py --golden-json F [--golden-json F ...] --bench-json F [...]
              --replay-json F [--coverage-xml F] --history DIR
              [--runner NAME] [--shard I/N] [--run-id ID] [--arch-list "80 90"]
              [--missing "bench: not built yet" ...]

Every input is optional, but each one given must be valid: a bad input is a
one-line error (exit 2) and no record is written.  The record (schema in
reports/SCHEMA.md) gets the commit, dirty flag, date and host from git and
this machine, and is written to

    DIR/<UTC timestamp>-<short commit>[-dirty][-<runner>].json

through a temporary file that is hard-linked into place, so a reader never
sees half a record and an existing record is never overwritten (a "-2",
"-3", ... suffix is added instead).  The path is printed on stdout.

load_records(dir) is the reader every other script uses: it validates each
record and skips a bad one with a message instead of failing.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SCHEMA_VERSION = 1
RECORD_KIND = "voltgate-results"


class InputError(Exception):
    """A tool output or record that does not follow its format."""


# ---- a small type checker ----------------------------------------------------
# A spec maps key -> type name; "?" at the end allows null.  Types: str, int,
# num (int or float, not bool), bool, list, dict, nums (list of numbers), any.

def _type_ok(value, kind):
    if kind.endswith("?"):
        if value is None:
            return True
        kind = kind[:-1]
    if kind == "any":
        return True
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "num":
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value))
    if kind == "list":
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict)
    if kind == "nums":
        return isinstance(value, list) and all(_type_ok(v, "num") for v in value)
    raise ValueError("unknown type " + kind)


_TYPE_WORDS = {"str": "a string", "int": "an integer", "num": "a number", "bool": "true or false",
               "list": "a list", "dict": "an object", "nums": "a list of numbers", "any": "a value"}


def _describe(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value if len(value) < 40 else value[:37] + "...")
    return type(value).__name__.replace("dict", "an object").replace("list", "a list")


def check_fields(obj, spec, where):
    """Raises InputError naming the first missing or mistyped key."""
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected an object, got {_describe(obj)}")
    for key, kind in spec.items():
        if key not in obj:
            raise InputError(f"{where}: missing key '{key}'")
        if not _type_ok(obj[key], kind):
            want = _TYPE_WORDS[kind.rstrip('?')] + (" or null" if kind.endswith("?") else "")
            raise InputError(f"{where}.{key}: expected {want}, got {_describe(obj[key])}")


GOLDEN_ROW = {"case": "str", "file": "str", "family": "str", "path": "str", "m": "int", "n": "int",
              "k": "int", "groups": "int", "tokens": "int", "backend": "str", "plan": "str",
              "rel_rms": "num?", "max_abs": "num?", "tol_rel_rms": "num", "tol_max_abs": "num",
              "verdict": "str"}
BENCH_FILE = {"tool": "str", "backend": "str", "gpu": "str?", "driver": "str?",
              "cuda_version": "str?", "arch_list": "str?", "policy_hash": "str?", "config": "dict?",
              "copy_bandwidth_gbs": "num?", "rows": "list"}
BENCH_ROW = {"name": "str", "kind": "str", "path": "str", "family": "str", "m": "int", "n": "int",
             "k": "int", "groups": "int", "tokens": "int", "plan": "str?", "decision": "str",
             "samples_us": "nums", "median_us": "num", "min_us": "num", "max_us": "num",
             "bytes": "num", "flops": "num", "bandwidth_fraction": "num?", "max_rel_rms": "num?"}
REPLAY_FILE = {"tool": "str", "warmup_measured": "int", "serving_measured": "int",
               "requests_with_new_shape": "int", "requests": "int", "per_request": "list"}
REPLAY_ROW = {"prompt": "int", "new_shape": "bool", "measured": "int", "dispatch_us": "num?",
              "engine": "str"}
RECORD = {"schema_version": "int", "kind": "str", "run_id": "str?", "commit": "str",
          "short_commit": "str", "dirty": "bool", "date": "str", "host": "str",
          "platform": "dict", "runner": "str", "shard": "str?", "gpu": "str?", "driver": "str?",
          "cuda_version": "str?", "arch_list": "str?", "backends": "list", "config": "dict?",
          "policy_hash": "str?", "bench_runs": "list", "bench": "list", "golden": "list",
          "replay": "dict?", "coverage": "dict?", "missing": "list"}
BENCH_RUN = {"backend": "str", "gpu": "str?", "driver": "str?", "cuda_version": "str?",
             "arch_list": "str?", "policy_hash": "str?", "copy_bandwidth_gbs": "num?", "source": "str"}
# keys a later bench added to a run: checked where present
BENCH_RUN_LATER = {"decode_launch": "str?"}
COVERAGE_FILE = {"file": "str", "line_percent": "num?", "branch_percent": "num?"}
COVERAGE = {"line_percent": "num?", "branch_percent": "num?", "lines_covered": "int",
            "lines_valid": "int", "branches_covered": "int", "branches_valid": "int",
            "files": "list"}
# reports/sass_model.py's rows, kept in the record (optional: make sm70-check
# writes them; records before it lack the key)
V100_MODEL_ROW = {"family": "str", "kind": "str", "tile": "str", "bound": "str", "ceiling": "num?",
                  "ceiling_of": "str?", "instructions_per_16816": "num?", "shfl": "int",
                  "w_inflight_bytes_per_sm": "int?", "regs": "int?"}
# keys a later model added: checked where present, so older records still read
V100_MODEL_ROW_LATER = {"memory_waits_per_iter": "int?"}
DATE_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
SHARD_RE = re.compile(r"^(\d+)/(\d+)$")


def _rows(obj, key, spec, where, later=None):
    for i, row in enumerate(obj[key]):
        check_fields(row, spec, f"{where}.{key}[{i}]")
        if later:
            check_fields(row, {k: t for k, t in later.items() if k in row}, f"{where}.{key}[{i}]")


def check_golden_output(obj, where):
    check_fields(obj, {"tool": "str", "rows": "list"}, where)
    if obj["tool"] != "golden-verify":
        raise InputError(f"{where}.tool: expected \"golden-verify\", got {_describe(obj['tool'])}")
    _rows(obj, "rows", GOLDEN_ROW, where)


def check_bench_output(obj, where, warn=None):
    check_fields(obj, BENCH_FILE, where)
    if obj["tool"] != "bench":
        raise InputError(f"{where}.tool: expected \"bench\", got {_describe(obj['tool'])}")
    # A copy or peer row describes none of our kernels: a missing path or
    # family there is taken as "n/a" (with a warning) rather than losing the
    # whole run.  Kernel and dispatch rows must have every key.
    for i, row in enumerate(obj["rows"]):
        if isinstance(row, dict) and row.get("kind") in ("copy", "peer"):
            for key in ("path", "family"):
                if key not in row:
                    row[key] = "n/a"
                    if warn:
                        warn(f"{where}.rows[{i}] ({row.get('name')}): {row['kind']} row without '{key}', "
                             f"recorded as \"n/a\" (the bench JSON format requires the key)")
    _rows(obj, "rows", BENCH_ROW, where)
    for i, row in enumerate(obj["rows"]):
        if not row["samples_us"]:
            raise InputError(f"{where}.rows[{i}].samples_us: no samples")


def check_replay_output(obj, where):
    check_fields(obj, REPLAY_FILE, where)
    if obj["tool"] != "replay":
        raise InputError(f"{where}.tool: expected \"replay\", got {_describe(obj['tool'])}")
    _rows(obj, "per_request", REPLAY_ROW, where)


def check_record(obj, where):
    """Validates a whole record; raises InputError naming the first problem."""
    check_fields(obj, {"schema_version": "int"}, where)
    if obj["schema_version"] != SCHEMA_VERSION:
        raise InputError(f"{where}.schema_version: this reader knows version {SCHEMA_VERSION}, "
                         f"the record says {obj['schema_version']}")
    check_fields(obj, RECORD, where)
    if obj["kind"] != RECORD_KIND:
        raise InputError(f"{where}.kind: expected \"{RECORD_KIND}\", got {_describe(obj['kind'])}")
    if not DATE_RE.match(obj["date"]):
        raise InputError(f"{where}.date: expected a UTC ISO date like 2026-12-02T16:30:00Z, "
                         f"got {_describe(obj['date'])}")
    if obj["shard"] is not None and not SHARD_RE.match(obj["shard"]):
        raise InputError(f"{where}.shard: expected \"I/N\", got {_describe(obj['shard'])}")
    for i, run in enumerate(obj["bench_runs"]):
        check_fields(run, BENCH_RUN, f"{where}.bench_runs[{i}]")
        check_fields(run, {k: t for k, t in BENCH_RUN_LATER.items() if k in run}, f"{where}.bench_runs[{i}]")
    spec = dict(BENCH_ROW, backend="str")
    _rows(obj, "bench", spec, where)
    _rows(obj, "golden", GOLDEN_ROW, where)
    if obj["replay"] is not None:
        check_fields(obj["replay"], REPLAY_FILE, where + ".replay")
        _rows(obj["replay"], "per_request", REPLAY_ROW, where + ".replay")
    if obj["coverage"] is not None:
        check_fields(obj["coverage"], COVERAGE, where + ".coverage")
        _rows(obj["coverage"], "files", COVERAGE_FILE, where + ".coverage")
    if obj.get("v100_model") is not None:
        check_fields(obj, {"v100_model": "list"}, where)
        _rows(obj, "v100_model", V100_MODEL_ROW, where, V100_MODEL_ROW_LATER)
    for i, m in enumerate(obj["missing"]):
        if not isinstance(m, str):
            raise InputError(f"{where}.missing[{i}]: expected a string, got {_describe(m)}")


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.object[exc.start:exc.start + 1]!r})")
    if not text.strip():
        raise InputError(f"{path}: empty file")
    try:
        # NaN/Infinity are not JSON; refuse them instead of taking them as
        # numbers, and numbers too large for a float (1e999 would read as
        # infinity and be written back as Infinity).
        return json.loads(text, parse_constant=lambda c: _bad_constant(c), parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
    except ValueError as exc:
        raise InputError(f"{path}: {exc}")


def _bad_constant(name):
    raise ValueError(f"'{name}' is not a JSON number")


def _finite_float(text):
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"'{text}' is out of a float's range")
    return v


# ---- load_records: the reader ------------------------------------------------------

def load_records(directory, warn=None):
    """Returns (records, problems) for every *.json record in directory.

    Each record gets "_file" (its path).  A file that is not a valid record
    is skipped; problems lists "<file>: <what is wrong>" for each.  When warn
    is given (e.g. sys.stderr.write) each problem is also passed to it."""
    records, problems = [], []
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        problems.append(f"{directory}: cannot list: {exc.strerror}")
        names = []
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        path = os.path.join(directory, name)
        try:
            obj = read_json(path)
            check_record(obj, "record")
        except InputError as exc:
            msg = str(exc)
            if not msg.startswith(path):
                msg = f"{path}: {msg}"
            problems.append(msg + " (skipped)")
            if warn:
                warn(msg + " (skipped)\n")
            continue
        obj["_file"] = path
        records.append(obj)
    records.sort(key=order_key)
    return records, problems


# ---- building a record --------------------------------------------------------------

def _git(args, cwd):
    try:
        proc = subprocess.run(["git"] + args, cwd=cwd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def git_state(cwd):
    """(commit, dirty): "unknown" and True outside a git checkout."""
    commit = (_git(["rev-parse", "HEAD"], cwd) or "").strip()
    if not re.match(r"^[0-9a-f]{40}$", commit):
        return "unknown", True
    # Untracked files count: the Makefile builds every source it finds.
    status = _git(["status", "--porcelain", "--untracked-files=normal"], cwd)
    return commit, status is None or status.strip() != ""


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def parse_coverage_xml(path):
    """Cobertura XML (gcovr --xml) -> the record's coverage object."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise InputError(f"{path}: not a readable Cobertura XML file: {exc}")
    if root.tag != "coverage":
        raise InputError(f"{path}: root element is <{root.tag}>, expected <coverage>")

    def pct(node, attr):
        v = node.get(attr)
        try:
            return round(float(v) * 100.0, 2) if v is not None else None
        except ValueError:
            raise InputError(f"{path}: attribute {attr}={v!r} is not a number")

    def count(attr):
        try:
            return int(root.get(attr, "0"))
        except ValueError:
            raise InputError(f"{path}: attribute {attr}={root.get(attr)!r} is not an integer")

    files = []
    for cls in root.iter("class"):
        files.append({"file": cls.get("filename", "?"), "line_percent": pct(cls, "line-rate"),
                      "branch_percent": pct(cls, "branch-rate")})
    return {"line_percent": pct(root, "line-rate"), "branch_percent": pct(root, "branch-rate"),
            "lines_covered": count("lines-covered"), "lines_valid": count("lines-valid"),
            "branches_covered": count("branches-covered"), "branches_valid": count("branches-valid"),
            "files": files, "source": path}


def v100_model_rows(obj, where):
    """The record's rows from a reports/sass_model.py --json document."""
    check_fields(obj, {"schema": "str", "kernels": "list"}, where)
    if obj["schema"] != "voltgate-sass-model/1":
        raise InputError(f"{where}.schema: expected \"voltgate-sass-model/1\", got {_describe(obj['schema'])}")
    rows = []
    for i, k in enumerate(obj["kernels"]):
        if not isinstance(k, dict):
            raise InputError(f"{where}.kernels[{i}]: expected an object, got {_describe(k)}")
        row = {key: k.get(key) for key in V100_MODEL_ROW}
        row.update({key: k[key] for key in V100_MODEL_ROW_LATER if key in k})
        if row["shfl"] is None:
            row["shfl"] = 0
        check_fields(row, V100_MODEL_ROW, f"{where}.kernels[{i}]")
        check_fields(row, {key: t for key, t in V100_MODEL_ROW_LATER.items() if key in row},
                     f"{where}.kernels[{i}]")
        rows.append(row)
    return rows


def build_record(golden=(), bench=(), replay=None, coverage=None, runner="local", shard=None,
                 run_id=None, arch_list=None, missing=(), repo=".", now=None, warn=None, sass_model=None):
    """golden/bench: lists of (path, parsed JSON); replay: (path, JSON) or None;
    coverage: the parsed coverage object or None; sass_model: (path, JSON) of
    reports/sass_model.py or None.  Validates each input."""
    for path, obj in golden:
        check_golden_output(obj, path)
    for path, obj in bench:
        check_bench_output(obj, path, warn)
    if replay is not None:
        check_replay_output(replay[1], replay[0])
    if shard is not None:
        m = SHARD_RE.match(shard)
        if not m or int(m.group(2)) < 1:
            raise InputError(f"--shard: expected I/N, got {shard!r}")
    commit, dirty = git_state(repo)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    rec = {
        "schema_version": SCHEMA_VERSION, "kind": RECORD_KIND, "run_id": run_id,
        "commit": commit, "short_commit": commit[:10] if commit != "unknown" else "unknown",
        "dirty": dirty, "date": f"{now:%Y-%m-%dT%H:%M:%S}.{now.microsecond // 1000:03d}Z",
        "host": socket.gethostname() or "unknown",
        "platform": {"system": platform.system(), "release": platform.release(),
                     "machine": platform.machine(), "cpu": cpu_model(), "cores": os.cpu_count() or 0},
        "runner": runner, "shard": shard,
        "gpu": None, "driver": None, "cuda_version": None, "arch_list": arch_list,
        "backends": [], "config": None, "policy_hash": None,
        "bench_runs": [], "bench": [], "golden": [], "replay": None, "coverage": coverage,
        "missing": list(missing),
        "v100_model": v100_model_rows(sass_model[1], sass_model[0]) if sass_model else None,
    }
    backends = []
    seen = set()
    for path, obj in bench:
        run = {k: (obj[k] if obj[k] != "" else None) for k in BENCH_RUN if k != "source"}
        run["source"] = os.path.basename(path)
        # Optional (bench files before 2026-12-03 lack it): "pdl" or "plain".
        launch = obj.get("decode_launch")
        if launch is not None and not isinstance(launch, str):
            raise InputError(f"{path}.decode_launch: expected a string or null, got {_describe(launch)}")
        run["decode_launch"] = launch
        rec["bench_runs"].append(run)
        backends.append(obj["backend"])
        # The GPU, driver and CUDA version come from a GPU run only (a CPU
        # bench says "cpu" there).
        if obj["backend"] != "cpu":
            for key in ("gpu", "driver", "cuda_version"):
                if run[key] is not None:
                    rec[key] = run[key]
            if run["arch_list"]:
                rec["arch_list"] = run["arch_list"]
        if rec["config"] is None:
            rec["config"], rec["policy_hash"] = obj["config"], obj["policy_hash"]
        copy_bw = obj["copy_bandwidth_gbs"]
        stem = os.path.splitext(os.path.basename(path))[0]
        for row in obj["rows"]:
            # source: the bench file the row came from, so that a row is
            # compared with the peer its own run measured (targets.py,
            # report_plots.crossover_series); records before it lack it
            row = dict(row, backend=obj["backend"], source=os.path.basename(path))
            # Two bench files of one backend (e.g. one per family) each
            # measure the copy bandwidth: keep names unique in a record.
            if (row["backend"], row["name"]) in seen:
                row["name"] = f"{row['name']} [{stem}]"
            seen.add((row["backend"], row["name"]))
            # Fill a missing fraction from the copy bandwidth of the same run.
            seconds = row["median_us"] * 1e-6
            if row["bandwidth_fraction"] is None and copy_bw and row["bytes"] and seconds > 0:
                fraction = row["bytes"] / seconds / (copy_bw * 1e9)
                row["bandwidth_fraction"] = fraction if math.isfinite(fraction) else None
            rec["bench"].append(row)
    for path, obj in golden:
        rec["golden"].extend(dict(r) for r in obj["rows"])
        backends.extend(r["backend"] for r in obj["rows"])
    if replay is not None:
        rec["replay"] = dict(replay[1], source=os.path.basename(replay[0]))
    rec["backends"] = sorted(set(backends))
    check_record(rec, "record")                    # the writer obeys its own schema
    return rec


def record_name(rec):
    stamp = rec["date"][:19].replace("-", "").replace(":", "") + "Z"    # 20261202T163000Z
    name = f"{stamp}-{rec['short_commit'][:10]}"
    if rec["dirty"]:
        name += "-dirty"
    if rec["runner"] and rec["runner"] != "local":
        name += "-" + rec["runner"]
    return name


def order_key(rec):
    """Sort key of a loaded record, oldest first: its date (to the
    millisecond the writer gives; older records have whole seconds), then
    the sequence number write_record gave its name (name.json, name-2.json,
    ... name-10.json), so records written within one second keep the order
    they were written in.  A plain string sort of dates and file names gets
    that wrong: "...-2.json" sorts before "....json"."""
    date = rec["date"]
    frac = date[19:-1]
    name = os.path.basename(rec.get("_file", ""))
    m = re.fullmatch(re.escape(record_name(rec)) + r"(?:-(\d+))?\.json", name)
    seq = int(m.group(1) or 1) if m else 0
    return (date[:19], float("0" + frac) if frac else 0.0, seq, name)


def write_text_atomic(path, text):
    """Replaces path with text in one piece: a reader sees the old file or
    the new one, never a part (a temporary beside it, fsync, os.replace);
    the temporary is removed when anything fails."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_record(rec, directory):
    """Writes rec atomically as a new file in directory; returns its path."""
    os.makedirs(directory, exist_ok=True)
    base = record_name(rec)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(rec, f, indent=1, sort_keys=True, allow_nan=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        for i in range(1, 1000):
            path = os.path.join(directory, base + (f"-{i}" if i > 1 else "") + ".json")
            try:
                os.link(tmp, path)          # fails when path exists: never overwrites
                return path
            except FileExistsError:
                continue
        raise OSError(f"{directory}: no free name for {base}.json")
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def main(argv=None):
    ap = argparse.ArgumentParser(description="Builds one voltgate results record (reports/SCHEMA.md).")
    ap.add_argument("--golden-json", action="append", default=[], metavar="F",
                    help="voltgate golden verify --json output (repeatable: one per backend or shard)")
    ap.add_argument("--bench-json", action="append", default=[], metavar="F",
                    help="voltgate bench --json output (repeatable)")
    ap.add_argument("--replay-json", metavar="F", help="voltgate replay --json output")
    ap.add_argument("--coverage-xml", metavar="F", help="gcovr Cobertura XML (optional)")
    ap.add_argument("--sass-model", metavar="F",
                    help="reports/sass_model.py --json output: the V100 model (optional)")
    ap.add_argument("--history", required=True, metavar="DIR", help="the results folder")
    ap.add_argument("--runner", default=os.environ.get("VG_RUNNER", "local"),
                    help="runner name (env VG_RUNNER; default local)")
    ap.add_argument("--shard", default=os.environ.get("VG_SHARD") or None, metavar="I/N",
                    help="the shard this runner ran (env VG_SHARD)")
    ap.add_argument("--run-id", default=os.environ.get("VG_RUN_ID") or None,
                    help="groups the records of one CI run (env VG_RUN_ID)")
    ap.add_argument("--arch-list", default=None, help="CUDA archs of the build (e.g. \"80 90\")")
    ap.add_argument("--missing", action="append", default=[], metavar="TEXT",
                    help="a part that did not run and why (repeatable; shown in the report)")
    ap.add_argument("--repo", default=".", help="the git checkout measured (default .)")
    args = ap.parse_args(argv)
    if not re.match(r"^[A-Za-z0-9._-]{1,64}$", args.runner):
        print(f"record.py: --runner {args.runner!r}: use letters, digits, '.', '_', '-'", file=sys.stderr)
        return 2
    try:
        golden = [(p, read_json(p)) for p in args.golden_json]
        bench = [(p, read_json(p)) for p in args.bench_json]
        replay = (args.replay_json, read_json(args.replay_json)) if args.replay_json else None
        coverage = parse_coverage_xml(args.coverage_xml) if args.coverage_xml else None
        model = (args.sass_model, read_json(args.sass_model)) if args.sass_model else None
        rec = build_record(golden, bench, replay, coverage, sass_model=model, runner=args.runner, shard=args.shard,
                           run_id=args.run_id, arch_list=args.arch_list, missing=args.missing,
                           repo=args.repo, warn=lambda m: print(f"record.py: warning: {m}", file=sys.stderr))
        path = write_record(rec, args.history)
    except InputError as exc:
        print(f"record.py: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"record.py: cannot write the record: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
