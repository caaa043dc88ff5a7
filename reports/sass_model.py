#!/usr/bin/env python3
"""A speed ceiling for each GEMM kernel, read from its SASS.

V100 speed cannot be measured on the machines this project has; it can be
bounded.  For every GEMM kernel (vg_decode_kernel, vg_gemm_kernel) in a
`cuobjdump -sass` listing this script

  - finds the hot loop: the instructions between a backward branch and its
    target that hold the most HMMAs (the steady state of the mainloop);
  - counts them by the pipe that executes them (PIPES below);
  - turns each pipe's count into SM clocks per loop iteration with the
    arch's throughputs (ARCHS below, each figure with its source), the issue
    rate (one instruction per clock per scheduler) included;
  - takes the binding pipe, and from the work of one iteration (weight
    bytes for a decode kernel, multiply-adds for a tiled one) the ceiling:
    the fraction of DRAM bandwidth (decode) or of tensor-core peak (tiled)
    that the instruction stream allows;
  - for decode kernels, the bytes of W each SM keeps in flight (steps a warp
    loads ahead x bytes per step x warps per SM that the registers allow)
    against what Little's law asks for (bandwidth per SM x DRAM latency);
  - per global load of the hot loop, the instructions the warp issues
    before the first one that reads it (ld-use: the shortest), and before
    the first that waits on its scoreboard by the control bits (ld-wait:
    the shortest, and the opcode that waits): a short one stalls the warp
    for the load's whole latency;
  - the instructions of one pass over the loop that wait on a global load
    issued earlier in the same pass (mem-waits): each is a memory latency
    the warp spends idle, which only other warps can cover.

It is an upper bound, not a prediction: latencies, bank conflicts, cache
misses, tails and launch gaps are not in it.  Calibrate it where a GPU can
be measured: the same script on the sm_90 listing, beside the bench.

    reports/sass_model.py --object build/sm70/obj/kernels/cuda/gemm_fp8.cu.o \
        --object build/sm70/obj/kernels/cuda/gemm_nvfp4.cu.o ...
    reports/sass_model.py --arch sm_90 --machine h200 --bandwidth-gbs 4100 LISTING
    reports/sass_model.py LISTING --res-usage RES --json model.json

Exit: 0 ok, 1 a --require check failed, 2 bad input (no kernel found, an
unreadable file, an unknown arch).
"""
import argparse
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record as vgrecord  # noqa: E402

# ---- the hardware ------------------------------------------------------------
#
# Per-pipe cost in scheduler (sub-partition) cycles per warp instruction; an
# SM has four schedulers, each issuing one instruction per clock.  "mio" is
# shared by the whole SM and counted in SM cycles (bytes over the L1/shared
# data path, shuffles at their own rate).
ARCHS = {
    "sm_70": {
        "schedulers": 4,
        "cost": {
            # CUDA C++ Programming Guide, "Arithmetic Instructions", table
            # "Throughput of Native Arithmetic Instructions" (results per clock
            # per SM), column 7.x: 32-bit FP add/mul/fma 64, 32-bit integer
            # add/logic/shift/compare 64, 16-bit FP 128 (64 FP16x2), warp
            # shuffle 32, type conversions 16.  64 per SM = 16 per scheduler =
            # 2 cycles per warp instruction.
            "alu": 2,     # INT32 but IMAD, logic, compare, moves: GV100's ALU pipe (NVIDIA forum, GV100 pipes)
            "fma": 2,     # FP32 and IMAD: GV100's FMA pipe (same source)
            "fp16": 2,    # FP16x2: 128 results per clock per SM
            "xu": 8,      # conversions, MUFU, POPC, FLO: 16 per clock per SM
        },
        # GV100's FP16, FP64 and tensor pipes share one dispatch port (NVIDIA
        # forum, "GV100 has several math pipelines"): counted together.
        "shared_port": ("fp16", "tensor"),
        # Tensor cores: 125 TFLOP/s at 1530 MHz over 80 SMs = 512 FP16
        # multiply-adds per clock per SM, 128 per scheduler (V100 whitepaper).
        # m8n8k4 with FP32 accumulation is 4 HMMA.884.F32 steps of 256
        # multiply-adds (counted in this project's sm_70 SASS), so 2 cycles
        # each; the FP16-accumulating form is 2 steps of 512 (4 cycles).
        "tensor_macs_per_clk_sm": 512,
        "hmma_macs": {"HMMA.884.F32": 256, "HMMA.884.F16": 512},
        # L1/shared data path, bytes per clock per SM: 128 is the Volta
        # tuning guide's L1 figure (assumption: shared and global loads
        # share it at that rate).  Shuffles: 32 results per clock per SM.
        "mio_bytes_per_clk": 128,
        "shfl_per_clk": 1,
        "max_warps_per_sm": 64,
        "regs_per_sm": 65536,
        "smem_per_sm": 96 * 1024,
    },
    "sm_90": {
        "schedulers": 4,
        "cost": {
            # Programming Guide table, column 9.0: 32-bit FP 128 (the FMA-heavy
            # and FMA-lite pipes), integer 64, 16-bit FP 256, conversions 16.
            "alu": 2,
            "fma": 1,     # FP32 on two pipes: 1 cycle a warp (IMAD: 2, below)
            "fp16": 1,    # FP16x2 dual-issued to both FMA pipes (NVIDIA forum, GH100)
            "xu": 8,
        },
        "shared_port": (),
        "imad_cost": 2,   # IMAD on the FMA-heavy pipe only
        # H100 SXM5: 989 dense FP16 TFLOP/s at 1830 MHz over 132 SMs = 2048
        # multiply-adds per clock per SM (H100 whitepaper).  mma.sync reaches
        # less than wgmma in practice: this is an upper bound.
        "tensor_macs_per_clk_sm": 2048,
        "hmma_macs": {"HMMA.16816.F32": 2048, "HMMA.16816.F16": 2048, "HMMA.1688.F32": 1024,
                      "HMMA.1688.F16": 1024, "HMMA.884.F32": 256, "HMMA.884.F16": 512},
        "mio_bytes_per_clk": 128,   # assumption: as Volta's (no published H100 figure)
        "shfl_per_clk": 1,
        "max_warps_per_sm": 64,
        "regs_per_sm": 65536,
        "smem_per_sm": 228 * 1024,
    },
}
ARCHS["sm_80"] = dict(ARCHS["sm_90"], tensor_macs_per_clk_sm=1024,  # A100: 312 TFLOP/s, 108 SMs, 1410 MHz
                      smem_per_sm=164 * 1024)

MACHINES = {
    # name: arch, SMs, clock (MHz, boost), DRAM bandwidth (GB/s, peak)
    "v100": {"arch": "sm_70", "sms": 80, "clock_mhz": 1530, "bandwidth_gbs": 900.0,
             "source": "V100 SXM2 whitepaper: 80 SMs, 1530 MHz boost, 900 GB/s HBM2"},
    "h100": {"arch": "sm_90", "sms": 132, "clock_mhz": 1980, "bandwidth_gbs": 3350.0,
             "source": "H100 SXM5 datasheet: 132 SMs, 1980 MHz boost, 3.35 TB/s HBM3"},
    "h200": {"arch": "sm_90", "sms": 132, "clock_mhz": 1980, "bandwidth_gbs": 4800.0,
             "source": "H200 SXM datasheet: 132 SMs, 1980 MHz boost, 4.8 TB/s HBM3e"},
}
DRAM_LATENCY_NS = 600.0   # assumption: loaded DRAM latency, for Little's law

# ---- instruction classes -----------------------------------------------------

PIPE_OF_OPCODE = [
    # (opcode prefixes, pipe); first match wins
    (("HMMA", "IMMA", "DMMA", "HGMMA"), "tensor"),
    (("HFMA2", "HADD2", "HMUL2", "HSETP2", "HSET2", "HMNMX2"), "fp16"),
    (("FFMA", "FADD", "FMUL", "FMNMX32I", "FFMA32I", "FADD32I", "FMUL32I", "IMAD", "IMUL", "IDP",
      "FSWZADD"), "fma"),
    (("F2F", "F2I", "I2F", "I2I", "FRND", "MUFU", "POPC", "FLO", "BREV", "F2FP"), "xu"),
    (("SHFL",), "shfl"),
    (("LDG", "STG", "LDS", "STS", "LDL", "STL", "LD", "ST", "LDSM", "LDGSTS", "ATOM", "ATOMS",
      "ATOMG", "RED", "LDC", "ULDC", "LDGDEPBAR", "MATCH", "VOTE"), "mio"),
    (("BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "BSSY", "BSYNC", "WARPSYNC", "BAR",
      "BMOV", "YIELD", "NOP", "DEPBAR", "MEMBAR", "ERRBAR", "CCTL", "KILL", "BPT", "ACQBULK",
      "ELECT", "PREEXIT", "ENDCOLLECTIVE"), "control"),
]
# the rest (IADD3, LOP3, SHF, PRMT, SEL, MOV, ISETP, FSETP, LEA, S2R, CS2R,
# P2R, R2P, IMNMX, FSEL, PLOP3, IABS, U* uniform ops, ...) -> "alu"

MEM_OPS = ("LDG", "STG", "LDS", "STS", "LDL", "STL", "LD", "ST", "LDSM", "LDGSTS", "ATOM",
           "ATOMS", "ATOMG", "RED")


def pipe_of(opcode):
    base = opcode.split(".")[0]
    if base.startswith("U") and base not in ("UNDEF",):
        return "uniform"
    for prefixes, pipe in PIPE_OF_OPCODE:
        if base in prefixes:
            return pipe
    return "alu"


def mem_bytes(opcode):
    """Bytes a warp moves with one memory instruction (32 threads x width)."""
    parts = opcode.split(".")
    width = 32
    for p in parts[1:]:
        if p in ("64", "128"):
            width = int(p)
        elif p in ("U8", "S8"):
            width = 8
        elif p in ("U16", "S16"):
            width = 16
    if parts[0] == "LDSM":   # ldmatrix: .x4 moves four 8x8 FP16 tiles (512 B)
        n = 4 if ".x4" in opcode.lower() else 2 if ".x2" in opcode.lower() else 1
        return 128 * n
    return 32 * width // 8


# ---- the listing --------------------------------------------------------------

INSTR_RE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*(.*?)\s*;")
FUNC_RE = re.compile(r"Function\s*:\s*(\S+)")
ARCH_RE = re.compile(r"code for (sm_\d+)|arch\s*=\s*(sm_\d+)")
LABEL_RE = re.compile(r"^\s*(\.L_x_\d+):")
# the second 64-bit word of an instruction, alone on the line after it
CTRL_RE = re.compile(r"^\s*/\*\s*(0x[0-9a-f]{16})\s*\*/\s*$")


class Instr:
    __slots__ = ("addr", "pred", "opcode", "operands", "ctrl")

    def __init__(self, addr, pred, opcode, operands, ctrl=None):
        self.addr, self.pred, self.opcode, self.operands = addr, pred, opcode, operands
        self.ctrl = ctrl   # the instruction's second 64-bit word (control bits), when listed


def iter_functions(lines):
    """(name, arch, [Instr], {label: addr}) per function of a cuobjdump -sass
    listing, one at a time (a whole gemm.cu listing is millions of lines)."""
    arch, cur, instrs, labels, pending = None, None, [], {}, []
    last = None   # the instruction whose second word the next line may hold
    for line in lines:
        m = CTRL_RE.match(line)
        if m:
            if last is not None:
                last.ctrl = int(m.group(1), 16)
            last = None
            continue
        last = None
        m = FUNC_RE.search(line)
        if m:
            if cur is not None:
                yield cur, arch, instrs, labels
            cur, instrs, labels, pending = m.group(1), [], {}, []
            continue
        m = ARCH_RE.search(line)
        if m:
            arch = m.group(1) or m.group(2)
            continue
        if cur is None:
            continue
        m = LABEL_RE.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = INSTR_RE.search(line)
        if m:
            ins = Instr(int(m.group(1), 16), (m.group(2) or "").strip(), m.group(3), m.group(4))
            if ins.pred == "@!PT":   # never executes (ptxas's placeholder)
                continue
            instrs.append(ins)
            last = ins
            for lab in pending:
                labels[lab] = ins.addr
            pending = []
    if cur is not None:
        yield cur, arch, instrs, labels


def branch_target(ins, labels):
    if ins.opcode.split(".")[0] not in ("BRA", "JMP"):
        return None
    m = re.search(r"0x([0-9a-f]+)", ins.operands)
    if m:
        return int(m.group(1), 16)
    m = re.search(r"(\.L_x_\d+)", ins.operands)
    if m and m.group(1) in labels:
        return labels[m.group(1)]
    return None


def hot_loop(instrs, labels):
    """The hot loop's instructions and their address span: of the ranges
    from a backward branch's target to the branch that hold HMMAs, the one
    densest in HMMAs (ties: the most HMMAs).  The unrolled steady-state loop
    is the densest: a tail loop carries byte-wise loads, and code laid out
    after the loop that jumps back across it (no loop at all) spans the
    steady loop and more.  (None, None) when there is none."""
    # ptxas guards a warp-synchronizing call with "BRA.CONV past it": taken
    # whenever the warp is converged, so what it jumps over does not run.
    skipped = set()
    for ins in instrs:
        if ins.opcode.startswith("BRA.CONV") and not ins.pred:
            tgt = branch_target(ins, labels)
            if tgt is not None and tgt > ins.addr:
                skipped.update(x.addr for x in instrs if ins.addr < x.addr < tgt)
    instrs = [x for x in instrs if x.addr not in skipped]
    best = None
    for ins in instrs:
        tgt = branch_target(ins, labels)
        if tgt is None or tgt > ins.addr:
            continue
        body = [x for x in instrs if tgt <= x.addr <= ins.addr]
        hmma = sum(1 for x in body if x.opcode.startswith("HMMA"))
        if hmma == 0:
            continue
        key = (hmma / len(body), hmma)
        if best is None or key > best[0]:
            best = (key, body, (tgt, ins.addr))
    return (best[1], best[2]) if best else (None, None)


# ---- load-use distance ----------------------------------------------------------
#
# A warp issues in order: the first instruction that reads a register a
# global load writes waits for the load (hundreds of clocks from DRAM), and
# the warp with it, unless other warps have work.  The throughput ceilings
# above do not see that; this does: per global load of the hot loop, the
# instructions issued before its first reader.

# opcodes with no register destination: every register operand is read
NO_DEST = ("ST", "STG", "STS", "STL", "RED", "BAR", "BRA", "BRX", "JMP", "EXIT", "RET", "CALL",
           "WARPSYNC", "BSYNC", "BSSY", "DEPBAR", "MEMBAR", "NOP", "YIELD", "CCTL", "ERRBAR",
           "KILL", "BPT", "SYNCS", "ARRIVES", "LDGDEPBAR")
REG_RE = re.compile(r"(?<![A-Za-z0-9_])R(\d+)(?![0-9])")


def _regs(text):
    return {int(m.group(1)) for m in REG_RE.finditer(text)}


def _split_dest(ins):
    """(registers written, registers read) of an instruction, from its
    operands: the first operand is the destination unless the opcode has
    none.  A load's destination spans its width (.64: 2, .128: 4)."""
    base = ins.opcode.split(".")[0]
    ops = ins.operands.split(",", 1)
    if base in NO_DEST or not ops[0].strip().startswith("R"):
        return set(), _regs(ins.operands)
    dest = _regs(ops[0])
    if base in ("LDG", "LD", "LDS", "LDL") and dest:
        width = 4 if ".128" in ins.opcode else 2 if ".64" in ins.opcode else 1
        dest = {min(dest) + i for i in range(width)}
    return dest, _regs(ops[1]) if len(ops) > 1 else set()


def load_use_distances(body):
    """[(load's opcode, distance, reader's opcode)] for each global load of
    the hot loop: the instructions issued between it and the first that
    reads what it wrote, around the loop (a reader in the next iteration
    counts the rest of this one); None when an overwrite comes first."""
    out = []
    n = len(body)
    for i, ins in enumerate(body):
        if not _is_global_load(ins):
            continue
        loaded, _ = _split_dest(ins)
        dist, reader = None, None
        for d in range(1, n):
            nxt = body[(i + d) % n]
            written, read = _split_dest(nxt)
            if loaded & read:
                dist, reader = d - 1, nxt.opcode
                break
            if loaded <= written:
                break
        out.append((ins.opcode, dist, reader))
    return out


def _is_global_load(ins):
    """A load from global memory: LDG, or a generic LD (which may also read
    shared memory; the GEMM kernels' generic loads are SM70's copies from
    global memory, where sm_70 has no cp.async)."""
    return ins.opcode.split(".")[0] in ("LDG", "LD")


def memory_waits(body):
    """The memory latencies one pass over the hot loop spends waiting, by
    the control bits: an instruction that waits on a global load issued
    after the last such wait (in this pass or, across the back edge, the
    one before) holds the warp for that load's latency, which only other
    warps can cover.  Loads issued before that last wait were in flight
    during it, so a wait on them alone is not counted: two loads then two
    stores are one latency, not two, and a load issued one pass ahead
    counts only where nothing else waited in between.  The loop runs twice
    and the second pass is scored, so a wait at the loop's head on a load
    at its end counts.  None without control bits."""
    if any(control(ins) is None for ins in body):
        return None
    pending = {}      # scoreboard -> the wait count when its latest global load was issued
    waits = 0
    for pass_no in range(2):
        if pass_no == 1:
            start = waits
        for ins in body:
            write, mask = control(ins)
            hit = [sb for sb in pending if mask >> sb & 1]
            if any(pending[sb] == waits for sb in hit):
                waits += 1
            for sb in hit:
                del pending[sb]
            if write != 7 and _is_global_load(ins):
                pending[write] = waits
    return waits - start


def control(ins):
    """(write scoreboard, wait mask) of a Volta-to-Hopper instruction from its
    control bits (the second word, bits 46-48: the scoreboard its result
    releases, 7 for none; bits 52-57: the scoreboards it waits for; Jia et
    al., "Dissecting the NVIDIA Volta GPU Architecture via
    Microbenchmarking", 2018), or None when the listing lacks the word."""
    if ins.ctrl is None:
        return None
    return (ins.ctrl >> 46) & 7, (ins.ctrl >> 52) & 0x3F


def load_wait_distances(body):
    """[(load's opcode, distance, waiter's opcode)] for each global load of
    the hot loop: the instructions issued before the first that waits on its
    scoreboard, around the loop.  The waiter need not read the load: ptxas
    also waits before a branch whose other side may overwrite the register,
    which a reader-only count (load_use_distances) does not see.  Empty
    without control bits."""
    out = []
    n = len(body)
    for i, ins in enumerate(body):
        c = control(ins)
        if not _is_global_load(ins) or c is None or c[0] == 7:
            continue
        dist, waiter = None, None
        for d in range(1, n + 1):
            nxt = body[(i + d) % n]
            cn = control(nxt)
            if cn is not None and cn[1] >> c[0] & 1:
                dist, waiter = d - 1, nxt.opcode
                break
        out.append((ins.opcode, dist, waiter))
    return out


# ---- kernel identity ------------------------------------------------------------

FAMILY_OF_DEQ = {"DeqFP16": "fp16", "DeqAWQ": "awq", "DeqFP8": "fp8", "DeqMXFP4": "mxfp4",
                 "DeqMXFP4Words": "mxfp4", "DeqNVFP4": "nvfp4", "DeqNVFP4Words": "nvfp4"}
# bits per element and scale bytes per element of each family's layout
BYTES_PER_ELEMENT = {"fp16": 2.0, "fp8": 1.0 + 4.0 / (128 * 128), "awq": 0.5 + 4.0 / 128,
                     "mxfp4": 0.5 + 1.0 / 32, "nvfp4": 0.5 + 1.0 / 16}
ELEMENT_BYTES = {"fp16": 2.0, "fp8": 1.0, "awq": 0.5, "mxfp4": 0.5, "nvfp4": 0.5}


def parse_kernel_name(mangled):
    """(kind, deq class, [int template args]) of a mangled GEMM kernel, or None."""
    m = re.search(r"(vg_decode_kernel|vg_gemm_kernel)I(\d+)", mangled)
    if not m:
        return None
    kind = "decode" if m.group(1) == "vg_decode_kernel" else "tiled"
    n = int(m.group(2))
    start = m.end()
    deq = mangled[start:start + n]
    args = [int(a) for a in re.findall(r"Li(-?\d+)E", mangled[start + n:])]
    return kind, deq, args


def describe(kind, deq, args):
    """Plan tile name (as in the plan ids), family and the template facts."""
    family = FAMILY_OF_DEQ.get(deq, deq)
    info = {"family": family, "deq": deq, "kind": kind}
    if kind == "decode" and len(args) >= 4:
        ni, wk, mt, uu = args[:4]
        wn = args[4] if len(args) >= 5 else 1  # warps side by side over N (plan_list.h DECODE_WN)
        if min(ni, wk, mt, uu, wn) <= 0:
            raise ValueError(f"decode kernel of {deq} with template arguments {list(args)}: "
                             f"a tile count of 0 (not a kernel this project builds)")
        bits = ELEMENT_BYTES[family] * 8 if family in ELEMENT_BYTES else 8
        u = max(uu // 2, 1) if bits == 16 else uu
        uw = 2 * u if bits == 4 and u <= 2 else u
        tile = (f"decode.m{8 * mt}n{16 * ni * wn}wn{wn}wk{wk}.u{uu}" if wn > 1
                else f"decode.m{8 * mt}n{16 * ni}w{wk}.u{uu}")
        info.update(tile=tile, ni=ni, wk=wk, wn=wn, mt=mt, uu=uu, uw=uw,
                    warp_step_bytes=16 * ni * 128 * ELEMENT_BYTES.get(family, 1.0),
                    threads=32 * wk * wn)
    elif kind == "tiled" and len(args) >= 7:
        bm, bn, bk, wm, wn, wkk, st = args[:7]
        prefix = "mid" if bm <= 64 and bk >= 128 else "prefill"
        info.update(tile=f"{prefix}.m{bm}n{bn}k{bk}.s{st}", bm=bm, bn=bn, bk=bk, threads=32 * wm * wn * wkk)
    else:
        info["tile"] = kind
    return info


def parse_res_usage(text):
    """{function: {"REG": n, "STACK": n, "LOCAL": n, ...}} from cuobjdump -res-usage."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"Function\s+(\S+?):?\s*$", line.strip())
        if m:
            cur = m.group(1).rstrip(":")
            continue
        if cur and "REG:" in line:
            out[cur] = {k: int(v) for k, v in re.findall(r"(\w+(?:\[\d+\])?):(\d+)", line)}
            cur = None
    return out


# ---- the model -------------------------------------------------------------------


def model_kernel(name, arch_name, instrs, labels, res, machine, bandwidth_gbs):
    ident = parse_kernel_name(name)
    if not ident:
        return None
    arch = ARCHS[arch_name]
    info = describe(*ident)
    body, span = hot_loop(instrs, labels)
    row = {"kernel": name, "arch": arch_name, **info}
    if body is None:
        row["error"] = "no loop with HMMA"
        return row
    counts, opcodes = {}, {}
    sched_cycles = {p: 0.0 for p in ("issue", "alu", "fma", "fp16", "tensor", "xu")}
    mio_cycles, macs = 0.0, 0
    spill_ops = 0
    for ins in body:
        pipe = pipe_of(ins.opcode)
        counts[pipe] = counts.get(pipe, 0) + 1
        base = ins.opcode.split(".")[0]
        opcodes[base] = opcodes.get(base, 0) + 1
        sched_cycles["issue"] += 1
        if pipe in ("alu", "fma", "fp16", "xu"):
            cost = arch["cost"][pipe]
            if base in ("IMAD", "IMUL") and "imad_cost" in arch:
                cost = arch["imad_cost"]
            sched_cycles[pipe] += cost
        elif pipe == "tensor":
            key = next((k for k in arch["hmma_macs"] if ins.opcode.startswith(k)), None)
            m = arch["hmma_macs"][key] if key else 0
            macs += m
            sched_cycles["tensor"] += m / (arch["tensor_macs_per_clk_sm"] / arch["schedulers"])
        elif pipe == "shfl":
            mio_cycles += 1.0 / arch["shfl_per_clk"]
        elif pipe == "mio" and base in MEM_OPS:
            mio_cycles += max(1.0, mem_bytes(ins.opcode) / arch["mio_bytes_per_clk"])
            if base in ("LDL", "STL"):
                spill_ops += 1
    # scheduler cycles -> SM clocks: the warps of an SM spread over its schedulers
    n_sched = arch["schedulers"]
    clocks = {p: c / n_sched for p, c in sched_cycles.items()}
    if arch["shared_port"]:
        clocks["fp16+tensor"] = sum(sched_cycles[p] for p in arch["shared_port"]) / n_sched
    clocks["mio"] = mio_cycles
    bound = max(clocks, key=lambda p: clocks[p])
    t_instr = clocks[bound]
    row.update(loop=f"{span[0]:#x}-{span[1]:#x}", instructions=len(body), hmma=counts.get("tensor", 0), shfl=counts.get("shfl", 0),
               by_pipe=counts, opcodes=dict(sorted(opcodes.items(), key=lambda kv: -kv[1])),
               clocks={p: round(c, 3) for p, c in clocks.items()}, bound=bound,
               macs_per_iter=macs, loop_spill_ops=spill_ops)
    uses = [d for _, d, _ in load_use_distances(body) if d is not None]
    if uses:
        row["load_use_min"] = min(uses)
        row["loads_used_within_16"] = sum(1 for d in uses if d < 16)
    waits = [(d, w) for _, d, w in load_wait_distances(body) if d is not None]
    if waits:
        d, w = min(waits)
        row["load_wait_min"], row["load_wait_min_at"] = d, w.split(".")[0]
        row["loads_waited_within_16"] = sum(1 for d, _ in waits if d < 16)
    mem_waits = memory_waits(body)
    if mem_waits is not None:
        row["memory_waits_per_iter"] = mem_waits
    # instructions per 16x8x16 product (2048 multiply-adds), the unit of the table
    if macs:
        row["instructions_per_16816"] = round(len(body) * 2048.0 / macs, 1)
    if res:
        row["regs"] = res.get("REG")
        row["stack_bytes"] = res.get("STACK", 0)
    bw_per_clk_sm = bandwidth_gbs * 1e9 / (machine["sms"] * machine["clock_mhz"] * 1e6)
    if info["kind"] == "decode" and "mt" in info and macs:
        elements = macs / (8.0 * info["mt"])
        wbytes = elements * BYTES_PER_ELEMENT.get(info["family"], 1.0)
        t_dram = wbytes / bw_per_clk_sm
        row.update(weight_bytes_per_iter=round(wbytes, 1), dram_clocks=round(t_dram, 2),
                   ceiling=round(min(1.0, t_dram / t_instr), 4) if t_instr > 0 else None,
                   ceiling_of="dram bandwidth")
        # W in flight: steps loaded ahead x bytes per warp step x warps per SM
        warps_per_block = info["wk"] * info.get("wn", 1)
        blocks = arch["max_warps_per_sm"] // warps_per_block
        if res and res.get("REG"):
            regs_per_block = res["REG"] * 32 * warps_per_block
            blocks = min(blocks, arch["regs_per_sm"] // max(regs_per_block, 1))
        warps = blocks * warps_per_block
        inflight = warps * info["uw"] * info["warp_step_bytes"]
        need = bw_per_clk_sm * machine["clock_mhz"] * 1e6 * DRAM_LATENCY_NS * 1e-9
        row.update(warps_per_sm=warps, w_inflight_bytes_per_sm=int(inflight),
                   w_inflight_needed_bytes=int(need))
    elif macs:
        t_tensor = macs / arch["tensor_macs_per_clk_sm"]
        row.update(ceiling=round(min(1.0, t_tensor / max(t_instr, t_tensor)), 4),
                   ceiling_of="tensor peak")
    return row


def run_model(lines, res_text, arch_override, machine_name, bandwidth_gbs):
    """The rows of every GEMM kernel in a listing (an iterable of lines)."""
    res = parse_res_usage(res_text) if res_text else {}
    machine = dict(MACHINES[machine_name])
    rows = []
    for name, arch, instrs, labels in iter_functions(lines):
        if not parse_kernel_name(name):
            continue
        if arch_override and arch and arch != arch_override:
            continue    # a fat binary's other arch
        arch = arch_override or arch
        if arch not in ARCHS:
            raise ValueError(f"unknown or missing arch {arch!r} for {name} (have {', '.join(sorted(ARCHS))}; "
                             f"give --arch)")
        row = model_kernel(name, arch, instrs, labels, res.get(name), machine,
                           bandwidth_gbs or machine["bandwidth_gbs"])
        if row:
            rows.append(row)
    rows.sort(key=lambda r: (r["kind"], r["family"], r.get("tile", ""), r["kernel"]))
    return rows


def format_table(rows, machine_name):
    head = ("family", "kernel", "instr", "HMMA", "SHFL", "bound", "clk/iter", "work/iter", "ceiling",
            "W in flight/SM", "regs", "ld-use", "ld-wait", "mem-waits")
    lines = []
    for r in rows:
        if "error" in r:
            lines.append((r["family"], r["tile"], "-", "-", "-", r["error"], "", "", "", "", "", "", "", ""))
            continue
        work = (f"{r['weight_bytes_per_iter']:.0f} B" if "weight_bytes_per_iter" in r
                else f"{r['macs_per_iter']} MAC")
        inflight = (f"{r['w_inflight_bytes_per_sm'] / 1024:.0f}/{r['w_inflight_needed_bytes'] / 1024:.1f} KB"
                    if "w_inflight_bytes_per_sm" in r else "")
        ceil = f"{100 * r['ceiling']:.0f}% {'bw' if r['kind'] == 'decode' else 'tc'}" if r.get("ceiling") is not None else "-"
        lines.append((r["family"], r["tile"], str(r["instructions"]), str(r["hmma"]), str(r["shfl"]), r["bound"],
                      f"{r['clocks'][r['bound']]:.1f}", work, ceil, inflight, str(r.get("regs", "?")),
                      str(r.get("load_use_min", "-")),
                      f"{r['load_wait_min']} {r['load_wait_min_at']}" if "load_wait_min" in r else "-",
                      str(r.get("memory_waits_per_iter", "-"))))
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h) for i, h in enumerate(head)]
    out = [f"model: {machine_name} ceilings from SASS (an upper bound, not a prediction)",
           "  ".join(h.ljust(w) for h, w in zip(head, widths))]
    out += ["  ".join(c.ljust(w) for c, w in zip(l, widths)) for l in lines]
    return "\n".join(out)


def default_machine(arch):
    return "v100" if arch == "sm_70" else "h100"


def arch_of_object(tool, obj):
    out = subprocess.run([tool, "-lelf", obj], capture_output=True, text=True).stdout
    m = re.search(r"sm_(\d+)", out)
    return f"sm_{m.group(1)}" if m else None


def find_cuobjdump():
    for c in (os.environ.get("CUOBJDUMP"), "/usr/bin/cuobjdump", shutil.which("cuobjdump")):
        if c and os.path.exists(c):
            return c
    raise ValueError("no cuobjdump found (set CUOBJDUMP)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("listing", nargs="?", help="a cuobjdump -sass listing ('-' for stdin)")
    ap.add_argument("--object", action="append",
                    help="a .o/.cubin: run cuobjdump -sass and -res-usage on it; repeat it for several "
                         "objects (the per-family gemm_*.cu.o), read as one listing")
    ap.add_argument("--res-usage", help="a cuobjdump -res-usage listing (registers, spills)")
    ap.add_argument("--arch", choices=sorted(ARCHS),
                    help="the SASS arch (default: from the listing); with a fat binary, the only arch modelled")
    ap.add_argument("--machine", choices=sorted(MACHINES), help="default: v100 for sm_70, h100 for sm_90")
    ap.add_argument("--bandwidth-gbs", type=float, help="DRAM bandwidth to bound against (default: the machine's peak)")
    ap.add_argument("--json", help="write the rows as JSON here")
    ap.add_argument("--filter", help="only kernels whose tile or family contains this")
    ap.add_argument("--require-no-shfl", action="store_true",
                    help="exit 1 unless every decode kernel's hot loop has no SHFL and no spill op (sm_70 check)")
    a = ap.parse_args(argv)
    if a.bandwidth_gbs is not None and not 0 < a.bandwidth_gbs < math.inf:
        print(f"sass_model: --bandwidth-gbs {a.bandwidth_gbs:g}: give a finite bandwidth above 0", file=sys.stderr)
        return 2
    try:
        if a.object:
            tool = find_cuobjdump()
            res_text = "".join(subprocess.run([tool, "-res-usage", o], capture_output=True, text=True,
                                              check=True).stdout for o in a.object)
            arch_hint = a.arch or arch_of_object(tool, a.object[0])
            machine = a.machine or default_machine(arch_hint)
            rows = []
            for o in a.object:
                with subprocess.Popen([tool, "-sass", o], stdout=subprocess.PIPE, text=True) as proc:
                    rows += run_model(proc.stdout, res_text, a.arch, machine, a.bandwidth_gbs)
                if proc.returncode != 0:
                    raise ValueError(f"{tool} -sass {o} failed (exit {proc.returncode})")
            rows.sort(key=lambda r: (r["kind"], r["family"], r.get("tile", ""), r["kernel"]))
        elif a.listing:
            res_text = open(a.res_usage, encoding="utf-8").read() if a.res_usage else ""
            f = sys.stdin if a.listing == "-" else open(a.listing, encoding="utf-8")
            with f:
                head = [next(f, "") for _ in range(8)]
                m = next((ARCH_RE.search(l) for l in head if ARCH_RE.search(l)), None)
                arch_hint = a.arch or ((m.group(1) or m.group(2)) if m else None)
                machine = a.machine or default_machine(arch_hint)
                rows = run_model(itertools.chain(head, f), res_text, a.arch, machine, a.bandwidth_gbs)
        else:
            ap.error("give a listing or --object")
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print(f"sass_model: {e}", file=sys.stderr)
        return 2
    if a.filter:
        rows = [r for r in rows if a.filter in r.get("tile", "") or a.filter == r["family"]]
    if not rows:
        print("sass_model: no vg_decode_kernel / vg_gemm_kernel in the listing", file=sys.stderr)
        return 2
    print(format_table(rows, machine))
    if a.json:
        m = MACHINES[machine]
        doc = {"schema": "voltgate-sass-model/1", "machine": machine, "machine_source": m["source"],
               "bandwidth_gbs": a.bandwidth_gbs or m["bandwidth_gbs"], "dram_latency_ns": DRAM_LATENCY_NS,
               "kernels": rows}
        try:
            vgrecord.write_text_atomic(a.json, json.dumps(doc, indent=1))
        except OSError as e:
            print(f"sass_model: cannot write {a.json}: {e.strerror or e}", file=sys.stderr)
            return 2
    if a.require_no_shfl:
        bad = [r for r in rows if r["kind"] == "decode" and (r.get("shfl") or r.get("loop_spill_ops")
                                                              or r.get("stack_bytes"))]
        for r in bad:
            print(f"sass_model: {r['family']} {r['tile']}: {r.get('shfl', 0)} SHFL and "
                  f"{r.get('loop_spill_ops', 0)} local-memory ops in the hot loop, "
                  f"{r.get('stack_bytes', 0)} bytes of stack", file=sys.stderr)
        if bad:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
