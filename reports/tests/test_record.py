"""The results record: building it from tool outputs, writing it without
overwriting, and load_records() skipping bad files with a clear message."""
import datetime
import io
import json
import os
import random
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import gen_records  # noqa: E402
import record  # noqa: E402

NOW = datetime.datetime(2026, 12, 2, 16, 30, 5, tzinfo=datetime.timezone.utc)


class RecordTestCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="vg-record-")
        rng = random.Random(1)
        self.bench = gen_records.make_bench(rng, 12)
        self.golden = gen_records.make_golden(rng)
        self.replay = gen_records.make_replay(rng)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write_json(self, name, obj):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            json.dump(obj, f) if not isinstance(obj, str) else f.write(obj)
        return path

    def build(self, **kw):
        args = dict(golden=[("g.json", self.golden)], bench=[("b.json", self.bench)],
                    replay=("r.json", self.replay), repo=self.dir, now=NOW)
        args.update(kw)
        return record.build_record(**args)


class Build(RecordTestCase):
    def test_fields_from_the_tools_and_the_machine(self):
        rec = self.build(runner="v100-a", shard="1/4")
        self.assertEqual(rec["schema_version"], record.SCHEMA_VERSION)
        self.assertEqual(rec["date"], "2026-12-02T16:30:05.000Z")
        self.assertEqual(rec["commit"], "unknown")          # the temp dir is no git checkout
        self.assertTrue(rec["dirty"])
        self.assertEqual(rec["gpu"], "NVIDIA H200 (synthetic)")
        self.assertEqual(rec["arch_list"], "75 80 90")
        self.assertEqual(rec["policy_hash"], "0123456789abcdef")
        self.assertEqual(len(rec["bench"]), len(self.bench["rows"]))
        self.assertEqual(rec["bench"][0]["backend"], "cuda")
        self.assertEqual(rec["bench"][3]["samples_us"], self.bench["rows"][3]["samples_us"])
        self.assertEqual(rec["bench_runs"][0]["copy_bandwidth_gbs"], 4220.0)
        self.assertEqual(len(rec["golden"]), len(self.golden["rows"]))
        self.assertEqual(rec["replay"]["serving_measured"], 0)
        self.assertEqual(rec["backends"], ["cpu", "cuda"])
        self.assertEqual((rec["runner"], rec["shard"]), ("v100-a", "1/4"))

    def test_missing_fraction_is_computed_from_the_copy_bandwidth(self):
        row = dict(self.bench["rows"][1], bandwidth_fraction=None, bytes=4220 * 1000, median_us=2.0)
        rec = self.build(bench=[("b.json", dict(self.bench, rows=[row]))])
        # 4.22e6 bytes in 2 us = 2110 GB/s against 4220 GB/s.
        self.assertAlmostEqual(rec["bench"][0]["bandwidth_fraction"], 0.5, places=9)

    def test_fraction_of_a_median_too_small_to_divide_by_is_left_out(self):
        # 5e-324 us is 0 s in a float: no fraction, no ZeroDivisionError
        row = dict(self.bench["rows"][1], bandwidth_fraction=None, bytes=4220 * 1000, median_us=5e-324)
        rec = self.build(bench=[("b.json", dict(self.bench, rows=[row]))])
        self.assertIsNone(rec["bench"][0]["bandwidth_fraction"])

    def test_cpu_bench_gives_no_gpu(self):
        cpu = dict(self.bench, backend="cpu", gpu="cpu", driver="", cuda_version="", arch_list="")
        rec = self.build(bench=[("b.json", cpu)], arch_list="80 90")
        self.assertIsNone(rec["gpu"])
        self.assertIsNone(rec["driver"])
        self.assertEqual(rec["arch_list"], "80 90")          # from the build, not the bench
        self.assertIsNone(rec["bench_runs"][0]["driver"])  # "" is no value

    def test_decode_launch_is_carried_and_optional(self):
        rec = self.build(bench=[("b.json", dict(self.bench, decode_launch="pdl"))])
        self.assertEqual(rec["bench_runs"][0]["decode_launch"], "pdl")
        old = dict(self.bench)
        old.pop("decode_launch", None)                      # a bench file from before the key
        self.assertIsNone(self.build(bench=[("b.json", old)])["bench_runs"][0]["decode_launch"])
        with self.assertRaises(record.InputError) as cm:
            self.build(bench=[("b.json", dict(self.bench, decode_launch=1))])
        self.assertIn("decode_launch", str(cm.exception))

    def test_two_bench_files_keep_row_names_unique(self):
        rec = self.build(bench=[("bench-fp8.json", self.bench), ("bench-awq.json", self.bench)])
        names = [(r["backend"], r["name"]) for r in rec["bench"]]
        self.assertEqual(len(names), len(set(names)))
        self.assertIn(("cuda", "copy/d2d/256MiB [bench-awq]"), names)

    def test_copy_row_without_family_is_kept_with_a_warning(self):
        bad = json.loads(json.dumps(self.bench))
        del bad["rows"][0]["family"]                   # rows[0] is the copy row
        warnings = []
        rec = self.build(bench=[("b.json", bad)], warn=warnings.append)
        self.assertEqual(rec["bench"][0]["family"], "n/a")
        self.assertEqual(len(warnings), 1)
        self.assertIn("copy row without 'family'", warnings[0])
        peer = [i for i, r in enumerate(bad["rows"]) if r["kind"] == "peer"][0]
        del bad["rows"][peer]["family"]                # a peer row: kept too
        warnings.clear()
        rec = self.build(bench=[("b.json", bad)], warn=warnings.append)
        self.assertEqual(rec["bench"][peer]["family"], "n/a")
        self.assertIn("peer row without 'family'", warnings[-1])
        del bad["rows"][1]["family"]                   # a kernel row: refused
        with self.assertRaisesRegex(record.InputError, r"rows\[1\]: missing key 'family'"):
            self.build(bench=[("b.json", bad)])

    def test_git_fields_in_a_checkout(self):
        repo = os.path.join(self.dir, "repo")
        os.makedirs(repo)
        env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t",
                   GIT_COMMITTER_EMAIL="t@x")
        import subprocess
        for cmd in (["git", "init", "-q"], ["git", "commit", "-q", "--allow-empty", "-m", "x"]):
            subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True)
        rec = self.build(repo=repo)
        self.assertRegex(rec["commit"], r"^[0-9a-f]{40}$")
        self.assertFalse(rec["dirty"])
        with open(os.path.join(repo, "new.c"), "w") as f:
            f.write("int x;\n")
        self.assertTrue(self.build(repo=repo)["dirty"])      # an untracked source is dirt

    def test_bad_tool_output_is_refused_with_its_place(self):
        bad = json.loads(json.dumps(self.bench))
        del bad["rows"][2]["median_us"]
        with self.assertRaisesRegex(record.InputError, r"b\.json\.rows\[2\]: missing key 'median_us'"):
            self.build(bench=[("b.json", bad)])
        bad = json.loads(json.dumps(self.golden))
        bad["rows"][0]["rel_rms"] = "small"
        with self.assertRaisesRegex(record.InputError, r"rows\[0\]\.rel_rms: expected a number or null"):
            self.build(golden=[("g.json", bad)])
        with self.assertRaisesRegex(record.InputError, r"tool: expected \"replay\""):
            self.build(replay=("r.json", dict(self.replay, tool="bench")))
        bad = json.loads(json.dumps(self.bench))
        bad["rows"][0]["samples_us"] = []
        with self.assertRaisesRegex(record.InputError, "no samples"):
            self.build(bench=[("b.json", bad)])
        with self.assertRaisesRegex(record.InputError, "--shard"):
            self.build(shard="two")

    def test_coverage_xml(self):
        xml = ('<?xml version="1.0"?><coverage line-rate="0.8612" branch-rate="0.7" lines-covered="861" '
               'lines-valid="1000" branches-covered="70" branches-valid="100"><packages><package name="r">'
               '<classes><class filename="runtime/decision.c" line-rate="0.9" branch-rate="0.5"/>'
               '</classes></package></packages></coverage>')
        cov = record.parse_coverage_xml(self.write_json("cov.xml", xml))
        self.assertEqual(cov["line_percent"], 86.12)
        self.assertEqual(cov["files"][0], {"file": "runtime/decision.c", "line_percent": 90.0,
                                           "branch_percent": 50.0})
        rec = self.build(coverage=cov)
        self.assertEqual(rec["coverage"]["lines_covered"], 861)
        with self.assertRaises(record.InputError):
            record.parse_coverage_xml(self.write_json("bad.xml", "<coverage"))


class Write(RecordTestCase):
    def test_name_and_never_overwrite(self):
        rec = self.build(runner="gpu3")
        rec.update(commit="ab" * 20, short_commit=("ab" * 20)[:10], dirty=True)
        hist = os.path.join(self.dir, "hist")
        p1 = record.write_record(rec, hist)
        p2 = record.write_record(rec, hist)
        self.assertEqual(os.path.basename(p1), "20261202T163005Z-ababababab-dirty-gpu3.json")
        self.assertEqual(os.path.basename(p2), "20261202T163005Z-ababababab-dirty-gpu3-2.json")
        self.assertEqual(sorted(os.listdir(hist)), sorted(os.path.basename(p) for p in (p1, p2)))
        recs, problems = record.load_records(hist)
        self.assertEqual((len(recs), problems), (2, []))

    def test_main_writes_and_prints_the_path(self):
        g, b, r = (self.write_json(n, o) for n, o in
                   (("g.json", self.golden), ("b.json", self.bench), ("r.json", self.replay)))
        out, err = io.StringIO(), io.StringIO()
        hist = os.path.join(self.dir, "h")
        with redirect_stdout(out), redirect_stderr(err):
            rc = record.main(["--golden-json", g, "--bench-json", b, "--replay-json", r, "--history", hist,
                              "--repo", self.dir, "--missing", "cuda: no device"])
        self.assertEqual(rc, 0, err.getvalue())
        path = out.getvalue().strip()
        self.assertTrue(os.path.isfile(path))
        with open(path) as f:
            self.assertEqual(json.load(f)["missing"], ["cuda: no device"])

    def test_main_refuses_bad_input_and_writes_nothing(self):
        b = self.write_json("b.json", "{\"tool\": \"bench\", ")
        err = io.StringIO()
        hist = os.path.join(self.dir, "h")
        with redirect_stderr(err):
            rc = record.main(["--bench-json", b, "--history", hist, "--repo", self.dir])
        self.assertEqual(rc, 2)
        self.assertIn("b.json: not valid JSON", err.getvalue())
        self.assertFalse(os.path.exists(hist) and os.listdir(hist))


class Load(RecordTestCase):
    def setUp(self):
        super().setUp()
        self.hist = os.path.join(self.dir, "hist")
        self.good = record.write_record(self.build(), self.hist)
        with open(self.good) as f:
            self.rec = json.load(f)

    def put(self, name, obj):
        path = os.path.join(self.hist, name)
        with open(path, "w") as f:
            f.write(obj if isinstance(obj, str) else json.dumps(obj))
        return path

    def load(self):
        msgs = []
        recs, problems = record.load_records(self.hist, warn=msgs.append)
        self.assertEqual(len(msgs), len(problems))
        return recs, problems

    def test_valid(self):
        recs, problems = self.load()
        self.assertEqual(problems, [])
        self.assertEqual(len(recs), 1)
        self.assertEqual(recs[0]["_file"], self.good)

    def test_missing_key(self):
        bad = dict(self.rec)
        del bad["commit"]
        self.put("missing.json", bad)
        recs, problems = self.load()
        self.assertEqual(len(recs), 1)
        self.assertEqual(len(problems), 1)
        self.assertIn("missing.json: record: missing key 'commit' (skipped)", problems[0])

    def test_bad_json(self):
        self.put("broken.json", '{"schema_version": 1, "commit": ')
        self.put("empty.json", "")
        self.put("nan.json", '{"schema_version": NaN}')
        recs, problems = self.load()
        self.assertEqual(len(recs), 1)
        text = "\n".join(problems)
        self.assertIn("broken.json: not valid JSON", text)
        self.assertIn("empty.json: empty file", text)
        self.assertIn("nan.json: 'NaN' is not a JSON number", text)

    def test_wrong_types(self):
        cases = {
            "dirty.json": ("dirty", "no", "record.dirty: expected true or false, got \"no\""),
            "samples.json": ("bench", None, "record.bench[0].samples_us: expected a list of numbers"),
            "date.json": ("date", "yesterday", "record.date: expected a UTC ISO date"),
            "version.json": ("schema_version", 99, "knows version 1, the record says 99"),
            "list.json": (None, None, "record: expected an object, got a list"),
        }
        for name, (key, value, _) in cases.items():
            if key is None:
                self.put(name, "[1, 2]")
                continue
            bad = json.loads(json.dumps(self.rec))
            if key == "bench":
                bad["bench"][0]["samples_us"] = [1.0, "2"]
            else:
                bad[key] = value
            self.put(name, bad)
        recs, problems = self.load()
        self.assertEqual(len(recs), 1)
        for name, (_, _, want) in cases.items():
            hit = [p for p in problems if name in p]
            self.assertEqual(len(hit), 1, (name, problems))
            self.assertIn(want, hit[0])

    def test_bytes_that_are_not_text_or_numbers_too_large(self):
        # one bad file costs that file, never the run's report
        with open(os.path.join(self.hist, "latin1.json"), "wb") as f:
            f.write(b'\xff\xfe{}')
        self.put("huge.json", '{"schema_version": 1e999}')
        recs, problems = self.load()
        self.assertEqual(len(recs), 1)
        text = "\n".join(problems)
        self.assertIn("latin1.json: not UTF-8 text (byte 0: b'\\xff')", text)
        self.assertIn("huge.json: '1e999' is out of a float's range", text)

    def test_parts_the_page_reads_are_checked(self):
        # shapes check_record let through and the page then crashed on
        cases = {
            "model.json": ("v100_model", 5, "record.v100_model: expected a list, got 5"),
            "files.json": ("coverage", {"line_percent": 80.0, "branch_percent": None, "lines_covered": 8,
                                        "lines_valid": 10, "branches_covered": 0, "branches_valid": 0,
                                        "files": [1]},
                           "record.coverage.files[0]: expected an object, got 1"),
            "launch.json": ("bench_runs", None, "record.bench_runs[0].decode_launch: expected a string or null"),
        }
        for name, (key, value, _) in cases.items():
            bad = json.loads(json.dumps(self.rec))
            if key == "bench_runs":
                bad["bench_runs"][0]["decode_launch"] = ["pdl"]
            else:
                bad[key] = value
            self.put(name, bad)
        recs, problems = self.load()
        self.assertEqual(len(recs), 1)
        for name, (_, _, want) in cases.items():
            hit = [p for p in problems if name in p]
            self.assertEqual(len(hit), 1, (name, problems))
            self.assertIn(want, hit[0])

    def test_model_kernels_must_be_objects(self):
        with self.assertRaises(record.InputError) as cm:
            record.v100_model_rows({"schema": "voltgate-sass-model/1", "kernels": [1]}, "m.json")
        self.assertIn("m.json.kernels[0]: expected an object, got 1", str(cm.exception))

    def test_missing_directory_is_a_problem_not_a_crash(self):
        recs, problems = record.load_records(os.path.join(self.dir, "nope"))
        self.assertEqual(recs, [])
        self.assertIn("cannot list", problems[0])

    def test_temporary_and_other_files_are_ignored(self):
        self.put(".tmp-abc.json", "{")
        self.put("README.md", "x")
        recs, problems = self.load()
        self.assertEqual((len(recs), problems), (1, []))


if __name__ == "__main__":
    unittest.main()
