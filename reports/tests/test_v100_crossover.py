"""reports/v100_crossover.py: the V100 crossover model.  Every expected time
is worked out by hand from the formulas of the module's docstring (A1-A15),
written out below as the arithmetic, never copied from the code's output.
The drift tests read kernels/cuda/plan_list.h, gemm.cu, kernels.h and the
shared-memory formulas from the tree, so the module's copies of them cannot
drift silently."""
import io
import json
import os
import re
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import v100_crossover as vc  # noqa: E402

BW = 830e9                                  # A2's default
MODEL_BW = 900e9                            # A9: a record's rows were made against the peak
FMA_RATE = 512 * 1530e6                     # A3: multiply-adds per second per SM
PEAK = 2 * 512 * 80 * 1530e6                # A3: 125.3376 TFLOP/s
FP8_W_4096 = 4096 * 4096 + 4096 * 4096 * 4 / (128 * 128)   # bytes: E4M3 + FP32 per 128x128 block = 16781312
US = 1e6


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def row(family, tile, ceiling, kind=None):
    return {"family": family, "kind": kind or ("decode" if tile.startswith("decode.") else "tiled"),
            "tile": tile, "bound": "issue", "ceiling": ceiling, "ceiling_of": None,
            "instructions_per_16816": None, "shfl": 0, "w_inflight_bytes_per_sm": None, "regs": None}


def t_of(plan_id, family, m, n, k, ceiling):
    """The module's time (us) of one plan on a one-row model."""
    p = vc.PLANS[plan_id]
    ceils = {(family, p["tile"]): ceiling} if p["tile"] else {}
    return vc.plan_time(plan_id, ceils, family, m, n, k, vc.setting()) * US


class Times(unittest.TestCase):
    def test_tiled_wave_quantization(self):
        # mid 64x64, fp8, ceiling 0.5, M=64, K=4096: 80 N tiles are one wave
        # of 80 SMs, 81 are two; a block is 64*64*4096 multiply-adds
        block = 64 * 64 * 4096 / (0.5 * FMA_RATE) * US           # 42.84 us
        self.assertAlmostEqual(t_of("cuda.dense.mid.m64n64k128.s2.sk1", "fp8", 64, 80 * 64, 4096, 0.5), block, 6)
        self.assertAlmostEqual(t_of("cuda.dense.mid.m64n64k128.s2.sk1", "fp8", 64, 81 * 64, 4096, 0.5), 2 * block, 6)
        # padding counted: M=1 costs the whole 64-row tile
        self.assertAlmostEqual(t_of("cuda.dense.mid.m64n64k128.s2.sk1", "fp8", 1, 80 * 64, 4096, 0.5), block, 6)

    def test_tiled_never_below_dram(self):
        # ceiling 1, M=64, N=K=4096: tensor 64*64*4096/(512*1530e6) = 21.42 us
        # (64 blocks, one wave); DRAM W + X + Y = (16781312 + 524288 + 524288) / 830e9 = 21.48 us
        dram = (FP8_W_4096 + 64 * 4096 * 2 + 64 * 4096 * 2) / BW * US
        self.assertGreater(dram, 64 * 64 * 4096 / FMA_RATE * US)
        self.assertAlmostEqual(t_of("cuda.dense.mid.m64n64k128.s2.sk1", "fp8", 64, 4096, 4096, 1.0), dram, 6)

    def test_tiled_reads_w_once_per_m_tile_row(self):
        # prefill 128x128, fp8, ceiling 1, M=4096 N=K=4096: 32 M-tile rows
        # each stream W (16.8 MB > 6 MB L2): DRAM (32*W + X + Y)/BW = 652 us;
        # tensor: 1024 blocks = 13 waves x 128*128*4096/(512*1530e6) = 1111 us
        tensor = 13 * 128 * 128 * 4096 / FMA_RATE * US
        dram = (32 * FP8_W_4096 + 2 * 4096 * 4096 * 2) / BW * US
        self.assertGreater(tensor, dram)
        self.assertAlmostEqual(t_of("cuda.dense.prefill.m128n128k64.s2.sk1", "fp8", 4096, 4096, 4096, 1.0),
                               tensor, 6)

    def test_decode_passes_over_w(self):
        # 16-row decode, ceiling 1 (DRAM bound: no wave term), M=32: two
        # passes over W, X and Y once: (2*16781312 + 262144 + 262144)/830e9 = 41.07 us
        expect = (2 * FP8_W_4096 + 32 * 4096 * 2 + 32 * 4096 * 2) / BW * US
        self.assertAlmostEqual(expect, 41.0686, 3)
        self.assertAlmostEqual(t_of("cuda.dense.decode.m16n32w4.u2.sk1", "fp8", 32, 4096, 4096, 1.0), expect, 6)
        # M=16: one pass
        one = (FP8_W_4096 + 2 * 16 * 4096 * 2) / BW * US
        self.assertAlmostEqual(t_of("cuda.dense.decode.m16n32w4.u2.sk1", "fp8", 16, 4096, 4096, 1.0), one, 6)

    def test_decode_issue_bound_with_waves(self):
        # mid decode 64x64, ceiling 0.5, M=64, N=K=4096: 64 blocks (one
        # wave), a block's W 64 rows x 4096 x (1 + 4/16384) = 262208 B at
        # 0.5 x 900e9/80 B/s per SM = 46.61 us (DRAM alone: 21.48 us)
        block_bytes = 64 * 4096 * (1 + 4 / 16384)
        expect = block_bytes / (0.5 * MODEL_BW / 80) * US
        self.assertAlmostEqual(expect, 46.6148, 3)
        self.assertAlmostEqual(t_of("cuda.dense.decode.m64n64wn4wk1.u2.sk1", "fp8", 64, 4096, 4096, 0.5), expect, 6)
        # split 4: 256 blocks = 4 waves of a quarter of the bytes: the same
        # issue time, plus the reduction of 64x4096 FP32 partials x 4
        reduce = (64 * 4096 * 4 * 4 + 64 * 4096 * 2) / BW * US
        self.assertAlmostEqual(t_of("cuda.dense.decode.m64n64wn4wk1.u2.sk4", "fp8", 64, 4096, 4096, 0.5),
                               4 * (block_bytes / 4) / (0.5 * MODEL_BW / 80) * US + reduce, 6)

    def test_split_k_reduction(self):
        # mid 64x64 split 2, ceiling 1, M=64 N=K=4096: 128 blocks = 2 waves
        # of 64*64*2048 -> 21.42 us; DRAM: W + X + partials 64*4096*4*2 =
        # 19402752 B -> 23.377 us; the reduction reads the partials and
        # writes Y: (2097152 + 524288)/830e9 = 3.158 us
        tensor = 2 * 64 * 64 * 2048 / FMA_RATE * US
        dram = (FP8_W_4096 + 64 * 4096 * 2 + 64 * 4096 * 4 * 2) / BW * US
        reduce = (64 * 4096 * 4 * 2 + 64 * 4096 * 2) / BW * US
        self.assertGreater(dram, tensor)
        self.assertAlmostEqual(dram + reduce, 26.5352, 3)
        self.assertAlmostEqual(t_of("cuda.dense.mid.m64n64k128.s2.sk2", "fp8", 64, 4096, 4096, 1.0), dram + reduce, 6)

    def test_cublas_roofline(self):
        s = vc.setting()
        self.assertAlmostEqual(vc.tensor_peak_flops(s), PEAK)
        # M=64: bytes bind: (4096*4096 + 64*4096 + 64*4096)*2 / 830e9 = 41.69 us
        self.assertAlmostEqual(vc.cublas_time(64, 4096, 4096, s) * US,
                               (4096 * 4096 + 2 * 64 * 4096) * 2 / BW * US, 6)
        # M=8192: 2*8192*4096*4096 / (125.3376e12 * 0.8) = 2741.4 us
        self.assertAlmostEqual(vc.cublas_time(8192, 4096, 4096, s) * US, 2 * 8192 * 4096 * 4096 / (PEAK * 0.8) * US, 6)
        self.assertAlmostEqual(vc.cublas_time(8192, 4096, 4096, s) * US, 2741.40, 1)
        # efficiency 0.5: 4386 us
        s5 = vc.setting(cublas_eff=0.5)
        self.assertAlmostEqual(vc.cublas_time(8192, 4096, 4096, s5) * US, 2 * 8192 * 4096 * 4096 / (PEAK * 0.5) * US, 6)

    def test_dqcublas_copy(self):
        # fp8, M=64: copy reads W and writes it in FP16: (16781312 + 33554432)/830e9
        # = 60.65 us, then cuBLAS 41.69 us
        copy = (FP8_W_4096 + 4096 * 4096 * 2) / BW * US
        gemm = (4096 * 4096 + 2 * 64 * 4096) * 2 / BW * US
        self.assertAlmostEqual(copy + gemm, 102.34, 2)
        self.assertAlmostEqual(t_of(vc.DQBLAS_ID, "fp8", 64, 4096, 4096, None), copy + gemm, 6)
        # nvfp4 W: 0.5 + 1/16 bytes per element
        nv = (4096 * 4096 * (0.5 + 1 / 16) + 4096 * 4096 * 2) / BW * US
        self.assertAlmostEqual(t_of(vc.DQBLAS_ID, "nvfp4", 64, 4096, 4096, None), nv + gemm, 6)
        # fp16: cuBLAS on W itself, no copy
        self.assertAlmostEqual(t_of(vc.DQBLAS_ID, "fp16", 64, 4096, 4096, None), gemm, 6)

    def test_plan_over_shared_memory_is_not_run(self):
        # fp8 mid s4: 4 x (64 x 192 + 64 x 272) = 118784 B > 96 KB
        self.assertIsNone(vc.plan_time("cuda.dense.mid.m64n64k128.s4.sk1", {("fp8", "mid.m64n64k128.s4"): 1.0},
                                       "fp8", 64, 4096, 4096, vc.setting()))


class SharedMemory(unittest.TestCase):
    def test_sizes(self):
        smem = {pid: p["smem"] for pid, p in vc.PLANS.items()}
        # plan_list.h's comment: fp16 two-stage tiles 74 and 84 KB, the
        # 64x64x64 three-stage one 63 KB
        self.assertEqual(smem["cuda.dense.mid.m64n64k128.s2.sk1"]["fp16"], 2 * (64 * 320 + 64 * 272))   # 75776
        self.assertEqual(smem["cuda.dense.prefill.m128n128k64.s2.sk1"]["fp16"], 2 * (128 * 192 + 128 * 144))
        self.assertEqual(smem["cuda.dense.prefill.m64n64k64.s3.sk1"]["fp16"], 3 * (64 * 192 + 64 * 144))  # 64512
        self.assertEqual(75776 // 1024, 74)
        self.assertEqual(86016 // 1024, 84)
        self.assertEqual(64512 // 1024, 63)
        # W rows: fp8 128 B -> stride 192, 4-bit 64 B -> stride 64; X rows 256 B -> 272
        self.assertEqual(smem["cuda.dense.mid.m64n64k128.s4.sk1"]["fp8"], 4 * (64 * 192 + 64 * 272))      # 118784
        self.assertEqual(smem["cuda.dense.mid.m64n64k128.s4.sk1"]["nvfp4"], 4 * (64 * 64 + 64 * 272))     # 86016
        self.assertEqual(smem["cuda.dense.prefill.m128n128k64.s3.sk1"]["fp8"], 3 * (128 * 64 + 128 * 144))  # 79872
        # decode: X ring WK x U x tile_m x 136 halves + (WK-1) x tile_m x tile_n x 4;
        # fp16 keeps half the steps (U = 2 -> 1, 4 -> 2)
        self.assertEqual(smem["cuda.dense.decode.m16n16w8.u4.sk1"]["fp8"], 8 * 4 * 16 * 272 + 7 * 16 * 16 * 4)  # 146432
        self.assertEqual(smem["cuda.dense.decode.m16n16w8.u2.sk1"]["fp8"], 8 * 2 * 16 * 272 + 7 * 16 * 16 * 4)  # 76800
        self.assertEqual(smem["cuda.dense.decode.m16n16w8.u4.sk1"]["fp16"], 8 * 2 * 16 * 272 + 7 * 16 * 16 * 4)
        self.assertEqual(smem["cuda.dense.decode.m64n64wn4wk2.u2.sk1"]["fp8"], 2 * 2 * 64 * 272 + 64 * 64 * 4)

    def test_what_fits_a_v100(self):
        self.assertEqual(vc.SMEM_LIMIT, 96 * 1024)
        for fam in ("fp16", "fp8"):
            self.assertFalse(vc.fits("cuda.dense.mid.m64n64k128.s4.sk1", fam))
        self.assertFalse(vc.fits("cuda.dense.prefill.m128n128k64.s3.sk1", "fp16"))
        self.assertTrue(vc.fits("cuda.dense.prefill.m128n128k64.s3.sk1", "fp8"))      # 79872 B
        self.assertTrue(vc.fits("cuda.dense.mid.m64n64k128.s4.sk1", "nvfp4"))         # 86016 B
        self.assertFalse(vc.fits("cuda.dense.decode.m16n16w8.u4.sk1", "fp8"))

    def test_formulas_match_the_headers(self):
        # the lines the module's _decode_smem and _tiled_smem follow
        cfg = read(os.path.join(ROOT, "kernels", "cuda", "decode_cfg.cuh"))
        for line in ("static constexpr int U = Deq::kBits == 16 ? (UU / 2 > 1 ? UU / 2 : 1) : UU;",
                     "static constexpr int BN = kWarpN * WN;", "static constexpr int kWarpN = 16 * NI;",
                     "static constexpr int BM = 8 * MT;", "static constexpr int kXStride = kStepK + 8;",
                     "static constexpr int kXSlot = BM * kXStride;",
                     "static constexpr int kXSmem = WK * U * kXSlot * 2;",
                     "static constexpr int kRedSmem = (WK - 1) * BM * BN * 4;",
                     "static constexpr int kSmem = kXSmem + kRedSmem;"):
            self.assertIn(line, cfg, "decode_cfg.cuh changed: update v100_crossover._decode_smem")
        gk = read(os.path.join(ROOT, "kernels", "cuda", "gemm_kernel.cuh"))
        for line in ("static constexpr int value = BYTES + ((64 - (BYTES % 128) + 128) % 128);",
                     "static constexpr int value = BYTES + ((16 - (BYTES % 32) + 32) % 32);",
                     "static constexpr int kWRowBytes = BK * Deq::kBits / 8;",
                     "static constexpr int kXStride = XStride<BK * 2>::value;",
                     "static constexpr int kStageBytes = BN * kWStride + BM * kXStride;",
                     "static constexpr int kSmemMain = STAGES * kStageBytes;",
                     "static constexpr int kRedBytes = (WK - 1) * BM * BN * 4;",
                     "static constexpr int kSmem = kSmemMain > kRedBytes ? kSmemMain : kRedBytes;"):
            self.assertIn(line, gk, "gemm_kernel.cuh changed: update v100_crossover._tiled_smem")


def plan_list_dense_entries():
    """(macro, args) of plan_list.h's dense entries, in order, parsed from the file."""
    text = read(os.path.join(ROOT, "kernels", "cuda", "plan_list.h"))
    body = text[text.index("#define VG_CUDA_PLAN_LIST("):text.index("/* The ids, from")]
    out = []
    for macro, args in re.findall(r"\b(DECODE_WN|DECODE|TILED|DQBLAS)\((dense[^)]*)\)", body):
        parts = [a.strip() for a in args.split(",")[1:]]
        out.append((macro, tuple(p if p in ("mid", "prefill") else int(p) for p in parts)))
    return out


def voltgate_tool():
    """The built voltgate (VG_TOOL, else build/bin/voltgate), or None."""
    tool = os.environ.get("VG_TOOL") or os.path.join(ROOT, "build", "bin", "voltgate")
    return tool if os.access(tool, os.X_OK) else None


class RuleAgainstC(unittest.TestCase):
    """v100_crossover.sm70_rule against the C rule itself (`voltgate plans
    --rule --sm 70`, vg_cuda_heuristic_for with a V100's shared memory and
    the dequantize + cuBLAS kind offered), over every family, four N, and
    rows on both sides of every threshold: two implementations, one
    answer."""
    ROWS = [1, 2, 4, 8, 9, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 65, 96, 127, 128, 129, 144,
            145, 192, 255, 256, 257, 512, 1024, 4096, 8192]

    def rule_lines(self, *args):
        import subprocess
        tool = voltgate_tool()
        if not tool:
            self.skipTest("voltgate is not built (build/bin/voltgate)")
        proc = subprocess.run([tool, "plans", "--rule", *args], capture_output=True, text=True, timeout=60)
        if proc.returncode != 0 and "built without CUDA" in proc.stderr:
            self.skipTest("voltgate built without CUDA")
        return proc

    def test_port_matches_the_c_rule(self):
        for n, k in ((4096, 4096), (4096, 14336), (8192, 4096), (1024, 4096), (2048, 4096), (2560, 4096),
                     (2624, 4096)):
            proc = self.rule_lines("--sm", "70", "--family", "all", "--n", str(n), "--k", str(k),
                                   "--rows", ",".join(map(str, self.ROWS)))
            self.assertEqual(proc.returncode, 0, proc.stderr)
            seen = 0
            for line in proc.stdout.splitlines():
                f = line.split()
                # sm70 FAMILY dense nN kK rows R PLAN KIND
                family, rows, plan = f[1], int(f[6]), f[7]
                self.assertEqual(vc.sm70_rule(family, rows, n), plan, f"{family} n={n} k={k} rows={rows}")
                seen += 1
            self.assertEqual(seen, len(vc.FAMILIES) * len(self.ROWS))

    def test_bad_input(self):
        proc = self.rule_lines("--sm", "61")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--sm 61 is not an arch the rule knows", proc.stderr)
        proc = self.rule_lines("--rows", "0,17")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("bad --rows list", proc.stderr)
        proc = self.rule_lines("--family", "int3")
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(proc.stdout, "")


class Drift(unittest.TestCase):
    def test_dense_plans_match_plan_list(self):
        self.assertEqual(plan_list_dense_entries(), list(vc.DENSE_PLAN_LIST),
                         "kernels/cuda/plan_list.h changed: update v100_crossover.DENSE_PLAN_LIST")

    def test_plan_ids_and_rows(self):
        p = vc.PLANS["cuda.dense.decode.m64n64wn4wk1.u2.sk4"]
        self.assertEqual((p["kind"], p["tile_m"], p["tile_n"], p["split"], p["min_rows"], p["max_rows"]),
                         ("mid decode", 64, 64, 4, 33, 256))
        p = vc.PLANS["cuda.dense.decode.m16n32w4.u2.sk2"]
        self.assertEqual((p["kind"], p["tile_m"], p["tile_n"], p["split"], p["min_rows"], p["max_rows"]),
                         ("decode", 16, 32, 2, 0, 64))
        p = vc.PLANS["cuda.dense.prefill.m64n64k64.s3.sk1"]
        self.assertEqual((p["kind"], p["tile"], p["tile_k"], p["max_rows"]), ("tiled prefill", "prefill.m64n64k64.s3",
                                                                             64, 0))
        self.assertEqual(vc.PLANS[vc.DQBLAS_ID]["min_rows"], 17)
        self.assertEqual(len(vc.PLANS), 35)   # 34 kernel plans + dqcublas

    def test_min_rows_and_dq_constants(self):
        gemm = read(os.path.join(ROOT, "kernels", "cuda", "gemm.cu"))
        self.assertIn("#define MID_DECODE_MIN_ROWS_dense(tile_m) (tile_m / 2 + 1)", gemm)  # DECODE_WN
        self.assertIn("MID_DECODE_MIN_ROWS_##path(tile_m)}}", gemm)
        self.assertIn("VG_KIND_DECODE, 0}}", gemm)                     # DECODE min_rows
        self.assertIn("#define DQBLAS_MIN_ROWS (GROUPED_DECODE_MAX_TOKENS + 1)", gemm)
        types = read(os.path.join(ROOT, "include", "voltgate", "types.h"))
        self.assertRegex(types, r"#define GROUPED_DECODE_MAX_TOKENS 16\b")
        kh = read(os.path.join(ROOT, "kernels", "kernels.h"))
        m = re.search(r"#define VG_CUDA_DQBLAS_ROWS_SM70 (\d+)", kh)
        self.assertEqual(int(m.group(1)), vc.DQBLAS_ROWS_SM70,
                         "kernels.h VG_CUDA_DQBLAS_ROWS_SM70 changed: update v100_crossover")
        self.assertIn("return major >= 8 ? VG_CUDA_DQBLAS_ROWS_SM80 : VG_CUDA_DQBLAS_ROWS_SM70;", gemm)



class Rule(unittest.TestCase):
    D = "cuda.dense.decode."

    def test_decode_boundaries(self):
        r = vc.sm70_rule
        # N=4096: 256 tiles of 16 rows (>= 192)
        self.assertEqual(r("fp8", 1, 4096), self.D + "m8n16w8.u2.sk1")
        self.assertEqual(r("fp8", 8, 4096), self.D + "m8n16w8.u2.sk1")
        self.assertEqual(r("fp8", 9, 4096), self.D + "m16n16w8.u2.sk1")       # 76800 B fits
        self.assertEqual(r("fp8", 16, 4096), self.D + "m16n16w8.u2.sk1")
        # N=1024: 64 tiles (48-191): the 16-warp plan (77312 B fits), and at
        # 9-16 rows the 4-step 8-warp plan does not fit (146432 B): the next
        self.assertEqual(r("fp8", 8, 1024), self.D + "m8n16w16.u2.sk1")
        self.assertEqual(r("fp8", 9, 1024), self.D + "m16n16w8.u2.sk1")
        self.assertEqual(r("fp16", 9, 1024), self.D + "m16n16w8.u4.sk1")       # fp16 halves U: 76800 B
        # N=512: 32 tiles: split 4
        self.assertEqual(r("fp8", 8, 512), self.D + "m8n32w4.u2.sk4")
        self.assertEqual(r("fp8", 9, 512), self.D + "m16n32w4.u2.sk4")

    def test_mid_prefill_and_dq_boundaries(self):
        r = vc.sm70_rule
        # the quantized families at 17-32 rows: the 32-token mid decode plan, at
        # 33-64 the 64-token one, the fewest splits that make 128 blocks of 64
        # weight rows, 4 at most (D52, D53)
        self.assertEqual(r("fp8", 33, 4096), self.D + "m64n64wn4wk1.u2.sk2")
        self.assertEqual(r("nvfp4", 48, 8192), self.D + "m64n64wn4wk1.u2.sk1")
        self.assertEqual(r("awq", 64, 2048), self.D + "m64n64wn4wk1.u2.sk4")
        self.assertEqual(r("nvfp4", 17, 8192), self.D + "m32n64wn4wk1.u2.sk1")
        self.assertEqual(r("nvfp4", 17, 4096), self.D + "m32n64wn4wk1.u2.sk2")
        self.assertEqual(r("awq", 32, 2048), self.D + "m32n64wn4wk1.u2.sk4")
        self.assertEqual(r("mxfp4", 32, 1024), self.D + "m32n64wn4wk1.u2.sk4")
        self.assertEqual(r("fp8", 32, 4096), self.D + "m32n64wn4wk1.u2.sk2")
        self.assertEqual(r("fp16", 32, 4096), vc.DQBLAS_ID)
        self.assertEqual(r("fp8", 64, 4096), self.D + "m64n64wn4wk1.u2.sk2")
        self.assertEqual(r("fp8", 64, 1024), self.D + "m64n64wn4wk1.u2.sk4")          # 16 N tiles of 64
        self.assertEqual(r("fp16", 64, 1024), vc.DQBLAS_ID)
        self.assertEqual(r("fp8", 65, 4096), self.D + "m64n64wn4wk1.u2.sk1")          # mid decode
        self.assertEqual(r("mxfp4", 128, 14336), self.D + "m64n64wn4wk1.u2.sk1")
        self.assertEqual(r("fp8", 129, 4096), "cuda.dense.prefill.m128n128k64.s2.sk1")  # s3 (79872 B) fits too
        self.assertEqual(r("awq", 255, 4096), "cuda.dense.prefill.m128n128k64.s2.sk1")
        self.assertEqual(r("fp8", 65, 1024), self.D + "m64n64wn4wk1.u2.sk2")          # N < 2048: to 256
        self.assertEqual(r("nvfp4", 255, 1024), self.D + "m64n64wn4wk1.u2.sk2")
        self.assertEqual(r("fp8", 256, 4096), vc.DQBLAS_ID)
        self.assertEqual(r("nvfp4", 8192, 14336), vc.DQBLAS_ID)
        # fp16: cuBLAS on W from 17 rows; 16 rows still decode
        self.assertEqual(r("fp16", 16, 4096), self.D + "m16n16w8.u2.sk1")
        self.assertEqual(r("fp16", 17, 4096), vc.DQBLAS_ID)


class Crossover(unittest.TestCase):
    ROWS = [row("fp8", "decode.m16n32w4.u2", 1.0), row("fp8", "decode.m8n16w8.u2", 1.0),
            row("fp8", "decode.m64n64wn4wk1.u2", 0.5), row("fp8", "mid.m64n64k128.s2", 1.0),
            row("fp8", "prefill.m128n128k64.s3", 0.5)]

    def result(self, m, n=4096, k=4096):
        return vc.crossover(self.ROWS, families=("fp8",), shapes=((n, k),), ms=(m,))[0]

    def test_kinds_best_and_rule(self):
        r = self.result(64)
        # decode 16-row: 4 passes (64 rows); mid decode at 0.5: 46.61 us;
        # mid tile split 1: 21.48 us (DRAM), split 2: 26.54 us
        self.assertAlmostEqual(r["kinds"]["decode"][0], (4 * FP8_W_4096 + 2 * 64 * 4096 * 2) / BW * US, 6)
        self.assertEqual(r["kinds"]["decode"][1], "cuda.dense.decode.m16n32w4.u2.sk1")
        mid = (FP8_W_4096 + 2 * 64 * 4096 * 2) / BW * US
        self.assertEqual(r["kinds"]["tiled mid"], (mid, "cuda.dense.mid.m64n64k128.s2.sk1"))
        # prefill 128x128 at 0.5: one wave of 171.3 us
        self.assertAlmostEqual(r["kinds"]["tiled prefill"][0], 128 * 128 * 4096 / (0.5 * FMA_RATE) * US, 6)
        self.assertEqual(r["best"][1], "cuda.dense.mid.m64n64k128.s2.sk1")
        # the rule (33-64 rows, 64 N tiles of 64: split 2, D53) takes the mid
        # decode plan: 128 blocks = 2 waves of 64 x 2048 fp8 elements at 0.5
        # x 900e9/80 B/s per SM, then the reduction of 2 partials: 49.8 us,
        # flagged against this fixture's mid tile at a ceiling of 1.0
        rule = (2 * 64 * 2048 * (1 + 4 / 16384) / (0.5 * MODEL_BW / 80)
                + (64 * 4096 * 4 * 2 + 64 * 4096 * 2) / BW) * US
        self.assertEqual(r["rule_plan"], "cuda.dense.decode.m64n64wn4wk1.u2.sk2")
        self.assertAlmostEqual(r["rule_us"], rule, 6)
        self.assertAlmostEqual(r["rule_over_best"], rule / mid, 9)
        self.assertTrue(r["flag"])
        self.assertAlmostEqual(r["cublas_us"], (4096 * 4096 + 2 * 64 * 4096) * 2 / BW * US, 6)

    def test_floor_bounds_how_far_any_kernel_can_beat_cublas(self):
        # A16 by hand.  fp8, N=K=4096, M=128: the multiply-adds at the
        # full peak, 2*128*4096^2 / 125.3376e12 = 34.27 us, outlast the
        # bytes (16781312 of W + 128*4096*2 of X + 128*4096*2 of Y at
        # 830 GB/s = 22.74 us); cuBLAS (A12) is memory-bound at 42.95 us
        # (the FP16 W, X and Y), just above 34.27 / 0.8 = 42.84: 1.253x, under the
        # 1.5x issue 31 asks at 128 rows, whatever kernel is built
        r = self.result(128)
        tensor = 2 * 128 * 4096 * 4096 / PEAK * US
        self.assertAlmostEqual(tensor, 34.27, 2)
        self.assertGreater(tensor, (FP8_W_4096 + 2 * 128 * 4096 * 2) / BW * US)
        self.assertAlmostEqual(r["floor_us"], tensor, 6)
        cublas = (4096 * 4096 + 2 * 128 * 4096) * 2 / BW * US
        self.assertAlmostEqual(r["cublas_us"], cublas, 6)
        self.assertAlmostEqual(r["cublas_over_floor"], cublas / tensor, 9)
        self.assertLess(r["cublas_over_floor"], 1.5)
        # M=32: the bytes bind (fp8 W 16781312 + 2*32*4096*2 = 17305600 B,
        # 20.85 us; the tensor term 8.57 us), cuBLAS 41.05 us: 1.969x
        r = self.result(32)
        floor = (FP8_W_4096 + 2 * 32 * 4096 * 2) / BW * US
        self.assertAlmostEqual(r["floor_us"], floor, 6)
        self.assertAlmostEqual(r["cublas_over_floor"], (4096 * 4096 + 2 * 32 * 4096) * 2 / BW * US / floor, 9)
        self.assertGreater(r["cublas_over_floor"], 1.5)

    # the mid decode plans made slow (0.1), the prefill tile as above
    SLOW_MID = [row("fp8", "decode.m64n64wn4wk1.u2", 0.1), row("fp8", "prefill.m128n128k64.s3", 0.5)]

    def test_flag_when_the_rule_is_over_115_percent(self):
        # M=128: the rule (fp8, 65-128 rows, N >= 2048) takes mid decode
        # split 1: 128 blocks, 2 waves of 262208 B at 0.1 x 900e9/80 B/s per
        # SM = 466.1 us; the prefill tile takes one wave of
        # 128*128*4096/(0.5*512*1530e6) = 171.3 us and the dequantize +
        # cuBLAS plan less (test_dqcublas_copy works it out):
        # over 2.7x either way, flagged
        r = vc.crossover(self.SLOW_MID, families=("fp8",), shapes=((4096, 4096),), ms=(128,))[0]
        rule = 2 * 64 * 4096 * (1 + 4 / 16384) / (0.1 * MODEL_BW / 80) * US
        prefill = 128 * 128 * 4096 / (0.5 * FMA_RATE) * US
        self.assertAlmostEqual(rule, 466.1, 1)
        self.assertEqual(r["rule_plan"], "cuda.dense.decode.m64n64wn4wk1.u2.sk1")
        self.assertAlmostEqual(r["rule_us"], rule, 6)
        self.assertAlmostEqual(r["kinds"]["tiled prefill"][0], prefill, 6)
        self.assertEqual(r["best"][1], vc.DQBLAS_ID)
        self.assertLess(r["best"][0], prefill)
        self.assertAlmostEqual(r["rule_over_best"], rule / r["best"][0], 9)
        self.assertGreater(r["rule_over_best"], rule / prefill)
        self.assertTrue(r["flag"])

    def test_rule_within_115_percent_is_not_flagged(self):
        # M=128: the prefill 128x128 s3 at 0.5 would be 32 blocks, one wave
        # of 128*128*4096/(0.5*512*1530e6) = 171.3 us.  The mid decode plans
        # at 0.5 (issue bound, a block's W at 0.5 x 900e9/80 B/s per SM):
        #   split 1: 128 blocks = 2 waves x 262208 B             -> 93.23 us
        #   split 2: 256 blocks = 4 waves x 131104 B + reduction -> 93.23 + 6.32
        #   split 4: 512 blocks = 7 waves x 65552 B + reduction
        #            (128*4096*4*4 + 128*4096*2)/830e9 = 11.37    -> 81.58 + 11.37 = 92.95 us
        # (DRAM at split 4: 2 passes of W + X + partials = 51.8 us, below)
        # The rule takes split 1: 93.23 / 92.95 = 1.003, not flagged.
        r = self.result(128)
        prefill = 128 * 128 * 4096 / (0.5 * FMA_RATE) * US
        per_sm = 0.5 * MODEL_BW / 80
        sk4 = 7 * 64 * 1024 * (1 + 4 / 16384) / per_sm * US + (128 * 4096 * 4 * 4 + 128 * 4096 * 2) / BW * US
        sk1 = 2 * 64 * 4096 * (1 + 4 / 16384) / per_sm * US
        self.assertAlmostEqual(sk4, 92.946, 2)
        self.assertLess(sk4, sk1)
        self.assertAlmostEqual(r["kinds"]["tiled prefill"][0], prefill, 6)
        self.assertEqual(r["rule_plan"], "cuda.dense.decode.m64n64wn4wk1.u2.sk1")
        self.assertAlmostEqual(r["rule_us"], sk1, 6)
        self.assertEqual(r["best"][1], "cuda.dense.decode.m64n64wn4wk1.u2.sk4")
        self.assertAlmostEqual(r["best"][0], sk4, 6)
        self.assertAlmostEqual(r["rule_over_best"], sk1 / sk4, 9)
        self.assertFalse(r["flag"])

    def test_kinds_offered_by_rows(self):
        self.assertIsNone(self.result(16)["kinds"]["mid decode"])     # from 33 rows
        self.assertIsNone(self.result(16)["kinds"]["dq+cuBLAS"])      # from 17 rows
        self.assertIsNotNone(self.result(17)["kinds"]["dq+cuBLAS"])
        self.assertIsNone(self.result(65)["kinds"]["decode"])         # 16-row plans up to 64
        self.assertIsNone(self.result(65)["kinds"]["tiled mid"])
        self.assertIsNone(self.result(257)["kinds"]["mid decode"])
        # the rule's pick without a modelled kernel: no time, no ratio
        r = vc.crossover([row("fp8", "mid.m64n64k128.s2", 1.0)], families=("fp8",), shapes=((4096, 4096),),
                         ms=(1,))[0]
        self.assertIsNone(r["rule_us"])
        self.assertIsNone(r["rule_over_best"])
        self.assertFalse(r["flag"])

    def test_two_kernels_of_a_tile_take_the_higher_ceiling(self):
        c = vc.ceilings([row("nvfp4", "decode.m64n64wn4wk1.u2", 0.47), row("nvfp4", "decode.m64n64wn4wk1.u2", 0.5)])
        self.assertEqual(c[("nvfp4", "decode.m64n64wn4wk1.u2")], 0.5)

    def test_real_model_if_built(self):
        path = os.path.join(ROOT, "build", "sm70", "model.sm_70.json")
        if not os.path.exists(path):
            self.skipTest("no build/sm70/model.sm_70.json (ci/sm70 build)")
        rows, bw = vc.rows_from_file(path, as_record=False)
        res = vc.crossover(rows, model_bw_gbs=bw)
        self.assertEqual(len(res), 5 * 2 * 10)
        self.assertTrue(all(r["best"] for r in res))


class Scan(unittest.TestCase):
    """scan_bands: the rows where the SM70 rule's pick is modelled over the
    threshold x the best, merged into bands of one rule plan and one best
    plan.  fp8, N = K = 4096; the mid decode tile at a ceiling of 1.0 (DRAM
    bound) and the 2-stage 128x128 prefill tile at 0.5."""
    ROWS = [row("fp8", "decode.m64n64wn4wk1.u2", 1.0), row("fp8", "prefill.m128n128k64.s2", 0.5)]

    def bands(self, ms, over=vc.FLAG_RATIO):
        return vc.scan_bands(vc.crossover(self.ROWS, families=("fp8",), shapes=((4096, 4096),), ms=ms), over)

    def test_bands(self):
        b = self.bands(range(120, 258))
        # 120-128: the rule's pick (mid decode, split 1 from N = 2048) is
        # the best.  129-255: the rule takes the prefill tile, one wave of
        # 2 x 32 blocks of 128 x 128 x 4096 at 0.5 of 512 x 1530e6 FMA/s
        # (171.3 us; its DRAM term, 2 passes, is 42 us); the mid decode
        # plan at split 1 is DRAM-bound: 3 passes over W to 192 rows, 4
        # above, X and Y once.  256: the rule's dequantize + cuBLAS (copy
        # (W + 4096 x 4096 x 2) / BW, then cuBLAS 2MNK / (0.8 peak)) against
        # the mid decode plan's 4 passes.  257: only the prefill tile (3 M
        # tiles: 2 waves) and dequantize + cuBLAS are offered, the rule's
        # pick is the best.
        prefill = 128 * 128 * 4096 / (0.5 * FMA_RATE) * US
        mid = lambda m: (-(-m // 64) * FP8_W_4096 + m * 4096 * 2 * 2) / BW * US  # noqa: E731
        dq = ((FP8_W_4096 + 4096 * 4096 * 2) / BW + 2 * 256 * 4096 * 4096 / (0.8 * PEAK)) * US
        self.assertEqual([(x["m_first"], x["m_last"], x["rule_plan"], x["best_plan"]) for x in b],
                         [(129, 255, "cuda.dense.prefill.m128n128k64.s2.sk1", "cuda.dense.decode.m64n64wn4wk1.u2.sk1"),
                          (256, 256, "cuda.dense.dqcublas", "cuda.dense.decode.m64n64wn4wk1.u2.sk1")])
        self.assertAlmostEqual(b[0]["rule_us"][0], prefill, 6)
        self.assertAlmostEqual(b[0]["rule_us"][1], prefill, 6)
        self.assertAlmostEqual(b[0]["best_us"][0], mid(129), 6)
        self.assertAlmostEqual(b[0]["best_us"][1], mid(255), 6)
        self.assertAlmostEqual(b[0]["ratio"][0], prefill / mid(255), 9)
        self.assertAlmostEqual(b[0]["ratio"][1], prefill / mid(129), 9)
        self.assertAlmostEqual(b[1]["rule_us"][0], dq, 6)
        self.assertAlmostEqual(b[1]["ratio"][0], dq / mid(256), 9)
        self.assertEqual((b[0]["family"], b[0]["n"], b[0]["k"]), ("fp8", 4096, 4096))

    def test_threshold_and_breaks(self):
        # 256's ratio is 1.70, the 129-255 band's 2.0-2.7: at 1.8 only the band
        self.assertEqual([(x["m_first"], x["m_last"]) for x in self.bands(range(120, 258), over=1.8)],
                         [(129, 255)])
        # a row under the threshold between two flagged rows splits the band
        b = self.bands((129, 130, 16, 131))
        self.assertEqual([(x["m_first"], x["m_last"]) for x in b], [(129, 130), (131, 131)])
        self.assertEqual(self.bands((1, 16, 128)), [])


class BadInput(unittest.TestCase):
    def test_errors(self):
        cases = [([], "no model rows"),
                 ([{"family": "fp8", "kind": "decode"}], "missing or non-string 'tile'"),
                 ([row("fp8", "decode.bogus", 1.0)], "unknown tile 'decode.bogus'"),
                 ([row("fp8", "mid.m64n64k128.s2", 1.0, kind="decode")], "unknown tile"),
                 ([row("int3", "mid.m64n64k128.s2", 1.0)], "unknown family 'int3'"),
                 ([row("fp8", "mid.m64n64k128.s2", 1.0, kind="cpu")], "unknown kind"),
                 ([row("fp8", "mid.m64n64k128.s2", 1.5)], "not a fraction"),
                 ([row("fp8", "mid.m64n64k128.s2", None)], "no model row with a ceiling"),
                 (["x"], "expected an object")]
        for rows, msg in cases:
            with self.assertRaises(vc.ModelError) as cm:
                vc.crossover(rows)
            self.assertIn(msg, str(cm.exception))
        with self.assertRaises(vc.ModelError):
            vc.setting(bw_gbs=0)
        with self.assertRaises(vc.ModelError):
            vc.setting(cublas_eff=1.5)

    def test_grouped_only_tile_is_skipped(self):
        # a well-formed tile no dense plan runs: not an error, not modelled
        c = vc.ceilings([row("fp8", "mid.m64n64k64.s3", 1.0), row("fp8", "mid.m64n64k128.s2", 1.0)])
        self.assertEqual(list(c), [("fp8", "mid.m64n64k128.s2")])


def run_cli(args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rc = vc.main(args)
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


class CommandLine(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="vg-v100x-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name, obj):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(obj if isinstance(obj, str) else json.dumps(obj))
        return path

    def test_help(self):
        rc, out, _ = run_cli(["--help"])
        self.assertEqual(rc, 0)
        self.assertIn("LOWER BOUNDS", out)
        self.assertIn("ESTIMATES", out)

    def test_model_file_table_and_json(self):
        doc = {"schema": "voltgate-sass-model/1", "bandwidth_gbs": 900.0, "kernels": Crossover.ROWS}
        path, js = self.write("m.json", doc), os.path.join(self.dir, "x.json")
        rc, out, err = run_cli(["--model", path, "--family", "fp8", "--json", js])
        self.assertEqual(rc, 0, err)
        self.assertIn("native plans lower bounds, cuBLAS columns estimates", out)
        self.assertIn("assumption", out)
        got = json.loads(read(js))
        self.assertEqual(got["lower_bound"], {"native": True, "cublas": False, "dq+cuBLAS": False})
        self.assertEqual(len(got["rows"]), 20)

    def test_bad_input_exits_2(self):
        rc, _, err = run_cli(["--model", os.path.join(self.dir, "none.json")])
        self.assertEqual(rc, 2)
        self.assertIn("v100_crossover:", err)
        rc, _, err = run_cli(["--model", self.write("bad.json", "{not json")])
        self.assertEqual(rc, 2)
        rc, _, err = run_cli(["--model", self.write("e.json", {"schema": "voltgate-sass-model/1", "kernels": []})])
        self.assertEqual(rc, 2)
        self.assertIn("no model rows", err)
        rc, _, err = run_cli(["--record", self.write("r.json", {"schema": "x"})])
        self.assertEqual(rc, 2)
        self.assertIn("no v100_model", err)
        rc, _, err = run_cli(["--record", self.write("r5.json", {"schema": "x", "v100_model": 5})])
        self.assertEqual(rc, 2)
        self.assertIn("v100_model is not a list", err)
        rc, _, err = run_cli(["--model", self.write("k.json", {"schema": "voltgate-sass-model/1", "kernels": [1]})])
        self.assertEqual(rc, 2)
        self.assertIn("expected an object, got 1", err)
        rc, _, err = run_cli([])
        self.assertEqual(rc, 2)


class ScanCommandLine(unittest.TestCase):
    setUp, tearDown, write = CommandLine.setUp, CommandLine.tearDown, CommandLine.write

    def test_scan(self):
        path, js = self.write("m.json", {"schema": "voltgate-sass-model/1", "bandwidth_gbs": 900.0,
                                         "kernels": Scan.ROWS}), os.path.join(self.dir, "scan.json")
        rc, out, err = run_cli(["--model", path, "--scan", "--family", "fp8", "--json", js])
        self.assertEqual(rc, 0, err)
        n_points = len(vc.SCAN_NS) * len(vc.SCAN_KS) * len(vc.SCAN_MS)
        self.assertIn(f"V100 model scan: {n_points} points", out)
        line = [l for l in out.splitlines() if l.startswith("fp8  ") and " 4096x4096 " in l and " 129-255 " in l]
        self.assertEqual(len(line), 1, out)
        self.assertIn("prefill.m128n128k64.s2.sk1", line[0])
        self.assertIn("decode.m64n64wn4wk1.u2.sk1", line[0])
        got = json.loads(read(js))
        self.assertEqual(got["schema"], "voltgate-v100-scan/1")
        self.assertEqual(got["points"], n_points)
        self.assertIn({"m_first": 129, "m_last": 255}, [{k: b[k] for k in ("m_first", "m_last")} for b in got["bands"]
                                                        if (b["n"], b["k"]) == (4096, 4096)])
        # nothing over 100x: the scan says so
        rc, out, _ = run_cli(["--model", path, "--scan", "--family", "fp8", "--over", "100"])
        self.assertEqual(rc, 0)
        self.assertEqual(out.splitlines()[1], "none")

    def test_json_that_cannot_be_written(self):
        # both modes: exit 2 naming the file, no traceback, no file
        path = self.write("m.json", {"schema": "voltgate-sass-model/1", "kernels": Scan.ROWS})
        target = os.path.join(self.dir, "no-such-dir", "x.json")
        for extra in ([], ["--scan"]):
            rc, _, err = run_cli(["--model", path, "--family", "fp8", "--json", target] + extra)
            self.assertEqual(rc, 2, extra)
            self.assertIn(f"cannot write {target}", err)
            self.assertNotIn("Traceback", err)
            self.assertFalse(os.path.exists(os.path.dirname(target)))

    def test_scan_bad_arguments(self):
        path = self.write("m.json", {"schema": "voltgate-sass-model/1", "kernels": Scan.ROWS})
        rc, _, err = run_cli(["--model", path, "--scan", "--machine", "h100"])
        self.assertEqual(rc, 2)
        self.assertIn("--machine v100 only", err)
        rc, _, err = run_cli(["--model", path, "--scan", "--over", "1"])
        self.assertEqual(rc, 2)
        self.assertIn("above 1", err)


class Page(unittest.TestCase):
    def test_section(self):
        import report_page
        self.assertEqual(report_page.v100_crossover_section(None), "")
        self.assertEqual(report_page.v100_crossover_section([]), "")
        # without the mid tile no row of the fixture is flagged
        quiet = [r for r in Crossover.ROWS if not r["tile"].startswith("mid.")]
        self.assertIn('class="bad"', report_page.v100_crossover_section(Crossover.ROWS))  # M=64
        html = report_page.v100_crossover_section(quiet)
        self.assertIn("V100 crossover (model)", html)
        self.assertIn("lower bounds", html)
        self.assertIn("Modelled, not measured", html)
        self.assertNotIn('class="bad"', html)
        self.assertIn("assumption", html)
        self.assertIn('class="bad"', report_page.v100_crossover_section(Crossover.SLOW_MID))  # M=128
        bad = report_page.v100_crossover_section([row("fp8", "decode.bogus", 1.0)])
        self.assertIn("Not drawn: model row 0: unknown tile", bad)

    def test_page_with_and_without_the_model(self):
        import gen_records
        import report
        d = tempfile.mkdtemp(prefix="vg-v100x-page-")
        try:
            hist, out = os.path.join(d, "h"), os.path.join(d, "o")
            paths = gen_records.make_history(hist, commits=2, nsamp=9)
            args = ["--history", hist, "--out", out, "--targets", "none"]
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                report.main(args)
            page = read(os.path.join(out, "index.html"))
            self.assertNotIn("V100 crossover (model)", page)
            rec = json.loads(read(paths[-1]))
            rec["v100_model"] = Crossover.ROWS
            with open(paths[-1], "w", encoding="utf-8") as f:
                json.dump(rec, f)
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                report.main(args)
            page = read(os.path.join(out, "index.html"))
            self.assertIn("V100 ceiling (model)", page)
            self.assertIn("V100 crossover (model)", page)
            self.assertLess(page.index("V100 ceiling (model)"), page.index("V100 crossover (model)"))
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
