// ci/overlap-probe.cu: does a bandwidth-bound W copy (fp8 -> FP16, the
// dequantize + cuBLAS plan's first pass) run beside cuBLAS's GEMM on this GPU?
// KERNELS.md D51 holds its H100 figures.  On the device:
//
//   nvcc -O3 -std=c++17 -arch=sm_90 ci/overlap-probe.cu -o /tmp/overlap-probe -lcublas && /tmp/overlap-probe
//
// Per (K, M), N = 4096, us per iteration: copy alone, GEMM alone (at
// N=K=4096 its FP16 W stays in L2), copy then GEMM (the plan today), the two
// on two streams with nothing shared ("indep"), and sliced pipelines on two
// streams, slice i+1's copy during slice i's GEMM: K slices summed with
// beta = 1 into FP32 (then converted) or FP16 ("ks<S>.f32", "ks<S>.f16"), the
// same with cuBLAS told to fill 5/6 of the SMs and the copy sized for the
// rest ("ks<S>.t", cublasSetSmCountTarget), and N slices each writing its own
// output columns ("ns<S>").  Each variant is captured in a CUDA graph of R
// iterations over R rotating fp8 weights (R x bytes > 3 x L2), median of 15
// replays / R; "rms" is the output's relative RMS difference from copy then
// GEMM (the indep variant's output is not meaningful: its GEMM reads the
// copy being written).
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <algorithm>
#include <vector>
#include <functional>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1);} } while (0)
#define CB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "%s:%d cublas %d\n", __FILE__, __LINE__, (int)s_); exit(1);} } while (0)

// rows [n0, n1), columns [k0, k1) of W (fp8, N x K) -> Wh (fp16, N x K)
__global__ void copy_kernel(const unsigned char *__restrict__ w, const float *__restrict__ scale,
                            __half *__restrict__ wh, int K, int n0, int n1, int k0, int k1)
{
    const int cpr = (k1 - k0) / 16;
    const long total = (long)(n1 - n0) * cpr;
    for (long c = blockIdx.x * (long)blockDim.x + threadIdx.x; c < total; c += (long)gridDim.x * blockDim.x) {
        const int r = n0 + (int)(c / cpr);
        const int k = k0 + (int)(c % cpr) * 16;
        const uint4 raw = *(const uint4 *)(w + (size_t)r * K + k);
        const float s = scale[r];
        const unsigned *b = (const unsigned *)&raw;
        __align__(16) __half2 out[8];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            __half2_raw lo = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(b[j] & 0xffff), __NV_E4M3);
            __half2_raw hi = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(b[j] >> 16), __NV_E4M3);
            float2 fl = __half22float2(*(__half2 *)&lo), fh = __half22float2(*(__half2 *)&hi);
            out[2 * j] = __floats2half2_rn(fl.x * s, fl.y * s);
            out[2 * j + 1] = __floats2half2_rn(fh.x * s, fh.y * s);
        }
        uint4 *dst = (uint4 *)(wh + (size_t)r * K + k);
        dst[0] = ((uint4 *)out)[0];
        dst[1] = ((uint4 *)out)[1];
    }
}

__global__ void to_half(const float *__restrict__ a, __half *__restrict__ b, long n)
{
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n / 4; i += (long)gridDim.x * blockDim.x) {
        float4 v = ((const float4 *)a)[i];
        __half2 *o = (__half2 *)b + 2 * i;
        o[0] = __floats2half2_rn(v.x, v.y);
        o[1] = __floats2half2_rn(v.z, v.w);
    }
}

static int g_copy_blocks;

int main(int argc, char **argv)
{
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, copy_kernel, 256, 0));
    g_copy_blocks = occ * prop.multiProcessorCount;
    printf("device %s, %d SMs, L2 %d MB, copy kernel %d blocks/SM\n", prop.name, prop.multiProcessorCount,
           prop.l2CacheSize >> 20, occ);
    const int N = 4096;
    const int Ks[] = {4096, 14336};
    const int Ms[] = {128, 256, 512, 1024, 4096};
    cublasHandle_t h;
    CB(cublasCreate(&h));
    void *cws;
    const size_t cws_bytes = 32u << 20;
    CK(cudaMalloc(&cws, cws_bytes));
    CB(cublasSetWorkspace(h, cws, cws_bytes));
    cudaStream_t s0, s1;
    CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    std::vector<cudaEvent_t> ev(64);
    for (auto &e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    cudaEvent_t t0, t1;
    CK(cudaEventCreate(&t0));
    CK(cudaEventCreate(&t1));

    for (int K : Ks) {
        const size_t wbytes = (size_t)N * K;
        const int R = std::max(2, (int)((3.0 * prop.l2CacheSize) / wbytes) + 1);
        std::vector<unsigned char *> W(R);
        std::vector<unsigned char> hw(wbytes);
        srand(1);
        for (auto &b : hw) { b = (unsigned char)(rand() & 0x7f); if ((b & 0x78) == 0x78) b = 0x30; if (rand() & 1) b |= 0x80; }
        for (auto &p : W) { CK(cudaMalloc(&p, wbytes)); CK(cudaMemcpy(p, hw.data(), wbytes, cudaMemcpyHostToDevice)); }
        float *scale;
        CK(cudaMalloc(&scale, N * 4));
        std::vector<float> hs(N, 0.01f);
        CK(cudaMemcpy(scale, hs.data(), N * 4, cudaMemcpyHostToDevice));
        __half *wh;
        CK(cudaMalloc(&wh, wbytes * 2));
        for (int M : Ms) {
            __half *x, *y, *yref;
            float *acc;
            CK(cudaMalloc(&x, (size_t)M * K * 2));
            CK(cudaMalloc(&y, (size_t)M * N * 2));
            CK(cudaMalloc(&yref, (size_t)M * N * 2));
            CK(cudaMalloc(&acc, (size_t)M * N * 4));
            {
                std::vector<__half> hx((size_t)M * K);
                for (auto &v : hx) v = __float2half((rand() % 2001 - 1000) / 1000.0f);
                CK(cudaMemcpy(x, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
            }
            const float one = 1.f, zero = 0.f;
            const __half hone = __float2half(1.f), hzero = __float2half(0.f);
            auto copy = [&](cudaStream_t s, int r, int n0, int n1, int k0, int k1) {
                copy_kernel<<<g_copy_blocks, 256, 0, s>>>(W[r], scale, wh, K, n0, n1, k0, k1);
            };
            // Y (M x N row-major) = X (M x K) W^T: column-major Y^T (N x M) = W (as K x N col-major)^T X^T
            auto gemm16 = [&](cudaStream_t s, int n0, int n1, int k0, int k1, bool accum) {
                CB(cublasSetStream(h, s));
                CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n1 - n0, M, k1 - k0, &one, wh + (size_t)n0 * K + k0, CUDA_R_16F, K,
                                x + k0, CUDA_R_16F, K, accum ? &one : &zero, y + n0, CUDA_R_16F, N,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            };
            auto gemm32 = [&](cudaStream_t s, int k0, int k1, bool accum) {
                CB(cublasSetStream(h, s));
                CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, k1 - k0, &one, wh + k0, CUDA_R_16F, K,
                                x + k0, CUDA_R_16F, K, accum ? &one : &zero, acc, CUDA_R_32F, N,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            };
            (void)hone; (void)hzero;
            // variant bodies: one iteration on weight r, starting and ending on s0
            struct Var { const char *name; std::function<void(int)> body; };
            std::vector<Var> vars;
            vars.push_back({"copy", [&](int r) { copy(s0, r, 0, N, 0, K); }});
            vars.push_back({"gemm", [&](int r) { (void)r; gemm16(s0, 0, N, 0, K, false); }});
            vars.push_back({"seq", [&](int r) { copy(s0, r, 0, N, 0, K); gemm16(s0, 0, N, 0, K, false); }});
            vars.push_back({"indep", [&](int r) {
                CK(cudaEventRecord(ev[0], s0)); CK(cudaStreamWaitEvent(s1, ev[0]));
                copy(s0, r, 0, N, 0, K); gemm16(s1, 0, N, 0, K, false);
                CK(cudaEventRecord(ev[1], s1)); CK(cudaStreamWaitEvent(s0, ev[1])); }});
            for (int S : {2, 4, 8}) {
                for (int fp32 : {1, 0}) {
                    char *nm = (char *)malloc(32);
                    snprintf(nm, 32, "ks%d.%s", S, fp32 ? "f32" : "f16");
                    vars.push_back({nm, [&, S, fp32](int r) {
                        // s0 copies, s1 multiplies; copy i+1 runs beside GEMM i
                        const int ks = K / S;
                        CK(cudaEventRecord(ev[0], s0)); CK(cudaStreamWaitEvent(s1, ev[0]));
                        for (int i = 0; i < S; ++i) {
                            copy(s0, r, 0, N, i * ks, (i + 1) * ks);
                            CK(cudaEventRecord(ev[1 + i], s0));
                            CK(cudaStreamWaitEvent(s1, ev[1 + i]));
                            if (fp32) gemm32(s1, i * ks, (i + 1) * ks, i > 0);
                            else gemm16(s1, 0, N, i * ks, (i + 1) * ks, i > 0);
                        }
                        if (fp32) to_half<<<prop.multiProcessorCount * 4, 256, 0, s1>>>(acc, y, (long)M * N);
                        CK(cudaEventRecord(ev[40], s1)); CK(cudaStreamWaitEvent(s0, ev[40])); }});
                }
                {
                    // cuBLAS told to fill fewer SMs (cublasSetSmCountTarget), the copy sized for the rest
                    char *nm2 = (char *)malloc(32);
                    snprintf(nm2, 32, "ks%d.t", S);
                    vars.push_back({nm2, [&, S](int r) {
                        const int ks = K / S;
                        const int spare = prop.multiProcessorCount / 6;
                        CB(cublasSetSmCountTarget(h, prop.multiProcessorCount - spare));
                        CK(cudaEventRecord(ev[0], s0)); CK(cudaStreamWaitEvent(s1, ev[0]));
                        for (int i = 0; i < S; ++i) {
                            if (i == 0) copy(s0, r, 0, N, 0, ks);
                            else copy_kernel<<<spare * (g_copy_blocks / prop.multiProcessorCount), 256, 0, s0>>>(W[r], scale, wh, K, 0, N, i * ks, (i + 1) * ks);
                            CK(cudaEventRecord(ev[1 + i], s0));
                            CK(cudaStreamWaitEvent(s1, ev[1 + i]));
                            gemm16(s1, 0, N, i * ks, (i + 1) * ks, i > 0);
                        }
                        CB(cublasSetSmCountTarget(h, 0));
                        CK(cudaEventRecord(ev[40], s1)); CK(cudaStreamWaitEvent(s0, ev[40])); }});
                }
                char *nm = (char *)malloc(32);
                snprintf(nm, 32, "ns%d", S);
                vars.push_back({nm, [&, S](int r) {
                    const int ns = N / S;
                    CK(cudaEventRecord(ev[0], s0)); CK(cudaStreamWaitEvent(s1, ev[0]));
                    for (int i = 0; i < S; ++i) {
                        copy(s0, r, i * ns, (i + 1) * ns, 0, K);
                        CK(cudaEventRecord(ev[1 + i], s0));
                        CK(cudaStreamWaitEvent(s1, ev[1 + i]));
                        gemm16(s1, i * ns, (i + 1) * ns, 0, K, false);
                    }
                    CK(cudaEventRecord(ev[40], s1)); CK(cudaStreamWaitEvent(s0, ev[40])); }});
            }
            // reference output
            vars[2].body(0);
            CK(cudaStreamSynchronize(s0));
            CK(cudaMemcpy(yref, y, (size_t)M * N * 2, cudaMemcpyDeviceToDevice));
            std::vector<__half> href((size_t)M * N), hy((size_t)M * N);
            CK(cudaMemcpy(href.data(), yref, href.size() * 2, cudaMemcpyDeviceToHost));
            printf("K=%d M=%d R=%d:", K, M, R);
            for (auto &v : vars) {
                cudaGraph_t g;
                cudaGraphExec_t ge;
                CK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
                for (int r = 0; r < R; ++r) v.body(r);
                CK(cudaStreamEndCapture(s0, &g));
                CK(cudaGraphInstantiate(&ge, g, 0));
                CK(cudaGraphLaunch(ge, s0));
                CK(cudaStreamSynchronize(s0));
                std::vector<float> ts;
                for (int i = 0; i < 15; ++i) {
                    CK(cudaEventRecord(t0, s0));
                    CK(cudaGraphLaunch(ge, s0));
                    CK(cudaEventRecord(t1, s0));
                    CK(cudaEventSynchronize(t1));
                    float ms;
                    CK(cudaEventElapsedTime(&ms, t0, t1));
                    ts.push_back(ms * 1000.f / R);
                }
                std::sort(ts.begin(), ts.end());
                double err = 0, ref = 0;
                if (v.name[0] != 'c' && strcmp(v.name, "gemm") != 0) {
                    CK(cudaMemcpy(hy.data(), y, hy.size() * 2, cudaMemcpyDeviceToHost));
                    for (size_t i = 0; i < hy.size(); ++i) {
                        double d = __half2float(hy[i]) - __half2float(href[i]);
                        err += d * d;
                        ref += (double)__half2float(href[i]) * __half2float(href[i]);
                    }
                }
                printf(" %s %.2f", v.name, ts[ts.size() / 2]);
                if (ref > 0) printf("(rms %.1e)", sqrt(err / ref));
                CK(cudaGraphExecDestroy(ge));
                CK(cudaGraphDestroy(g));
            }
            printf("\n");
            fflush(stdout);
            CK(cudaFree(x)); CK(cudaFree(y)); CK(cudaFree(yref)); CK(cudaFree(acc));
        }
        for (auto &p : W) CK(cudaFree(p));
        CK(cudaFree(scale));
        CK(cudaFree(wh));
    }
    return 0;
}
