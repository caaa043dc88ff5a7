#!/usr/bin/env python3
"""The V100 crossover, modelled: each plan kind's lower-bound time on a V100.

No V100 can be measured here (issue 31).  From the V100 model's rows
(reports/sass_model.py: one ceiling per kernel, read from its sm_70 SASS hot
loop) this gives, for each family, each crossover shape (N = K = 4096;
N = 4096, K = 14336) and each M, the best modelled time of every plan kind
(decode, mid decode, tiled mid, tiled prefill, dequantize + cuBLAS) and the
plan that gives it, cuBLAS FP16 on the dequantized weight, the plan the
SM70 fixed rule picks (tuning off) with its modelled time, and the rule's
time over the best.  The native plans' times are LOWER BOUNDS (latencies,
tails, launch gaps, cache misses beyond those counted below, bank conflicts
and the copy's own instruction cost are not in them), except that W read in
several passes is charged to DRAM each time (A4), which can overstate; the
cuBLAS and dequantize + cuBLAS times are ESTIMATES (an assumed cuBLAS
efficiency, A12), not bounds.  So "rule / best" compares a bound with a
bound or an estimate, not two predictions: read a gap of 10-20 % as a tie
(on the H100 the same model is off by different factors per kind: 0.46-0.57
of the measured time for the mid decode plans, 0.32-0.72 for the tiled
ones, 0.74-0.87 for dequantize + cuBLAS).

    reports/v100_crossover.py --model build/sm70/model.sm_70.json
    reports/v100_crossover.py --record reports/history/RECORD.json --family fp8
    reports/v100_crossover.py --model build/sm70/model.sm_70.json --scan --over 1.5

--scan replaces the table with a sweep (every N of SCAN_NS, K 4096 and 14336,
rows 1-256, 384, 512, 1024) and lists the bands of rows where the SM70 rule's
pick is modelled over --over x the best plan offered there: the rows to look
at before changing the rule, and after.

Assumptions (each with its source, or "assumption"):

  A1  V100 SXM2: 80 SMs, 1530 MHz, 900 GB/s peak DRAM (sass_model.MACHINES
      "v100", the V100 whitepaper).
  A2  DRAM bandwidth the times use: --bandwidth-gbs, default 830 GB/s, the
      achievable copy bandwidth (assumption; about 92 % of peak).
  A3  Tensor peak: 512 FP16 multiply-adds per clock per SM (sass_model.ARCHS
      "sm_70", V100 whitepaper) = 125.3 TFLOP/s at 1530 MHz.
  A4  L2: 6 MB (V100 whitepaper).  A weight larger than L2 comes from DRAM
      once per M-tile row of the grid (grid.x walks N fastest, so each row
      of M tiles streams all of W); a weight that fits is read once.  At the
      crossover shapes every family's W is larger than 6 MB.  Blocks of two
      grid rows that are resident at the same time can share W lines in L2;
      that is not credited, so for several passes over W the DRAM term may
      overstate (a place where this bound can exceed the truth, as can
      A12's assumed efficiency; a few blocks per SM are resident, against
      64-256 N tiles per grid row).
  A5  X (FP16) is read once and Y (FP16) written once: an M tile of X is
      shared by the N tiles of its grid row, which run together (assumption).
  A6  Split-K: the kernel writes M*N*4*split bytes of FP32 partials instead
      of Y, and the reduction reads them and writes Y (M*N*2), after the
      kernel (gemm.cu launch: vg_splitk_reduce_kernel), at the DRAM
      bandwidth.
  A7  Weight bytes per element with scales: sass_model.BYTES_PER_ELEMENT.
  A8  A tiled plan's ceiling is its fraction of tensor peak per SM: time =
      ceil(blocks / 80) x (tile_m x tile_n x K per split multiply-adds) /
      (ceiling x 512 x 1530 MHz) (one block per SM per wave: whole tiles,
      padding counted), never below the DRAM time of A4-A6.
  A9  A decode plan's ceiling is the fraction of the DRAM bandwidth the
      model was made against (the model JSON's bandwidth_gbs; 900 GB/s for
      a record's rows, which do not keep it) that each SM's instruction
      stream allows at the kernel's own token tile.  Where it is below 1 the
      SM issue rate binds: time >= ceil(blocks / 80) x (a block's W bytes) /
      (ceiling x model bandwidth / 80).  Where it is 1 the instructions can
      outrun an SM's share of DRAM and blocks of the grid share the DRAM, so
      only the DRAM time of A4-A6 is a lower bound (no wave term; a
      departure from counting waves at the DRAM share, which would not be a
      lower bound).  Passes over W: ceil(M / tile_m).
  A10 A (tile, family) with two kernels (mxfp4 and nvfp4: byte- and
      word-wise scale loads) takes the higher ceiling: the word loader runs
      at these shapes (K a multiple of 128, scale rows aligned:
      make_kweight's scale_vec_ok in gemm.cu) and has the higher ceiling in
      the sm_70 model.
  A11 dequantize + cuBLAS: the copy reads W and writes N*K*2 bytes of FP16
      at the DRAM bandwidth, then cuBLAS FP16 (A12).  fp16: no copy.
  A12 cuBLAS FP16 (a V100 has no BF16): max(2MNK / (tensor peak x eff),
      (N*K*2 + M*K*2 + M*N*2) / bandwidth), eff = --cublas-eff, default 0.8
      (assumption: a large FP16 GEMM's share of V100 tensor peak).
  A13 Shared memory: a V100 allows 96 KB per block (sass_model.ARCHS
      "sm_70").  Each plan's size per family follows DecodeCfg::kSmem
      (decode_cfg.cuh) and GemmCfg::kSmem (gemm_kernel.cuh); a plan that
      does not fit is not run on a V100 (the fp16 and fp8 4-stage mid
      tiles, the fp16 3-stage 128x128 prefill tile, and every quantized
      family's decode.m16n16w8.u4), as the SM70 rule's first_that_fits
      skips it.
  A14 Plans: the dense path of kernels/cuda/plan_list.h (DENSE_PLAN_LIST,
      checked against the file by tests/test_v100_crossover.py), each
      offered between its min_rows and max_rows (gemm.cu: 0 for decode,
      tile_m/2 + 1 for the mid decode plans, 17 for dequantize + cuBLAS).
  A15 The SM70 rule: the dense, sm_major 7 branch of vg_cuda_heuristic_for
      (gemm.cu) with dq_rows = VG_CUDA_DQBLAS_ROWS_SM70 (kernels.h; the
      kind offered) and 96 KB of shared memory (sm70_rule below; a test
      fails when gemm.cu's rule or the constant changes without it).
  A16 The floor of any kernel, whatever its plan: W read once (with its
      scales), X read once and Y written once at the DRAM bandwidth, or
      2MNK at the full tensor peak, whichever is longer.  cuBLAS / floor is
      then the most any kernel on that weight could be ahead of cuBLAS
      FP16 by this model: where it is below issue 31's mid targets (fp8
      1.5x at M = 32-128, the 4-bit families 2x at 32 and 64) no kernel
      meets them on the machine (fp8, M=128 on a V100: 1.25).

Exit: 0 ok, 2 bad input (an unreadable file, a row without its fields, an
unknown tile or family, no rows).
"""
import argparse
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record as vgrecord  # noqa: E402
import sass_model  # noqa: E402

# ---- the machine (A1-A4, A12, A13) ---------------------------------------------

def _machine(name, bw_gbs, l2_mb, smem_limit, source):
    m, arch = sass_model.MACHINES[name], sass_model.ARCHS[sass_model.MACHINES[name]["arch"]]
    return {"name": name, "sms": m["sms"], "clock_hz": m["clock_mhz"] * 1e6, "peak_bw_gbs": m["bandwidth_gbs"],
            "bw_gbs": bw_gbs, "fma_per_clk_sm": arch["tensor_macs_per_clk_sm"], "l2_bytes": l2_mb * 1024 * 1024,
            "smem_limit": smem_limit, "source": source}


MACHINES = {
    # v100 is the model's machine; h100 only calibrates it against the
    # measured H100 crossover (run on an sm_90 model; no rule there).
    "v100": _machine("v100", 830.0, 6, sass_model.ARCHS["sm_70"]["smem_per_sm"],
                     "L2 6 MB, 96 KB shared memory per block: V100 whitepaper; 830 GB/s: assumption"),
    "h100": _machine("h100", 3000.0, 50, 227 * 1024,
                     "L2 50 MB, 227 KB shared memory per block: H100 whitepaper; 3000 GB/s: assumption"),
}
V100 = MACHINES["v100"]
SMS = V100["sms"]
MODEL_BW_GBS = V100["peak_bw_gbs"]        # what a record's ceilings were made against (A9)
DEFAULT_BW_GBS = V100["bw_gbs"]           # A2, assumption
DEFAULT_CUBLAS_EFF = 0.8                  # A12, assumption
SMEM_LIMIT = V100["smem_limit"]


def tensor_peak_flops(mach):
    return 2.0 * mach["fma_per_clk_sm"] * mach["sms"] * mach["clock_hz"]


TENSOR_PEAK_FLOPS = tensor_peak_flops(V100)
ACT_BYTES = 2                             # FP16 X and Y
PARTIAL_BYTES = 4                         # FP32 split-K partials

FAMILIES = ("fp16", "awq", "fp8", "mxfp4", "nvfp4")
SHAPES = ((4096, 4096), (4096, 14336))    # (N, K)
MS = (1, 16, 32, 64, 128, 256, 512, 1024, 4096, 8192)
KINDS = ("decode", "mid decode", "tiled mid", "tiled prefill", "dq+cuBLAS")
FLAG_RATIO = 1.15
BITS = {"fp16": 16, "fp8": 8, "awq": 4, "mxfp4": 4, "nvfp4": 4}

# ---- the dense plans (A14) ------------------------------------------------------

# kernels/cuda/plan_list.h's dense entries, in its order, as (macro, its
# arguments after the path); tests/test_v100_crossover.py parses the file
# and compares, so this copy cannot drift.
DENSE_PLAN_LIST = (
    ("DECODE", (8, 32, 4, 2, 1, 8)),
    ("DECODE", (8, 32, 4, 2, 2, 8)),
    ("DECODE", (8, 32, 4, 2, 4, 8)),
    ("DECODE", (8, 16, 4, 2, 1, 8)),
    ("DECODE", (8, 16, 8, 2, 1, 8)),
    ("DECODE", (8, 32, 8, 2, 1, 8)),
    ("DECODE", (8, 16, 4, 4, 1, 8)),
    ("DECODE", (16, 32, 4, 2, 1, 64)),
    ("DECODE", (16, 32, 4, 2, 2, 64)),
    ("DECODE", (16, 32, 4, 2, 4, 64)),
    ("DECODE", (16, 16, 4, 2, 1, 64)),
    ("DECODE", (16, 16, 8, 2, 1, 64)),
    ("DECODE", (16, 32, 8, 2, 1, 64)),
    ("DECODE", (16, 16, 4, 4, 1, 64)),
    ("DECODE", (8, 32, 4, 4, 1, 8)),
    ("DECODE", (8, 16, 8, 4, 1, 8)),
    ("DECODE", (8, 16, 16, 2, 1, 8)),
    ("DECODE", (16, 16, 8, 4, 1, 64)),
    ("DECODE_WN", (64, 64, 4, 1, 2, 1, 256)),
    ("DECODE_WN", (64, 64, 4, 1, 2, 2, 256)),
    ("DECODE_WN", (64, 64, 4, 1, 2, 4, 256)),
    ("DECODE_WN", (64, 64, 4, 2, 2, 1, 256)),
    ("DECODE_WN", (64, 64, 4, 2, 2, 2, 256)),
    ("DECODE_WN", (64, 128, 8, 1, 4, 4, 256)),
    ("DECODE_WN", (32, 64, 4, 1, 2, 1, 256)),
    ("DECODE_WN", (32, 64, 4, 1, 2, 2, 256)),
    ("DECODE_WN", (32, 64, 4, 1, 2, 4, 256)),
    ("TILED", ("mid", 64, 64, 128, 4, 1, 64, 2, 2, 1)),
    ("TILED", ("mid", 64, 64, 128, 4, 2, 64, 2, 2, 1)),
    ("TILED", ("prefill", 128, 128, 64, 3, 1, 0, 2, 4, 1)),
    ("TILED", ("mid", 64, 64, 128, 2, 1, 64, 2, 2, 1)),
    ("TILED", ("mid", 64, 64, 128, 2, 2, 64, 2, 2, 1)),
    ("TILED", ("prefill", 128, 128, 64, 2, 1, 0, 2, 4, 1)),
    ("TILED", ("prefill", 64, 64, 64, 3, 1, 0, 2, 2, 1)),
    ("DQBLAS", (1,)),
)
DQBLAS_ID = "cuda.dense.dqcublas"
DQBLAS_MIN_ROWS = 17                      # gemm.cu DQBLAS_MIN_ROWS (GROUPED_DECODE_MAX_TOKENS + 1)


def _decode_smem(bits, ni, wk, mt, uu, wn):
    """DecodeCfg<Deq, NI, WK, MT, UU, WN>::kSmem (decode_cfg.cuh)."""
    u = (uu // 2 if uu // 2 > 1 else 1) if bits == 16 else uu   # fp16 keeps half the steps
    bm, bn = 8 * mt, 16 * ni * wn
    x_smem = wk * u * bm * (128 + 8) * 2
    return x_smem + (wk - 1) * bm * bn * 4


def _tiled_smem(bits, bm, bn, bk, st, wk):
    """GemmCfg<Deq, BM, BN, BK, WM, WN, WK, ST>::kSmem (gemm_kernel.cuh)."""
    w_row = bk * bits // 8
    w_stride = w_row + ((64 - w_row % 128 + 128) % 128)
    x_stride = bk * 2 + ((16 - (bk * 2) % 32 + 32) % 32)
    main = st * (bn * w_stride + bm * x_stride)
    return max(main, (wk - 1) * bm * bn * 4)


def dense_plans():
    """{plan id: plan} of DENSE_PLAN_LIST, each with kind (one of KINDS),
    tile (the model's tile name), tile_m, tile_n, tile_k, split, min_rows,
    max_rows (0: no limit) and smem ({family: bytes})."""
    plans = {}
    for macro, a in DENSE_PLAN_LIST:
        if macro == "DECODE":
            tm, tn, wk, u, split, max_rows = a
            tile = f"decode.m{tm}n{tn}w{wk}.u{u}"
            p = dict(kind="decode", tile_m=tm, tile_n=tn, tile_k=128, split=split, min_rows=0,
                     max_rows=max_rows, smem={f: _decode_smem(b, tn // 16, wk, tm // 8, u, 1)
                                              for f, b in BITS.items()})
        elif macro == "DECODE_WN":
            tm, tn, wn, wk, u, split, max_rows = a
            tile = f"decode.m{tm}n{tn}wn{wn}wk{wk}.u{u}"
            p = dict(kind="mid decode", tile_m=tm, tile_n=tn, tile_k=128, split=split, min_rows=tm // 2 + 1,
                     max_rows=max_rows, smem={f: _decode_smem(b, tn // (16 * wn), wk, tm // 8, u, wn)
                                              for f, b in BITS.items()})
        elif macro == "TILED":
            name, bm, bn, bk, st, split, max_rows, _wm, _wn, wk = a
            tile = f"{name}.m{bm}n{bn}k{bk}.s{st}"
            p = dict(kind=f"tiled {name}", tile_m=bm, tile_n=bn, tile_k=bk, stages=st, split=split, min_rows=0,
                     max_rows=max_rows, smem={f: _tiled_smem(b, bm, bn, bk, st, wk) for f, b in BITS.items()})
        else:
            plans[DQBLAS_ID] = dict(kind="dq+cuBLAS", tile=None, split=1, min_rows=DQBLAS_MIN_ROWS, max_rows=0,
                                    smem={f: 0 for f in BITS})
            continue
        p["tile"] = tile
        plans[f"cuda.dense.{tile}.sk{split}"] = p
    return plans


PLANS = dense_plans()


def fits(plan_id, family):
    """Whether the plan's kernel for family fits a V100's shared memory."""
    return PLANS[plan_id]["smem"][family] <= SMEM_LIMIT


def offered(plan, m):
    return m >= plan["min_rows"] and (plan["max_rows"] == 0 or m <= plan["max_rows"])


# ---- the SM70 rule (A15) ----------------------------------------------------------

DQBLAS_ROWS_SM70 = 256   # kernels/kernels.h VG_CUDA_DQBLAS_ROWS_SM70


def _first_that_fits(family, ids):
    """gemm.cu first_that_fits: the first id that fits, else the last."""
    return next((i for i in ids if fits(i, family)), ids[-1])


def _first_tiled_that_fits(family, ids):
    """gemm.cu first_tiled_that_fits on SM70: the first two-stage id that
    fits, else first_that_fits."""
    return next((i for i in ids if PLANS[i].get("stages") == 2 and fits(i, family)), None) \
        or _first_that_fits(family, ids)


def sm70_rule(family, m, n):
    """The plan id vg_cuda_heuristic_for gives on the dense path with
    sm_major 7, dq_rows VG_CUDA_DQBLAS_ROWS_SM70 and a V100's shared memory.
    Only that branch: the SM80 branches are not reached on SM70.  A port,
    so that the model runs from a record without the C library;
    tests/test_v100_crossover.py (RuleAgainstC) checks it against the C rule
    itself (`voltgate plans --rule --sm 70`) on every family and threshold."""
    if m >= DQBLAS_ROWS_SM70 or (family == "fp16" and m > 16):
        return DQBLAS_ID
    big = m > 8
    tiles = -(-n // 16)
    d = "cuda.dense.decode."
    if m <= 16:
        if tiles >= 192:
            return (_first_that_fits(family, [d + "m16n16w8.u2.sk1", d + "m16n16w4.u2.sk1"]) if big else
                    _first_that_fits(family, [d + "m8n16w8.u2.sk1", d + "m8n16w4.u2.sk1"]))
        if tiles >= 48:
            return (_first_that_fits(family, [d + "m16n16w8.u4.sk1", d + "m16n16w8.u2.sk1", d + "m16n32w4.u2.sk2"])
                    if big else _first_that_fits(family, [d + "m8n16w16.u2.sk1", d + "m8n32w4.u2.sk2"]))
        return d + ("m16n32w4.u2.sk4" if big else "m8n32w4.u2.sk4")
    if family != "fp16" and 16 < m <= 64:
        tiles64 = -(-n // 64)
        return (d + ("m32n64wn4wk1.u2." if m <= 32 else "m64n64wn4wk1.u2.")
                + ("sk1" if tiles64 >= 128 else "sk2" if tiles64 >= 64 else "sk4"))
    if family != "fp16" and 64 < m <= (256 if n <= 2560 else 128):
        return d + ("m64n64wn4wk1.u2.sk2" if n < 2048 else "m64n64wn4wk1.u2.sk1")
    # (the C rule's mid tile at 17-64 rows is for fp16 where the
    # dequantize + cuBLAS kind is not offered: never here)
    return _first_tiled_that_fits(family, ["cuda.dense.prefill.m128n128k64.s3.sk1",
                                           "cuda.dense.prefill.m128n128k64.s2.sk1",
                                           "cuda.dense.prefill.m64n64k64.s3.sk1"])


# ---- the model rows ----------------------------------------------------------------

class ModelError(ValueError):
    """Model rows that this model cannot read."""


TILE_RE = re.compile(r"^(decode\.m\d+n\d+(w\d+|wn\d+wk\d+)\.u\d+|(mid|prefill)\.m\d+n\d+k\d+\.s\d+)$")
DENSE_TILES = {p["tile"] for p in PLANS.values() if p["tile"]}


def ceilings(rows):
    """{(family, tile): ceiling} from model rows (a sass-model JSON's kernels
    or a record's v100_model), the higher of two kernels of one tile (A10);
    rows without a ceiling (no hot loop found) are left out.  Raises
    ModelError on no rows, a row without family/kind/tile, an unknown
    family, kind or tile (one no kernel name gives), or a non-numeric
    ceiling.  A well-formed tile that no dense plan runs (a grouped-only
    kernel) is skipped: this model is of the dense path."""
    if not rows:
        raise ModelError("no model rows (the sm_70 model is empty)")
    out = {}
    for i, r in enumerate(rows):
        where = f"model row {i}"
        if not isinstance(r, dict):
            raise ModelError(f"{where}: expected an object, got {type(r).__name__}")
        for key in ("family", "kind", "tile"):
            if not isinstance(r.get(key), str):
                raise ModelError(f"{where}: missing or non-string '{key}'")
        if r["family"] not in BITS:
            raise ModelError(f"{where}: unknown family {r['family']!r} (have {', '.join(FAMILIES)})")
        if r["kind"] not in ("decode", "tiled"):
            raise ModelError(f"{where}: unknown kind {r['kind']!r} (decode or tiled)")
        if not TILE_RE.match(r["tile"]) or (r["kind"] == "decode") != r["tile"].startswith("decode."):
            raise ModelError(f"{where}: unknown tile {r['tile']!r} for kind {r['kind']!r}")
        c = r.get("ceiling")
        if c is None:
            continue
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0 < c <= 1:
            raise ModelError(f"{where} ({r['family']} {r['tile']}): ceiling {c!r} is not a fraction in (0, 1]")
        if r["tile"] not in DENSE_TILES:
            continue
        key = (r["family"], r["tile"])
        out[key] = max(out.get(key, 0.0), float(c))
    if not out:
        raise ModelError("no model row with a ceiling for a dense plan's tile")
    return out


# ---- the times (seconds) ------------------------------------------------------------

def weight_bytes(family, n, k):
    return n * k * sass_model.BYTES_PER_ELEMENT[family]


def setting(machine="v100", bw_gbs=None, cublas_eff=DEFAULT_CUBLAS_EFF, model_bw_gbs=None):
    """The machine with the model's free choices: bw (the times' DRAM
    bandwidth, B/s; A2), model_bw (what the decode ceilings were made
    against, B/s; A9), eff (A12)."""
    if machine not in MACHINES:
        raise ModelError(f"unknown machine {machine!r} (have {', '.join(MACHINES)})")
    mach = MACHINES[machine]
    bw_gbs = mach["bw_gbs"] if bw_gbs is None else bw_gbs
    model_bw_gbs = mach["peak_bw_gbs"] if model_bw_gbs is None else model_bw_gbs
    if not bw_gbs > 0 or not model_bw_gbs > 0:
        raise ModelError(f"bandwidths must be positive (got {bw_gbs}, {model_bw_gbs} GB/s)")
    if not 0 < cublas_eff <= 1:
        raise ModelError(f"cuBLAS efficiency must be in (0, 1] (got {cublas_eff})")
    return dict(mach, bw=bw_gbs * 1e9, model_bw=model_bw_gbs * 1e9, eff=cublas_eff)


def cublas_time(m, n, k, s):
    """A12: cuBLAS FP16 (BF16 on an H100: the same roofline), s: setting()."""
    return max(2.0 * m * n * k / (tensor_peak_flops(s) * s["eff"]), (n * k + m * k + m * n) * ACT_BYTES / s["bw"])


def floor_time(family, m, n, k, s):
    """A16: no kernel on this weight can be faster (bytes once, tensor peak)."""
    return max(2.0 * m * n * k / tensor_peak_flops(s),
               (weight_bytes(family, n, k) + (m * k + m * n) * ACT_BYTES) / s["bw"])


def dqcublas_time(family, m, n, k, s):
    """A11: the FP16 copy of W (none for fp16), then cuBLAS."""
    copy = 0.0 if family == "fp16" else (weight_bytes(family, n, k) + n * k * ACT_BYTES) / s["bw"]
    return copy + cublas_time(m, n, k, s)


def native_time(plan, ceiling, family, m, n, k, s):
    """A4-A9: a decode or tiled plan's lower-bound time."""
    tm, tn, tk, split = plan["tile_m"], plan["tile_n"], plan["tile_k"], plan["split"]
    passes = -(-m // tm)
    blocks = -(-n // tn) * passes * split
    waves = -(-blocks // s["sms"])
    k_per_split = -(-(-(-k // tk)) // split) * tk          # gemm.cu k_per_split: whole K tiles
    w = weight_bytes(family, n, k)
    w_reads = passes if w > s["l2_bytes"] else 1
    out = m * n * (ACT_BYTES if split == 1 else PARTIAL_BYTES * split)
    t_dram = (w_reads * w + m * k * ACT_BYTES + out) / s["bw"]
    if plan["kind"] in ("decode", "mid decode"):
        block_bytes = tn * k_per_split * sass_model.BYTES_PER_ELEMENT[family]
        t_sm = waves * block_bytes / (ceiling * s["model_bw"] / s["sms"]) if ceiling < 1 else 0.0
    else:
        t_sm = waves * tm * tn * k_per_split / (ceiling * s["fma_per_clk_sm"] * s["clock_hz"])
    t_reduce = (m * n * PARTIAL_BYTES * split + m * n * ACT_BYTES) / s["bw"] if split > 1 else 0.0
    return max(t_sm, t_dram) + t_reduce


def plan_time(plan_id, ceils, family, m, n, k, s):
    """A plan's modelled time, or None where the model has no ceiling for
    its kernel or the kernel does not fit the machine's shared memory."""
    p = PLANS[plan_id]
    if p["kind"] == "dq+cuBLAS":
        return dqcublas_time(family, m, n, k, s)
    if p["smem"][family] > s["smem_limit"]:
        return None
    c = ceils.get((family, p["tile"]))
    return None if c is None else native_time(p, c, family, m, n, k, s)


def crossover(rows, machine="v100", bw_gbs=None, cublas_eff=DEFAULT_CUBLAS_EFF, model_bw_gbs=None,
              families=FAMILIES, shapes=SHAPES, ms=MS):
    """One dict per (family, shape, M), times in microseconds: kinds {kind:
    (us, plan id) of the kind's best offered plan, or None}, best (us, plan
    id), cublas_us, floor_us and cublas_over_floor (A16), and on the v100
    rule_plan, rule_us (None: not
    modelled), rule_over_best and flag (the rule's pick modelled more than
    FLAG_RATIO over the best); None on another machine."""
    s = setting(machine, bw_gbs, cublas_eff, model_bw_gbs)
    ceils = ceilings(rows)
    out = []
    for family in families:
        for n, k in shapes:
            for m in ms:
                kinds = {kind: None for kind in KINDS}
                for pid, p in PLANS.items():
                    if not offered(p, m):
                        continue
                    t = plan_time(pid, ceils, family, m, n, k, s)
                    if t is not None and (kinds[p["kind"]] is None or t * 1e6 < kinds[p["kind"]][0]):
                        kinds[p["kind"]] = (t * 1e6, pid)
                best = min((v for v in kinds.values() if v), default=None)
                rule = sm70_rule(family, m, n) if machine == "v100" else None
                t_rule = plan_time(rule, ceils, family, m, n, k, s) if rule else None
                rule_us = None if t_rule is None else t_rule * 1e6
                ratio = rule_us / best[0] if rule_us is not None and best else None
                t_cublas, t_floor = cublas_time(m, n, k, s), floor_time(family, m, n, k, s)
                out.append({"family": family, "n": n, "k": k, "m": m, "kinds": kinds, "best": best,
                            "cublas_us": t_cublas * 1e6, "floor_us": t_floor * 1e6,
                            "cublas_over_floor": t_cublas / t_floor,
                            "rule_plan": rule, "rule_us": rule_us, "rule_over_best": ratio,
                            "flag": ratio is not None and ratio > FLAG_RATIO})
    return out


# The scan's grid (--scan): the widths of common layers and their halves
# and quarters (tensor-parallel splits), two K, and every row count to 256
# with a few past it, where the rule's branches lie.
SCAN_NS = (512, 1024, 1536, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 8192, 11008, 14336, 18944, 28672)
SCAN_KS = (4096, 14336)
SCAN_MS = tuple(range(1, 257)) + (384, 512, 1024)


def scan_bands(results, over=FLAG_RATIO):
    """The rows of crossover() results where the rule's pick is modelled
    more than `over` x the best plan, merged into bands: consecutive rows
    (in the order scanned) of one family and shape with the same rule plan
    and the same best plan.  Each band: family, n, k, m_first, m_last,
    rule_plan, best_plan, and the lowest and highest rule_us, best_us and
    ratio over its rows.  Where to look before changing the SM70 rule, and
    after: a lower bound against a lower bound (the module's docstring)."""
    bands, last = [], None
    for r in results:
        hit = r["rule_over_best"] is not None and r["rule_over_best"] > over
        key = (r["family"], r["n"], r["k"], r["rule_plan"], r["best"][1] if r["best"] else None)
        if not hit:
            last = None
            continue
        if last is not None and last[0] == key:
            b = last[1]
        else:
            b = {"family": r["family"], "n": r["n"], "k": r["k"], "m_first": r["m"], "rule_plan": r["rule_plan"],
                 "best_plan": key[4], "rule_us": [r["rule_us"]] * 2, "best_us": [r["best"][0]] * 2,
                 "ratio": [r["rule_over_best"]] * 2}
            bands.append(b)
            last = (key, b)
        b["m_last"] = r["m"]
        for name, v in (("rule_us", r["rule_us"]), ("best_us", r["best"][0]), ("ratio", r["rule_over_best"])):
            b[name] = [min(b[name][0], v), max(b[name][1], v)]
    return bands


def format_scan(bands, over, points):
    def span(lo_hi, fmt):
        lo, hi = lo_hi
        return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else fmt.format(lo) + "-" + fmt.format(hi)
    head = (f"V100 model scan: {points} points (family x N x K x M); where the SM70 rule's pick is modelled over "
            f"{over:.2f} x the best plan offered (lower bounds: read up to ~1.5x as within the model's error, "
            f"kernels/cuda/KERNELS.md D38)")
    if not bands:
        return head + "\nnone"
    lines = [["family", "N x K", "rows", "SM70 rule's pick", "rule us", "best plan", "best us", "rule / best"]]
    for b in bands:
        rows = str(b["m_first"]) if b["m_first"] == b["m_last"] else f"{b['m_first']}-{b['m_last']}"
        lines.append([b["family"], f"{b['n']}x{b['k']}", rows, short(b["rule_plan"]), span(b["rule_us"], "{:.1f}"),
                      short(b["best_plan"]), span(b["best_us"], "{:.1f}"), span(b["ratio"], "{:.2f}")])
    widths = [max(len(l[i]) for l in lines) for i in range(len(lines[0]))]
    return head + "\n" + "\n".join("  ".join(c.ljust(w) for c, w in zip(l, widths)).rstrip() for l in lines)


def assumptions_text(s):
    """The assumptions in one paragraph (s: setting()), for the page and the
    table."""
    return (f"Lower bounds from the {s['name'].upper()} SASS model (reports/v100_crossover.py, assumptions A1-A15 "
            f"there): {s['sms']} SMs at {s['clock_hz'] / 1e6:.0f} MHz, DRAM {s['bw'] / 1e9:g} GB/s (achievable "
            f"copy bandwidth, assumption; peak {s['peak_bw_gbs']:g}), tensor peak "
            f"{tensor_peak_flops(s) / 1e12:.1f} TFLOP/s, L2 {s['l2_bytes'] >> 20} MB (a W above it read once per "
            f"M-tile row), decode ceilings against the model's {s['model_bw'] / 1e9:g} GB/s, whole tiles and "
            f"waves of {s['sms']} blocks, split-K partials written and reduced, dequantize + cuBLAS = FP16 copy "
            f"of W then cuBLAS = max(2MNK / (peak x {s['eff']:g}), bytes / bandwidth) (efficiency: assumption), "
            f"{s['smem_limit'] >> 10} KB shared memory per block (plans over it not run), the floor of any "
            f"kernel = max(2MNK / peak, bytes once / bandwidth) (cuBLAS / floor: the most any kernel could be "
            f"ahead of cuBLAS)"
            + (f", the SM70 rule with tuning off and the dequantize + cuBLAS kind from {DQBLAS_ROWS_SM70} rows"
               if s["name"] == "v100" else "") + ". Latency, tails and launch gaps are not in it.")


# ---- the command line ----------------------------------------------------------------

def short(plan_id):
    """A plan id without its "cuda.dense." prefix (all of them have it)."""
    return plan_id[len("cuda.dense."):] if plan_id and plan_id.startswith("cuda.dense.") else plan_id


def table_cells(r):
    """One result as the strings of the table's row (format_table and the
    report page share it): N x K, M, each kind's time, the best plan,
    cuBLAS, the floor and cuBLAS over it (A16), the rule's pick, its time
    and its ratio to the best."""
    def us(v):
        return "-" if v is None else f"{v:.1f}"
    ratio = "-" if r["rule_over_best"] is None else f"{r['rule_over_best']:.2f}"
    return ([f"{r['n']}x{r['k']}", str(r["m"])] + [us(r["kinds"][kd] and r["kinds"][kd][0]) for kd in KINDS] +
            [short(r["best"][1]) if r["best"] else "-", us(r["cublas_us"]), us(r["floor_us"]),
             f"{r['cublas_over_floor']:.2f}", short(r["rule_plan"]) if r["rule_plan"] else "-", us(r["rule_us"]), ratio])


TABLE_HEAD = (["N x K", "M"] + [f"{kd} us" for kd in KINDS] +
              ["best plan", "cuBLAS FP16 us", "floor us", "cuBLAS / floor", "SM70 rule's pick", "rule us",
               "rule / best"])


def format_table(results, machine="v100"):
    by_family = {}
    for r in results:
        by_family.setdefault(r["family"], []).append(r)
    blocks = []
    for family, rs in by_family.items():
        lines = [TABLE_HEAD] + [table_cells(r) + (["!"] if r["flag"] else []) for r in rs]
        widths = [max(len(l[i]) for l in lines if i < len(l)) for i in range(len(TABLE_HEAD))]
        text = ["  ".join(c.ljust(w) for c, w in zip(l, widths)).rstrip() + (" " + l[-1] if len(l) > len(widths)
                                                                            else "") for l in lines]
        blocks.append(f"{family}: {machine.upper()} model, times in us (not measured): native plans lower"
                      " bounds, cuBLAS columns estimates"
                      + (f"; '!': the SM70 rule's pick over {FLAG_RATIO:.2f} x the best" if machine == "v100" else "")
                      + "\n" + "\n".join(text))
    return "\n\n".join(blocks)


def rows_from_file(path, as_record):
    """(model rows, the bandwidth its decode ceilings were made against, or
    None for the machine's peak) of a sass-model JSON or a results record."""
    doc = vgrecord.read_json(path)
    if as_record:
        if not isinstance(doc, dict) or not doc.get("v100_model"):
            raise ModelError(f"{path}: the record has no v100_model rows (no sm_70 build ran for it)")
        if not isinstance(doc["v100_model"], list):
            raise ModelError(f"{path}: v100_model is not a list of model rows")
        return doc["v100_model"], None
    rows = vgrecord.v100_model_rows(doc, path)
    bw = doc.get("bandwidth_gbs")
    if bw is not None and (isinstance(bw, bool) or not isinstance(bw, (int, float)) or bw <= 0):
        raise ModelError(f"{path}: bandwidth_gbs {bw!r} is not a positive number")
    return rows, bw


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="a reports/sass_model.py --json file (schema voltgate-sass-model/1)")
    src.add_argument("--record", help="a results record whose v100_model rows to use")
    ap.add_argument("--machine", choices=sorted(MACHINES), default="v100",
                    help="v100 (default); h100 to calibrate the model on an sm_90 model against measurements "
                         "(no rule column)")
    defaults = ", ".join(f"{name} {m['bw_gbs']:g}" for name, m in MACHINES.items())
    ap.add_argument("--bandwidth-gbs", type=float,
                    help=f"DRAM bandwidth of the times (default: the machine's achievable, an assumption: "
                         f"{defaults}; A2)")
    ap.add_argument("--cublas-eff", type=float, default=DEFAULT_CUBLAS_EFF,
                    help=f"cuBLAS's share of tensor peak (default {DEFAULT_CUBLAS_EFF:g}, A12)")
    ap.add_argument("--family", action="append", choices=FAMILIES, help="only this family (repeatable)")
    ap.add_argument("--scan", action="store_true",
                    help="instead of the crossover table: every N of SCAN_NS (512-28672), K 4096 and 14336, "
                         "rows 1-256, 384, 512 and 1024, and list the bands of rows where the SM70 rule's pick is "
                         "modelled over --over x the best plan (v100 only)")
    ap.add_argument("--over", type=float, default=FLAG_RATIO,
                    help=f"the scan's threshold, rule time over best (default {FLAG_RATIO:g}; > 1)")
    ap.add_argument("--json", help="write the results as JSON here")
    a = ap.parse_args(argv)
    if a.scan and a.machine != "v100":
        ap.error("--scan is of the SM70 rule: --machine v100 only")
    if not a.over > 1:
        ap.error(f"--over {a.over:g}: give a ratio above 1")
    if a.scan:
        return scan_main(a)
    try:
        rows, model_bw = rows_from_file(a.model or a.record, as_record=bool(a.record))
        s = setting(a.machine, a.bandwidth_gbs, a.cublas_eff, model_bw)
        results = crossover(rows, a.machine, a.bandwidth_gbs, a.cublas_eff, model_bw,
                            families=tuple(a.family) if a.family else FAMILIES)
    except (ModelError, vgrecord.InputError) as e:
        print(f"v100_crossover: {e}", file=sys.stderr)
        return 2
    print(format_table(results, a.machine))
    print("\n" + assumptions_text(s))
    if a.json:
        doc = {"schema": "voltgate-v100-crossover/1", "machine": a.machine,
               "lower_bound": {"native": True, "cublas": False, "dq+cuBLAS": False},
               "bandwidth_gbs": s["bw"] / 1e9, "model_bandwidth_gbs": s["model_bw"] / 1e9, "cublas_eff": s["eff"],
               "tensor_peak_tflops": tensor_peak_flops(s) / 1e12, "assumptions": assumptions_text(s),
               "rows": results}
        return write_json(a.json, doc)
    return 0


def write_json(path, doc):
    """--json's file, whole or not at all (write_text_atomic); 2 with the
    reason where it cannot be written."""
    try:
        vgrecord.write_text_atomic(path, json.dumps(doc, indent=1))
    except OSError as e:
        print(f"v100_crossover: cannot write {path}: {e.strerror or e}", file=sys.stderr)
        return 2
    return 0


def scan_main(a):
    families = tuple(a.family) if a.family else FAMILIES
    try:
        rows, model_bw = rows_from_file(a.model or a.record, as_record=bool(a.record))
        s = setting(a.machine, a.bandwidth_gbs, a.cublas_eff, model_bw)
        shapes = tuple((n, k) for n in SCAN_NS for k in SCAN_KS)
        results = crossover(rows, a.machine, a.bandwidth_gbs, a.cublas_eff, model_bw, families=families,
                            shapes=shapes, ms=SCAN_MS)
    except (ModelError, vgrecord.InputError) as e:
        print(f"v100_crossover: {e}", file=sys.stderr)
        return 2
    bands = scan_bands(results, a.over)
    print(format_scan(bands, a.over, len(results)))
    print("\n" + assumptions_text(s))
    if a.json:
        doc = {"schema": "voltgate-v100-scan/1", "machine": a.machine, "over": a.over,
               "points": len(results), "families": list(families), "ns": list(SCAN_NS), "ks": list(SCAN_KS),
               "assumptions": assumptions_text(s), "bands": bands}
        return write_json(a.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
