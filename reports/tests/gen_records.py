#!/usr/bin/python3
"""Synthetic voltgate tool outputs and records, for the report's tests and for
looking at the page before real tool outputs exist.  Every number here is
made up (seeded random noise); nothing reads it as a measurement.

    gen_records.py --history DIR [--commits 5] [--samples 30] [--slow-last 0.10]
                   [--fail-last CASE] [--shards 1] [--seed 1]

writes one record per commit (per shard with --shards N), dates one hour
apart, the last commit optionally slowed by --slow-last on the grouped fp8
rows and with golden case --fail-last failing.
"""
import argparse
import datetime
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import record  # noqa: E402

FAMILIES = ["fp16", "awq", "fp8", "mxfp4", "nvfp4"]
TOL = {"fp16": 1e-3, "awq": 5e-3, "fp8": 2e-2, "mxfp4": 8e-2, "nvfp4": 6e-2}
BYTES_PER_W = {"fp16": 2.0, "awq": 0.5, "fp8": 1.0, "mxfp4": 0.5, "nvfp4": 0.5}
COPY_GBS = 4220.0


def samples(rng, center, n, spread=0.01):
    return [round(center * (1.0 + rng.gauss(0.0, spread)), 4) for _ in range(n)]


def bench_row(rng, name, kind, path, family, m, n, k, groups, tokens, center, nsamp, rel_rms=None):
    s = samples(rng, center, nsamp)
    med = record_median(s)
    wbytes = int(BYTES_PER_W.get(family, 2.0) * n * k * max(groups, 1))
    return {"name": name, "kind": kind, "path": path, "family": family, "m": m, "n": n, "k": k,
            "groups": groups, "tokens": tokens, "plan": f"{path}-t16x64x128-s2-k1" if kind == "kernel" else None,
            "decision": "measure" if "tune=on" in name else ("heuristic" if kind == "kernel" else "n/a"),
            "samples_us": s, "median_us": med, "min_us": min(s), "max_us": max(s),
            "bytes": wbytes, "flops": 2 * m * n * k,
            "bandwidth_fraction": wbytes / (med * 1e-6) / (COPY_GBS * 1e9),
            "max_rel_rms": rel_rms}


def record_median(s):
    import stats
    return stats.median(s)


def make_bench(rng, nsamp, slow=0.0, families=("fp8", "awq", "nvfp4")):
    rows = [bench_row(rng, "copy/d2d/256MiB", "copy", "n/a", "n/a", 0, 0, 0, 0, 0, 127.0, nsamp)]
    for fam in families:
        floor = BYTES_PER_W[fam] * 1024 * 4096 * 8 / (COPY_GBS * 1e3)     # us at the copy bandwidth
        for tok in (1, 2, 4, 6, 8, 16):
            for tune in ("off", "on"):
                g = floor / 0.82 * (1.0 + 0.01 * tok) * (1.0 if tune == "on" else 1.15)
                if fam == "fp8" and slow:
                    g *= 1.0 + slow
                rows.append(bench_row(rng, f"wo_a/grouped/{fam}/t{tok}/tune={tune}", "kernel", "grouped",
                                      fam, 8 * tok, 1024, 4096, 8, tok, g, nsamp, 1.2e-4 * (1 + tok / 10)))
                rows.append(bench_row(rng, f"wo_a/loop/{fam}/t{tok}/tune={tune}", "kernel", "loop",
                                      fam, 8 * tok, 1024, 4096, 8, tok, g * 4.6, nsamp, 1.1e-4))
        rows.append(bench_row(rng, f"n4096k4096/dense/{fam}/m16/tune=off", "kernel", "dense", fam, 16,
                              4096, 4096, 1, 16, floor * 2 / 0.85, nsamp, 9e-5))
    rows.append(bench_row(rng, "wo_a/peer-cublas-bmm-bf16/t6", "peer", "grouped", "fp16", 48, 1024, 4096,
                          8, 6, 18.6, nsamp))
    rows.append(bench_row(rng, "dispatch/reuse", "dispatch", "n/a", "fp8", 1, 1024, 4096, 1, 1, 0.35, nsamp))
    return {"tool": "bench", "backend": "cuda", "gpu": "NVIDIA H200 (synthetic)", "driver": "580.00",
            "cuda_version": "13.0", "arch_list": "75 80 90", "policy_hash": "0123456789abcdef",
            "config": {"sm70_runtime": {"fp8_grouped_bmm_decode": True, "fp8_tune_small_shapes": True,
                                        "freeze_tuning_after_warmup": True}},
            "copy_bandwidth_gbs": COPY_GBS, "rows": rows}


CROSSOVER_M = (1, 16, 32, 64, 128, 256, 512, 1024, 4096, 8192)


def crossover_peer_us(n, k, m):
    """A made-up cuBLAS BF16 time: the larger of reading W as BF16 at 3 TB/s
    and 2*M*N*K at 600 TFLOP/s, plus 5 us."""
    return max(n * k * 2 / 3.0e6, 2.0 * m * n * k / 6.0e8) + 5.0


def make_crossover_bench(rng, nsamp, family, speedup, best_over_tuned=None, backend="cuda"):
    """A bench file of `voltgate bench --shape crossover --tune on --family
    family`: at each crossover M of both dense shapes (the M=N=K=4096 row
    under prefill4096's name, as the bench runs it) the tuned row, one row
    per plan kind offered there (decode up to 64 rows, tiled, dequant+cublas
    from 17) and the cuBLAS BF16 peer.  speedup(m) sets the tuned row's
    speedup over the peer; the fastest kind runs best_over_tuned(m) times
    the tuned row's time (1.0: the tuner found it), the other kinds
    slower."""
    best_over_tuned = best_over_tuned or (lambda m: 1.0)
    rows = [bench_row(rng, "copy/d2d/512MiB", "copy", "n/a", "n/a", 0, 0, 0, 0, 0, 127.0, nsamp)]
    for n, k in ((4096, 4096), (4096, 14336)):
        for m in CROSSOVER_M:
            shape = "prefill4096" if (m, n, k) == (4096, 4096, 4096) else f"n{n}k{k}"
            peer = crossover_peer_us(n, k, m)
            tuned = peer / speedup(m)
            kinds = [kind for kind, ok in (("decode", m <= 64), ("tiled", True), ("dequant+cublas", m >= 17)) if ok]
            best = kinds[0] if m <= 16 else ("dequant+cublas" if m > 64 else "decode")
            r = bench_row(rng, f"{shape}/dense/{family}/m{m}/tune=on", "kernel", "dense", family, m, n, k, 1, m,
                          tuned, nsamp, 2e-4)
            # a tuner that missed the fastest plan chose another one of its kind
            missed = "" if best_over_tuned(m) == 1.0 else ".missed"
            r.update(plan=f"cuda.dense.{best}.m{m}{missed}", decision="measure", plan_kind=best, workspace_bytes=0)
            rows.append(r)
            for i, kind in enumerate(kinds):
                us = tuned * best_over_tuned(m) * (1.0 if kind == best else 1.3 + 0.5 * i)
                plan = f"cuda.dense.{kind}.m{m}"
                r = bench_row(rng, f"{shape}/dense/{family}/m{m}/kind={kind}", "kernel", "dense", family, m, n, k,
                              1, m, us, nsamp, 2e-4)
                r.update(plan=plan, decision="forced", plan_kind=kind,
                         workspace_bytes=n * k * 2 if kind == "dequant+cublas" else 0,
                         candidates_us={plan: us, plan + ".sk2": us * 1.2})
                rows.append(r)
            r = bench_row(rng, f"{shape}/peer-cublas-bf16/m{m}", "peer", "dense", "n/a", m, n, k, 1, m, peer, nsamp)
            r.update(plan="cublasGemmEx.bf16.x1")
            rows.append(r)
    return {"tool": "bench", "backend": backend, "gpu": "NVIDIA H100 (synthetic)", "driver": "580.00",
            "cuda_version": "13.0", "arch_list": "90", "policy_hash": "0123456789abcdef", "config": {},
            "copy_bandwidth_gbs": COPY_GBS, "rows": rows}


def make_golden(rng, fail_case=None):
    rows = []
    for fam in FAMILIES:
        for path in ("dense", "grouped", "loop", "moe"):
            for plan in ("p0", "p1"):
                case = f"{fam}_{path}_small"
                err = TOL[fam] * 10 ** rng.uniform(-2.0, -0.5)
                verdict = "PASS"
                if case == fail_case:
                    err, verdict = TOL[fam] * 3.0, "FAIL"
                rows.append({"case": case, "file": f"golden/cases/{case}.h5", "family": fam, "path": path,
                             "m": 4, "n": 256, "k": 384, "groups": 1 if path == "dense" else 4, "tokens": 1,
                             "backend": "cpu", "plan": plan, "rel_rms": err, "max_abs": err * 20,
                             "tol_rel_rms": TOL[fam], "tol_max_abs": TOL[fam] * 50, "verdict": verdict})
    return {"tool": "golden-verify", "rows": rows}


def make_replay(rng, serving_measured=0):
    per = []
    for i, prompt in enumerate([12, 1500, 37, 1500, 4096, 12, 640, 37]):
        new = i in (0, 1, 2, 4, 6)
        per.append({"prompt": prompt, "new_shape": new, "measured": 1 if (new and serving_measured and i == 6) else 0,
                    "dispatch_us": round(rng.uniform(8, 14), 2), "engine": "default"})
    return {"tool": "replay", "warmup_measured": 68, "serving_measured": serving_measured,
            "requests_with_new_shape": 5, "requests": len(per), "per_request": per}


def make_history(directory, commits=5, nsamp=30, slow_last=0.0, fail_last=None, shards=1, seed=1,
                 start=None, coverage=True):
    """Writes synthetic records; returns their paths."""
    rng = random.Random(seed)
    start = start or datetime.datetime(2026, 12, 1, 0, 0, tzinfo=datetime.timezone.utc)
    paths = []
    for c in range(commits):
        last = c == commits - 1
        commit = f"{c + 1:02x}" + "abcdef0123456789" * 2 + f"{c:06x}"
        commit = commit[:40]
        bench = make_bench(rng, nsamp, slow_last if last else 0.0)
        golden = make_golden(rng, fail_last if last else None)
        for s in range(shards):
            part = dict(bench, rows=bench["rows"][s::shards])
            gpart = dict(golden, rows=golden["rows"][s::shards])
            cov = None
            if coverage and s == 0:
                cov = {"line_percent": 86.0 + c * 0.3, "branch_percent": 71.5, "lines_covered": 860 + 3 * c,
                       "lines_valid": 1000, "branches_covered": 715, "branches_valid": 1000,
                       "files": [{"file": "runtime/decision.c", "line_percent": 91.0, "branch_percent": 80.0},
                                 {"file": "kernels/cpu/dense.c", "line_percent": 84.0, "branch_percent": 66.0}]}
            rec = record.build_record(golden=[("golden.json", gpart)], bench=[("bench.json", part)],
                                      replay=("replay.json", make_replay(rng)) if s == 0 else None,
                                      coverage=cov, runner=f"gpu{s}" if shards > 1 else "local",
                                      shard=f"{s}/{shards}" if shards > 1 else None, repo="/nonexistent",
                                      now=start + datetime.timedelta(hours=c, minutes=s))
            rec.update(commit=commit, short_commit=commit[:10], dirty=False)
            paths.append(record.write_record(rec, directory))
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--history", required=True)
    ap.add_argument("--commits", type=int, default=5)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--slow-last", type=float, default=0.0)
    ap.add_argument("--fail-last", default=None)
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    for p in make_history(a.history, a.commits, a.samples, a.slow_last, a.fail_last, a.shards, a.seed):
        print(p)


if __name__ == "__main__":
    main()
