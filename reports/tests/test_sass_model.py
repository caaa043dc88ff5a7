"""reports/sass_model.py on a hand-written sm_70 listing (data/sass/), every
expected figure counted and worked out by hand from the listing."""
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import sass_model  # noqa: E402

LISTING = os.path.join(HERE, "data", "sass", "tiny.sm_70.sass")
RES = os.path.join(HERE, "data", "sass", "tiny.sm_70.res")
SCRIPT = os.path.join(HERE, "..", "sass_model.py")

# V100: 900 GB/s over 80 SMs at 1530 MHz
V100_BYTES_PER_CLK_SM = 900e9 / (80 * 1530e6)


def model_rows():
    with open(LISTING, encoding="utf-8") as f, open(RES, encoding="utf-8") as r:
        return {row["kind"]: row for row in sass_model.run_model(f, r.read(), None, "v100", None)}


class HotLoop(unittest.TestCase):
    def setUp(self):
        self.rows = model_rows()
        self.decode = self.rows["decode"]

    def test_kernel_identity(self):
        # vg_decode_kernel<DeqAWQ, NI=1, WK=4, MT=1, U=2>: the plan tile name
        self.assertEqual(self.decode["family"], "awq")
        self.assertEqual(self.decode["tile"], "decode.m8n16w4.u2")
        self.assertEqual(self.rows["tiled"]["tile"], "prefill.m128n128k64.s3")
        self.assertEqual(len(self.rows), 2)  # vg_splitk_reduce_kernel is no GEMM kernel

    def test_densest_backward_range_is_chosen(self):
        # 0x100..0x210 holds 4 HMMAs in 15 counted instructions; the tail loop
        # 0x300..0x360 one in 7; the HMMA at 0x20 is in no loop.
        self.assertEqual(self.decode["loop"], "0x100-0x210")
        self.assertEqual(self.decode["hmma"], 4)

    def test_counts_skip_never_run_code(self):
        # 17 lines in the range, less the @!PT SHFL and the MOV + CALL that
        # BRA.CONV jumps over: LOP3 x2, SHFL, HMMA x4, FFMA, LDG, LDS,
        # BRA.CONV, LDS, IADD3, ISETP, BRA
        self.assertEqual(self.decode["instructions"], 15)
        self.assertEqual(self.decode["shfl"], 1)
        self.assertEqual(self.decode["by_pipe"]["alu"], 4)   # LOP3 x2, IADD3, ISETP
        self.assertEqual(self.decode["by_pipe"]["fma"], 1)
        self.assertEqual(self.decode["by_pipe"]["mio"], 3)   # LDG.128, LDS.128 x2
        self.assertEqual(self.decode["by_pipe"]["control"], 2)

    def test_clocks_per_pipe(self):
        c = self.decode["clocks"]
        self.assertAlmostEqual(c["issue"], 15 / 4)            # one per scheduler per clock, 4 schedulers
        self.assertAlmostEqual(c["alu"], 4 * 2 / 4)           # 16 lanes: 2 cycles a warp
        self.assertAlmostEqual(c["fma"], 1 * 2 / 4)
        self.assertAlmostEqual(c["tensor"], 4 * 256 / 128 / 4)  # 256 MACs at 128 per scheduler-clock
        self.assertAlmostEqual(c["mio"], 1 + 3 * 512 / 128)   # a shuffle, three 512-byte warp accesses
        self.assertEqual(self.decode["bound"], "mio")

    def test_decode_ceiling(self):
        # 4 HMMA.884.F32 = one m8n8k4 = 1024 MACs over 8 tokens: 128 weight
        # elements; awq is half a byte each plus an FP16 scale and zero per 128
        wbytes = 128 * (0.5 + 4 / 128)
        self.assertAlmostEqual(self.decode["weight_bytes_per_iter"], wbytes)
        self.assertAlmostEqual(self.decode["ceiling"], (wbytes / V100_BYTES_PER_CLK_SM) / 13.0, places=4)
        self.assertAlmostEqual(self.decode["instructions_per_16816"], 15 * 2048 / 1024)

    def test_w_in_flight(self):
        # 128 registers x 128 threads: 4 blocks of 4 warps; awq keeps 2U = 4
        # steps of 16 rows x 128 elements x 0.5 B in flight per warp
        self.assertEqual(self.decode["warps_per_sm"], 16)
        self.assertEqual(self.decode["w_inflight_bytes_per_sm"], 16 * 4 * 1024)
        self.assertEqual(self.decode["w_inflight_needed_bytes"], int(V100_BYTES_PER_CLK_SM * 1530e6 * 600e-9))

    def test_tiled_ceiling_against_tensor_peak(self):
        t = self.rows["tiled"]
        # 16 HMMA = 4096 MACs = 8 clocks at 512 per SM-clock; 8 LDS.128 = 32
        self.assertEqual(t["macs_per_iter"], 4096)
        self.assertAlmostEqual(t["clocks"]["mio"], 32.0)
        self.assertAlmostEqual(t["ceiling"], 8.0 / 32.0)


class LoadUse(unittest.TestCase):
    """Instructions between a global load and the first that reads it."""

    @staticmethod
    def body(*lines):
        return [sass_model.Instr(16 * i, "", op, operands) for i, (op, operands) in enumerate(lines)]

    def test_distance_per_load_and_around_the_loop(self):
        body = self.body(
            ("HMMA.884.F32.F32.STEP0", "R8, R22.ROW, R12.COL, R8"),  # 0: reads R22 of load 6
            ("LDG.E.64.CONSTANT.SYS", "R14, [R6]"),                 # 1: R14, R15
            ("IMAD", "R2, R3, R4, RZ"),                             # 2
            ("PRMT", "R16, R15, 0x5410, R17"),                      # 3: reads R15: 1 between
            ("LDG.E.CONSTANT.SYS", "R30, [R6+0x4]"),                # 4
            ("MOV", "R30, RZ"),                                     # 5: overwrites it unread
            ("LDG.E.128.CONSTANT.SYS", "R20, [R8]"),                # 6: R20..R23
            ("STG.E.SYS", "[R40], R31"),                            # 7: no destination
            ("IADD3", "R31, R31, 0x1, RZ"),                         # 8
            ("BRA", "0x0"),                                         # 9
        )
        got = sass_model.load_use_distances(body)
        # load 6's reader is the HMMA at 0 of the next iteration: 7, 8, 9 between
        self.assertEqual(got, [("LDG.E.64.CONSTANT.SYS", 1, "PRMT"),
                               ("LDG.E.CONSTANT.SYS", None, None),
                               ("LDG.E.128.CONSTANT.SYS", 3, "HMMA.884.F32.F32.STEP0")])

    def test_store_operands_are_all_read(self):
        body = self.body(("LDG.E.CONSTANT.SYS", "R31, [R6]"), ("STG.E.SYS", "[R40], R31"),
                         ("BRA", "0x0"))
        self.assertEqual(sass_model.load_use_distances(body), [("LDG.E.CONSTANT.SYS", 0, "STG.E.SYS")])

    def test_uniform_registers_are_not_registers(self):
        body = self.body(("LDG.E.CONSTANT.SYS", "R4, [R6]"), ("IMAD", "R2, UR4, R9, RZ"),
                         ("IADD3", "R5, R4, 0x1, RZ"), ("BRA", "0x0"))
        self.assertEqual(sass_model.load_use_distances(body), [("LDG.E.CONSTANT.SYS", 1, "IADD3")])

    @staticmethod
    def ctrl(write=7, wait=0):
        """A second instruction word with only the scoreboard fields set:
        write scoreboard (bits 46-48, 7 none), read scoreboard 7 (49-51),
        wait mask (52-57)."""
        return wait << 52 | 7 << 49 | write << 46

    def test_waits_come_from_the_control_bits(self):
        c = self.ctrl
        body = [sass_model.Instr(0x00, "", "BRA", "0x80", c(wait=0b010000)),   # 0: waits on 4 (next iteration)
                sass_model.Instr(0x10, "", "LDG.E.128.CONSTANT.SYS", "R60, [R30]", c(write=4)),
                sass_model.Instr(0x20, "", "LDG.E.CONSTANT.SYS", "R221, [R34]", c(write=2)),
                sass_model.Instr(0x30, "", "IMAD", "R2, R3, R4, RZ", c()),
                sass_model.Instr(0x40, "", "FMUL", "R5, R221, 256", c(wait=0b000100)),  # waits on 2
                sass_model.Instr(0x50, "", "BRA", "0x0", c())]
        # the 128-bit load is waited for by the branch at the loop's head, which
        # reads none of R60..R63: 4 instructions between (0x20-0x50); the scalar
        # one by the FMUL that reads it, 1 between
        self.assertEqual(sass_model.load_wait_distances(body),
                         [("LDG.E.128.CONSTANT.SYS", 4, "BRA"), ("LDG.E.CONSTANT.SYS", 1, "FMUL")])
        self.assertEqual([d for _, d, _ in sass_model.load_use_distances(body)], [None, 1])
        # without control bits there is nothing to read
        for ins in body:
            ins.ctrl = None
        self.assertEqual(sass_model.load_wait_distances(body), [])

    def test_the_second_word_is_read_from_the_listing(self):
        listing = """
	code for sm_70
		Function : _Z16vg_decode_kernelI6DeqAWQLi1ELi4ELi1ELi2EEv7KParams
        /*0000*/                   LDG.E.CONSTANT.SYS R2, [R4] ;   /* 0x0000000004027381 */
                                                                   /* 0x000f2800001ee900 */
        /*0010*/                   @!PT SHFL.IDX PT, RZ, RZ, RZ, RZ ;  /* 0x000fe20000000f00 */
                                                                   /* 0x0001e400000e0000 */
        /*0020*/                   FMUL R3, R2, 256 ;             /* 0x4380000002037820 */
                                                                   /* 0x010fe20000400000 */
"""
        (_, _, instrs, _), = list(sass_model.iter_functions(listing.splitlines()))
        self.assertEqual([i.opcode for i in instrs], ["LDG.E.CONSTANT.SYS", "FMUL"])
        # 0x000f2800001ee900: write scoreboard 4 (bits 46-48), no wait; the
        # skipped @!PT line's word goes to no instruction; 0x010fe2...: waits on 4
        self.assertEqual([sass_model.control(i) for i in instrs], [(4, 0), (7, 0b010000)])

    def test_memory_waits_count_latencies_not_stores(self):
        c = self.ctrl
        I = sass_model.Instr
        # SM70's copy one piece at a time: load, store (waits), load, store
        # (waits): two latencies in a row
        one_by_one = [I(0x00, "", "LD.E.128.SYS", "R4, [R10]", c(write=0)),
                      I(0x10, "", "ST.E.128.SYS", "[R20], R4", c(wait=0b000001)),
                      I(0x20, "", "LD.E.128.SYS", "R4, [R12]", c(write=0)),
                      I(0x30, "", "ST.E.128.SYS", "[R20+0x220], R4", c(wait=0b000001)),
                      I(0x40, "", "BRA", "0x0", c())]
        self.assertEqual(sass_model.memory_waits(one_by_one), 2)
        # both loads first: the second store's wait is on a load that was in
        # flight during the first wait, so one latency
        batched = [I(0x00, "", "LDG.E.128.CONSTANT.SYS", "R4, [R10]", c(write=0)),
                   I(0x10, "", "LDG.E.128.CONSTANT.SYS", "R8, [R12]", c(write=1)),
                   I(0x20, "", "STS.128", "[R20], R4", c(wait=0b000001)),
                   I(0x30, "", "STS.128", "[R20+0x220], R8", c(wait=0b000010)),
                   I(0x40, "", "BRA", "0x0", c())]
        self.assertEqual(sass_model.memory_waits(batched), 1)
        # a load at the loop's end waited for at its head, across the back
        # edge, is a latency; a wait on a shared-memory load is not
        ahead = [I(0x00, "", "BRA", "0x80", c(wait=0b000001)),
                 I(0x10, "", "LDS.U.128", "R8, [R30]", c(write=2)),
                 I(0x20, "", "HMMA.884.F32.F32.STEP0", "R40, R8.ROW, R8.COL, R40", c(wait=0b000100)),
                 I(0x30, "", "LDG.E.128.CONSTANT.SYS", "R4, [R10]", c(write=0)),
                 I(0x40, "", "BRA", "0x0", c())]
        self.assertEqual(sass_model.memory_waits(ahead), 1)
        # a load one pass ahead with another wait in between was in flight
        # during that one: the X copy's wait counts, the W load's does not
        prefetch = [I(0x00, "", "HMMA.884.F32.F32.STEP0", "R40, R4.ROW, R8.COL, R40", c(wait=0b000001)),
                    I(0x10, "", "LDG.E.128.CONSTANT.SYS", "R4, [R10]", c(write=0)),    # W, next pass
                    I(0x20, "", "LDG.E.128.CONSTANT.SYS", "R12, [R14]", c(write=1)),   # X
                    I(0x30, "", "STS.128", "[R20], R12", c(wait=0b000010)),
                    I(0x40, "", "BRA", "0x0", c())]
        self.assertEqual(sass_model.memory_waits(prefetch), 1)
        for ins in ahead:
            ins.ctrl = None
        self.assertIsNone(sass_model.memory_waits(ahead))

    def test_rows_carry_the_shortest(self):
        # tiny's decode loop: its one LDG.128 (R24..R27) is read by nothing in the loop
        self.assertNotIn("load_use_min", model_rows()["decode"])


class IntoTheRecordAndReport(unittest.TestCase):
    """The model's JSON goes into the results record and onto the page."""

    def setUp(self):
        import record  # noqa: E402
        import report  # noqa: E402
        self.record, self.report = record, report
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.json")
            with redirect_stdout(io.StringIO()):
                sass_model.main([LISTING, "--res-usage", RES, "--json", path])
            self.doc = json.load(open(path))

    def test_record_keeps_the_rows_and_validates(self):
        rec = self.record.build_record(sass_model=("m.json", self.doc), repo=HERE)
        self.record.check_record(json.loads(json.dumps(rec)), "rec")
        rows = {r["tile"]: r for r in rec["v100_model"]}
        self.assertEqual(rows["decode.m8n16w4.u2"]["bound"], "mio")
        self.assertEqual(rows["decode.m8n16w4.u2"]["shfl"], 1)
        self.assertAlmostEqual(rows["prefill.m128n128k64.s3"]["ceiling"], 0.25)
        # tiny's control words set no scoreboard: no wait in the loop
        self.assertEqual(rows["decode.m8n16w4.u2"]["memory_waits_per_iter"], 0)

    def test_record_checks_a_later_key_only_where_present(self):
        rec = json.loads(json.dumps(self.record.build_record(sass_model=("m.json", self.doc), repo=HERE)))
        del rec["v100_model"][0]["memory_waits_per_iter"]      # a record from before the key
        self.record.check_record(rec, "rec")
        rec["v100_model"][0]["memory_waits_per_iter"] = "many"
        with self.assertRaises(self.record.InputError):
            self.record.check_record(rec, "rec")

    def test_record_refuses_another_schema(self):
        bad = dict(self.doc, schema="something-else")
        with self.assertRaises(self.record.InputError):
            self.record.build_record(sass_model=("m.json", bad), repo=HERE)

    def test_record_without_the_key_still_reads(self):
        rec = self.record.build_record(repo=HERE)
        rec.pop("v100_model")
        self.record.check_record(json.loads(json.dumps(rec)), "rec")

    def test_bench_rows_find_their_plans_ceiling(self):
        rows = self.record.v100_model_rows(self.doc, "m.json")
        lookup = self.report.v100_ceiling_lookup(rows)
        # a plan id names the tile the model found, on any path and split
        self.assertAlmostEqual(lookup("cuda.grouped.decode.m8n16w4.u2.sk1", "awq"), 68 / V100_BYTES_PER_CLK_SM / 13,
                               places=4)
        self.assertAlmostEqual(lookup("cuda.dense.decode.m8n16w4.u2.sk2", "awq"), 68 / V100_BYTES_PER_CLK_SM / 13,
                               places=4)
        self.assertAlmostEqual(lookup("cuda.dense.prefill.m128n128k64.s3.sk1", "fp8"), 0.25)
        self.assertIsNone(lookup("cuda.grouped.decode.m8n16w4.u2.sk1", "fp8"))    # no fp8 decode in the listing
        self.assertIsNone(lookup("cpu.dense.tile.m8n8", "awq"))
        self.assertIsNone(lookup(None, "awq"))

    def test_page_section(self):
        rows = self.record.v100_model_rows(self.doc, "m.json")
        html = self.report.v100_model_section(rows)
        self.assertIn("V100 ceiling (model)", html)
        self.assertIn("71 % (mio, 1 SHFL)", html)       # 68 B over 13 mio clocks at 7.35 B/clk
        self.assertIn("25 % (mio)", html)
        rows = [dict(r, memory_waits_per_iter=4) if r["kind"] == "decode" else r for r in rows]
        self.assertIn("71 % (mio, 1 SHFL, 4 mem waits)", self.report.v100_model_section(rows))


class CommandLine(unittest.TestCase):
    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = sass_model.main(list(args))
        return rc, out.getvalue(), err.getvalue()

    def test_json_and_table(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.json")
            rc, out, _ = self.run_main(LISTING, "--res-usage", RES, "--json", path)
            self.assertEqual(rc, 0)
            self.assertIn("decode.m8n16w4.u2", out)
            doc = json.load(open(path))
            self.assertEqual(doc["machine"], "v100")
            self.assertEqual([k["tile"] for k in doc["kernels"]], ["decode.m8n16w4.u2", "prefill.m128n128k64.s3"])

    def test_json_that_cannot_be_written_is_bad_input(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "no-such-dir", "m.json")
            rc, _, err = self.run_main(LISTING, "--res-usage", RES, "--json", path)
            self.assertEqual(rc, 2)
            self.assertIn(f"cannot write {path}", err)
            self.assertFalse(os.path.exists(os.path.dirname(path)))

    def test_require_no_shfl_fails_on_a_shuffle(self):
        rc, _, err = self.run_main(LISTING, "--require-no-shfl")
        self.assertEqual(rc, 1)
        self.assertIn("1 SHFL", err)

    def test_no_kernel_is_bad_input(self):
        with tempfile.NamedTemporaryFile("w", suffix=".sass", delete=False) as f:
            f.write("\tcode for sm_70\n\t\tFunction : other\n        /*0000*/  EXIT ;\n")
        try:
            rc, _, err = self.run_main(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(rc, 2)
        self.assertIn("no vg_decode_kernel", err)

    def test_bad_bandwidth_and_a_zero_tile_count_are_bad_input(self):
        for bw in ("inf", "nan", "0", "-5"):
            rc, _, err = self.run_main(LISTING, "--bandwidth-gbs", bw)
            self.assertEqual(rc, 2, bw)
            self.assertIn("give a finite bandwidth above 0", err)
        # a listing whose decode kernel says 0 K groups (not one this project
        # builds): named, not a ZeroDivisionError
        with open(LISTING) as f:
            text = f.read()
        self.assertIn("DeqAWQLi1ELi4E", text)
        with tempfile.NamedTemporaryFile("w", suffix=".sass", delete=False) as f:
            f.write(text.replace("DeqAWQLi1ELi4E", "DeqAWQLi1ELi0E"))
        try:
            rc, _, err = self.run_main(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(rc, 2)
        self.assertIn("a tile count of 0", err)

    def test_missing_file_is_bad_input(self):
        rc, _, err = self.run_main("/nonexistent/x.sass")
        self.assertEqual(rc, 2)
        self.assertIn("sass_model:", err)

    def test_help(self):
        p = subprocess.run([sys.executable, SCRIPT, "--help"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0)
        self.assertIn("--object", p.stdout)


if __name__ == "__main__":
    unittest.main()
