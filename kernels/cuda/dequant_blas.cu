/*
 * The dequantize-once + cuBLAS plan kind (dequant_blas.h).
 *
 * Why it exists: above a few hundred rows a GEMM is bound by the tensor
 * cores, and cuBLAS's FP16 kernels reach a larger share of them than the
 * tiled mainloop, which also decodes W once per row tile.  Dequantizing W
 * once costs one pass over its bytes plus an FP16 write (for a 4096x4096
 * fp8 weight, 48 MB of traffic), which the GEMM amortizes from a few
 * hundred rows on (kernels/cuda/KERNELS.md D34).
 *
 * Numerics: each FP16 element is the family's value (the same decode16 the
 * tiled mainloop uses, then the post-scale and epilogue in FP32) rounded
 * once to FP16; cuBLAS accumulates in FP32.  A dequantized weight outside
 * FP16's range would overflow; the families' scales keep real weights far
 * inside it, and the golden cases check every family.
 *
 * Results do not depend on timing: cuBLAS picks its algorithm from the
 * shape, the handle's math mode and the workspace size, all fixed per call
 * (the workspace is a fixed slice of the call's, set on every call), and
 * its atomics mode stays "not allowed", so no split-K by atomics.  The same
 * cuBLAS version on the same GPU gives the same bits; another version may
 * not, so LUT entries are stamped with the version (runtime, via
 * vg_cuda_blas_version).
 *
 * cuBLAS is loaded at run time (dlopen), not linked: libvoltgate must load
 * on a machine without it, where the kind is simply not offered.  The
 * header gives the types and constants; every function is called through
 * the table blas_load resolves once per process (blas_api).
 */
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "dequant_blas.h"
#include "kernels.h"

namespace {

/* The cuBLAS functions this file calls, by their exported names (the
 * cublas_v2.h macros map cublasCreate to cublasCreate_v2 and so on).  The
 * signatures are written out: cublasGemmEx has a C++ overload in the
 * header, so decltype cannot name the exported one. */
struct BlasApi {
    cublasStatus_t (*create)(cublasHandle_t *);
    cublasStatus_t (*destroy)(cublasHandle_t);
    cublasStatus_t (*get_version)(cublasHandle_t, int *);
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (*set_workspace)(cublasHandle_t, void *, size_t);
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                              const void *, const void *, cudaDataType, int, const void *,
                              cudaDataType, int, const void *, void *, cudaDataType, int,
                              cublasComputeType_t, cublasGemmAlgo_t);
};

struct BlasSymbol {
    const char *name;
    size_t offset; /* of its pointer in BlasApi */
};

const BlasSymbol kBlasSymbols[] = {
    {"cublasCreate_v2", offsetof(BlasApi, create)},
    {"cublasDestroy_v2", offsetof(BlasApi, destroy)},
    {"cublasGetVersion_v2", offsetof(BlasApi, get_version)},
    {"cublasSetStream_v2", offsetof(BlasApi, set_stream)},
    {"cublasSetWorkspace_v2", offsetof(BlasApi, set_workspace)},
    {"cublasGemmEx", offsetof(BlasApi, gemm_ex)},
};

#define VG_STR2(x) #x
#define VG_STR(x) VG_STR2(x)
/* The cuBLAS of the toolkit this file was compiled with: its soname (the
 * runtime package installs it), then the unversioned name (a development
 * install, or a toolkit whose soname differs). */
const char *const kBlasSonames[] = {"libcublas.so." VG_STR(CUBLAS_VER_MAJOR), "libcublas.so"};

/* Opens `library` and resolves every function of BlasApi from it into *api.
 * On failure closes what it opened and writes the reason (the library and
 * dlerror()) to why. */
bool blas_open(const char *library, BlasApi *api, void **lib, char *why, size_t cap)
{
    void *h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        /* dlerror() names the file it could not open; name it where not */
        const char *e = dlerror();
        if (e && strstr(e, library))
            snprintf(why, cap, "%s", e);
        else
            snprintf(why, cap, "%s: %s", library, e ? e : "dlopen failed");
        return false;
    }
    for (const BlasSymbol &sym : kBlasSymbols) {
        (void)dlerror();
        void *fn = dlsym(h, sym.name);
        if (!fn) {
            const char *e = dlerror();
            snprintf(why, cap, "%s has no %s: %s", library, sym.name, e ? e : "dlsym failed");
            dlclose(h);
            return false;
        }
        memcpy(reinterpret_cast<char *>(api) + sym.offset, &fn, sizeof fn);
    }
    *lib = h;
    return true;
}

/* The process's cuBLAS: loaded at the first use, once (a function-local
 * static is initialized once even when threads race to it), kept until
 * exit (handles outlive every caller; see HandlePool). */
struct BlasLoad {
    BlasApi api;
    bool ok = false;
    char library[256] = "";
    char why[768] = "";
};

BlasLoad load_blas(void)
{
    BlasLoad l;
    memset(&l.api, 0, sizeof l.api);
    void *h = NULL;
    const char *forced = getenv("VG_CUBLAS_LIBRARY");
    if (forced && *forced) {
        /* the one library asked for, no fallback: a path that does not
         * exist stands for a machine without cuBLAS */
        char e[640];
        l.ok = blas_open(forced, &l.api, &h, e, sizeof e);
        if (!l.ok)
            snprintf(l.why, sizeof l.why, "cuBLAS not loaded (VG_CUBLAS_LIBRARY): %s", e);
        snprintf(l.library, sizeof l.library, "%s", forced);
        return l;
    }
    size_t used = (size_t)snprintf(l.why, sizeof l.why, "cuBLAS not loaded:");
    for (const char *name : kBlasSonames) {
        char e[640];
        if (blas_open(name, &l.api, &h, e, sizeof e)) {
            l.ok = true;
            l.why[0] = '\0';
            snprintf(l.library, sizeof l.library, "%s", name);
            return l;
        }
        if (used < sizeof l.why)
            used += (size_t)snprintf(l.why + used, sizeof l.why - used, " %s;", e);
    }
    if (used > 0 && used < sizeof l.why && l.why[used - 1] == ';')
        l.why[used - 1] = '\0';
    return l;
}

const BlasLoad &blas_load(void)
{
    static const BlasLoad loaded = load_blas();
    return loaded;
}

/* The loaded table; NULL (and vg_last_error says why) where cuBLAS did not
 * load. */
const BlasApi *blas_api(void)
{
    const BlasLoad &l = blas_load();
    if (l.ok)
        return &l.api;
    vg_fail(VG_ERR_UNSUPPORTED, "dequant+cublas: %s", l.why);
    return NULL;
}

/* Elements decoded per thread and step: decode16's unit. */
constexpr int kChunk = 16;
constexpr size_t kAlign = 256; /* cublasSetWorkspace wants 256-byte alignment */

size_t align_up(size_t v) { return (v + kAlign - 1) & ~(kAlign - 1); }

/* cuBLAS's own workspace: NVIDIA's recommended sizes, 32 MiB on Hopper and
 * later, 4 MiB before (a V100's memory is scarce, and 4 MiB is what cuBLAS
 * allocates by default there). */
size_t blas_workspace_bytes(void)
{
    return (size_t)(vg_cuda_device_major() >= 9 ? 32 : 4) << 20;
}

/* Rows n, K elements [16c, 16c + 16) of group g's W, as FP16 into out
 * ([N][K] row-major).  Consecutive threads take consecutive chunks of a
 * row, so loads and stores are coalesced. */
template <class Deq>
__global__ void __launch_bounds__(256) vg_dequant_f16_kernel(KWeight w, int g, __half *out)
{
    constexpr int kBytes = kChunk * Deq::kBits / 8;
    const int chunks = (w.k + kChunk - 1) / kChunk;
    const size_t total = (size_t)w.n * (size_t)chunks;
    const uint8_t *q = w.q + (size_t)g * w.q_group_bytes;
    const float epi = Deq::epilogue(w);
    const bool row_vec = ((uintptr_t)q % kBytes) == 0 && (w.q_row_bytes % kBytes) == 0;
    const bool out_vec = ((uintptr_t)out % 16) == 0 && (w.k % 8) == 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        const int n = (int)(i / chunks);
        const int k = (int)(i - (size_t)n * chunks) * kChunk;
        const uint8_t *src = q + (size_t)n * w.q_row_bytes + (size_t)k * Deq::kBits / 8;
        const bool whole = k + kChunk <= w.k;
        uint32_t h[8];
        const uint32_t s = Deq::kPreScale ? Deq::prescale(w, g, n, k) : 0u;
        if (whole && row_vec) {
            Deq::decode16(src, s, h);
        } else {
            /* A row's tail (or an unaligned row): its bytes, zero past K.
             * Unrolled with constant indices, so the words stay in
             * registers (a byte array indexed at run time would put this
             * and the fast path's arrays into local memory). */
            uint32_t word[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            const int have = ((whole ? kChunk : w.k - k) * Deq::kBits + 7) / 8;
#pragma unroll
            for (int b = 0; b < kBytes; b++)
                if (b < have)
                    word[b / 4] |= (uint32_t)src[b] << (8 * (b % 4));
            const uint4 raw[2] = {make_uint4(word[0], word[1], word[2], word[3]),
                                  make_uint4(word[4], word[5], word[6], word[7])};
            Deq::decode16(reinterpret_cast<const uint8_t *>(raw), s, h);
        }
        const float post = (Deq::kPostScale ? Deq::postscale(w, g, n, k / Deq::kScaleK) : 1.0f) * epi;
        uint32_t o[8];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float2 v = __half22float2(*reinterpret_cast<const __half2 *>(&h[j]));
            __half2 r2 = __floats2half2_rn(v.x * post, v.y * post);
            o[j] = *reinterpret_cast<uint32_t *>(&r2);
        }
        __half *dst = out + (size_t)n * w.k + k;
        if (whole && out_vec) {
            reinterpret_cast<uint4 *>(dst)[0] = make_uint4(o[0], o[1], o[2], o[3]);
            reinterpret_cast<uint4 *>(dst)[1] = make_uint4(o[4], o[5], o[6], o[7]);
        } else {
#pragma unroll
            for (int j = 0; j < kChunk; j++)
                if (k + j < w.k)
                    dst[j] = __ushort_as_half((unsigned short)(o[j / 2] >> (16 * (j % 2))));
        }
    }
}

typedef void (*dequant_fn)(const KWeight &w, int g, __half *out, dim3 grid, cudaStream_t s);

template <class Deq>
void launch_dequant(const KWeight &w, int g, __half *out, dim3 grid, cudaStream_t s)
{
    vg_dequant_f16_kernel<Deq><<<grid, 256, 0, s>>>(w, g, out);
}

/* Indexed by vg_family; fp16 needs none. */
const dequant_fn g_dequant[VG_FAMILY_COUNT] = {
    NULL, launch_dequant<DeqAWQ>, launch_dequant<DeqFP8>, launch_dequant<DeqMXFP4>,
    launch_dequant<DeqNVFP4>};

/* Enough blocks to fill every SM several times over; the grid-stride loop
 * covers the rest. */
unsigned dequant_blocks(size_t chunks)
{
    /* SMs per device, looked up once: this runs on every call */
    static std::atomic<int> known[64];
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && dev < 64 &&
        (sms = known[dev].load(std::memory_order_relaxed)) <= 0) {
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess &&
            sms > 0)
            known[dev].store(sms, std::memory_order_relaxed);
    }
    if (sms <= 0) {
        (void)cudaGetLastError();
        sms = 80;
    }
    size_t want = (chunks + 255) / 256, most = (size_t)sms * 16;
    return (unsigned)(want < most ? (want ? want : 1) : most);
}

const char *blas_status_name(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized (cuBLAS could not start)";
    case CUBLAS_STATUS_ALLOC_FAILED: return "allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "not supported on this GPU";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    default: return "error";
    }
}

/* Handles by device: a handle is taken for one call and given back, so
 * threads never share one at the same time (a call sets its stream and
 * workspace).  Creating a handle allocates, which a graph capture does not
 * allow: vg_dqblas_available (the backend's open) makes each device's
 * first one beforehand.  Handles live as long as the process: cuBLAS's
 * teardown at exit may run after the CUDA runtime's. */
struct HandlePool {
    std::mutex mu;
    std::vector<cublasHandle_t> free[64];
    int version = 0;
};
HandlePool g_pool;

vg_status take_handle(const BlasApi &blas, cudaStream_t s, cublasHandle_t *out)
{
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
        (void)cudaGetLastError();
        return vg_fail(VG_ERR_NO_DEVICE, "dequant+cublas: no current CUDA device");
    }
    {
        std::lock_guard<std::mutex> lock(g_pool.mu);
        if (!g_pool.free[dev].empty()) {
            *out = g_pool.free[dev].back();
            g_pool.free[dev].pop_back();
            return VG_OK;
        }
    }
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (s && cudaStreamIsCapturing(s, &cap) == cudaSuccess && cap != cudaStreamCaptureStatusNone)
        return vg_fail(VG_ERR_STATE,
                       "dequant+cublas: no free cuBLAS handle on device %d and one cannot be "
                       "created while the stream captures a graph (run a call before capturing)",
                       dev);
    cublasStatus_t st = blas.create(out);
    if (st != CUBLAS_STATUS_SUCCESS) {
        (void)cudaGetLastError();
        return vg_fail(VG_ERR_UNSUPPORTED, "dequant+cublas: cublasCreate failed on device %d: %s",
                       dev, blas_status_name(st));
    }
    int v = 0;
    if (blas.get_version(*out, &v) == CUBLAS_STATUS_SUCCESS) {
        std::lock_guard<std::mutex> lock(g_pool.mu);
        g_pool.version = v;
    }
    return VG_OK;
}

void give_back(const BlasApi &blas, cublasHandle_t h)
{
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
        blas.destroy(h);
        return;
    }
    std::lock_guard<std::mutex> lock(g_pool.mu);
    g_pool.free[dev].push_back(h);
}

vg_status blas_fail(cublasStatus_t s, const char *what)
{
    return vg_fail(VG_ERR_CUDA, "dequant+cublas: %s: %s", what, blas_status_name(s));
}

/* Y[m][n] = X[m][k] . W[n][k]^T: in cuBLAS's column-major terms
 * Y^T (n x m) = op_T(W as k x n) . X^T (k x m). */
vg_status blas_gemm(const BlasApi &blas, cublasHandle_t h, const __half *w, const uint16_t *x, void *y, vg_dtype yt,
                    int m, int n, int k)
{
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st = blas.gemm_ex(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w, CUDA_R_16F, k,
                                     x, CUDA_R_16F, k, &zero, y,
                                     yt == VG_DTYPE_F16 ? CUDA_R_16F : CUDA_R_32F, n,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return st == CUBLAS_STATUS_SUCCESS ? VG_OK : blas_fail(st, "cublasGemmEx");
}

} // namespace

size_t vg_dqblas_workspace_bytes(vg_family f, int32_t n, int32_t k)
{
    const size_t copy = f == VG_FAMILY_FP16 ? 0 : align_up((size_t)n * (size_t)k * sizeof(__half));
    /* + kAlign: the caller's workspace need not be 256-byte aligned. */
    return copy + blas_workspace_bytes() + kAlign;
}

int vg_dqblas_available(const char **why)
{
    /* one reason per device: the backend keeps the pointer (g_blas_why) */
    static char reasons[64][1024];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
        (void)cudaGetLastError();
        dev = 0;
    }
    const BlasApi *blas = blas_api();
    cublasHandle_t h;
    if (!blas || take_handle(*blas, NULL, &h) != VG_OK) {
        snprintf(reasons[dev], sizeof reasons[dev], "%s", vg_last_error());
        if (why)
            *why = reasons[dev];
        return 0;
    }
    give_back(*blas, h);
    if (why)
        *why = "";
    return 1;
}

vg_status vg_dqblas_gemm(const vg_gemm_args *a, const KWeight &kw)
{
    cudaStream_t s = static_cast<cudaStream_t>(a->stream);
    const vg_family f = a->w.family;
    uint8_t *base = reinterpret_cast<uint8_t *>(align_up((uintptr_t)a->workspace));
    const size_t copy = f == VG_FAMILY_FP16 ? 0 : align_up((size_t)kw.n * (size_t)kw.k * 2);
    __half *wcopy = reinterpret_cast<__half *>(base);
    const BlasApi *blas = blas_api();
    if (!blas)
        return VG_ERR_UNSUPPORTED; /* blas_api said why */
    cublasHandle_t h;
    vg_status st = take_handle(*blas, s, &h);
    if (st != VG_OK)
        return st;
    cublasStatus_t bs = blas->set_stream(h, s);
    if (bs == CUBLAS_STATUS_SUCCESS)
        bs = blas->set_workspace(h, base + copy, blas_workspace_bytes());
    if (bs != CUBLAS_STATUS_SUCCESS) {
        give_back(*blas, h);
        return blas_fail(bs, "handle set-up");
    }
    const size_t ysize = a->y_dtype == VG_DTYPE_F16 ? 2 : 4;
    const size_t chunks = (size_t)kw.n * (size_t)((kw.k + kChunk - 1) / kChunk);
    const int groups = a->path == VG_PATH_DENSE ? 1 : a->w.groups;
    for (int g = 0; g < groups && st == VG_OK; g++) {
        const int32_t r0 = a->path == VG_PATH_DENSE ? 0 : a->offsets_host[g];
        const int32_t r1 = a->path == VG_PATH_DENSE ? a->m : a->offsets_host[g + 1];
        if (r1 <= r0)
            continue; /* an empty group costs nothing */
        const __half *w;
        if (f == VG_FAMILY_FP16) {
            w = reinterpret_cast<const __half *>(kw.q + (size_t)g * kw.q_group_bytes);
        } else {
            g_dequant[f](kw, g, wcopy, dim3(dequant_blocks(chunks)), s);
            cudaError_t e = cudaGetLastError();
            if (e != cudaSuccess) {
                st = vg_fail(VG_ERR_CUDA, "dequant+cublas: dequantize %s: %s", vg_family_name(f),
                             cudaGetErrorString(e));
                break;
            }
            w = wcopy;
        }
        st = blas_gemm(*blas, h, w, a->x + (size_t)r0 * kw.k,
                       static_cast<uint8_t *>(a->y) + (size_t)r0 * kw.n * ysize, a->y_dtype,
                       r1 - r0, kw.n, kw.k);
    }
    give_back(*blas, h);
    return st;
}

extern "C" vg_status vg_cuda_blas_load(const char **library, const char **why)
{
    const BlasLoad &l = blas_load();
    if (library)
        *library = l.library;
    if (why)
        *why = l.why;
    return l.ok ? VG_OK : vg_fail(VG_ERR_UNSUPPORTED, "%s", l.why);
}

extern "C" vg_status vg_cuda_blas_probe(const char *library)
{
    if (!library || !*library)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_cuda_blas_probe: no library named");
    BlasApi api;
    void *h = NULL;
    char why[768];
    if (!blas_open(library, &api, &h, why, sizeof why))
        return vg_fail(VG_ERR_UNSUPPORTED, "cuBLAS not loaded: %s", why);
    dlclose(h);
    return VG_OK;
}

extern "C" int vg_cuda_blas_version(void)
{
    std::lock_guard<std::mutex> lock(g_pool.mu);
    return g_pool.version;
}

/* ---- whether the runtime is offered the kind ------------------------------ */

/* Whether the dequant+cuBLAS kind is offered on each device: 0 not asked
 * yet, 1 yes, -1 no (vg_cuda_blas_prepare).  The heuristic never asks
 * itself: making the first cuBLAS handle allocates, which may not happen
 * while another thread captures a graph. */
static std::atomic<int> g_blas_state[64];
static const char *g_blas_why[64];

int vg_dqblas_offered_here(void)
{
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64)
        return 0;
    return g_blas_state[dev].load(std::memory_order_acquire) > 0;
}

/* Whether the runtime offers the kind where cuBLAS starts: VG_CUDA_DQBLAS=1
 * or 0 in the environment says so, else VG_CUDA_DQBLAS_DEFAULT (kernels.h). */
static bool dqblas_wanted(void)
{
    const char *e = getenv("VG_CUDA_DQBLAS");
    if (e && (!strcmp(e, "0") || !strcmp(e, "1")))
        return e[0] == '1';
    return VG_CUDA_DQBLAS_DEFAULT != 0;
}

extern "C" vg_status vg_cuda_blas_prepare(int *offered, const char **why)
{
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
        (void)cudaGetLastError();
        return vg_fail(VG_ERR_NO_DEVICE, "cuBLAS prepare: no current CUDA device");
    }
    int state = g_blas_state[dev].load(std::memory_order_acquire);
    if (state == 0) {
        const char *reason = "";
        /* the first handle is made either way: a plan forced by id
         * (vg_gemm_with_plan, golden --plan all) may run inside a capture */
        state = vg_dqblas_available(&reason) ? 1 : -1;
        if (state > 0 && !dqblas_wanted()) {
            state = -1;
            reason = "dequantize + cuBLAS not offered (VG_CUDA_DQBLAS=0)";
        }
        g_blas_why[dev] = reason;
        g_blas_state[dev].store(state, std::memory_order_release);
    }
    if (offered)
        *offered = state > 0;
    if (why)
        *why = state > 0 ? "" : g_blas_why[dev];
    return VG_OK;
}

extern "C" int vg_cuda_plan_offered(const vg_plan *p, const char **why)
{
    if (!p)
        return 0;
    if (p->kind != VG_KIND_DEQUANT_BLAS || vg_dqblas_offered_here())
        return 1;
    if (why) {
        int dev = 0;
        const char *r = NULL;
        if (cudaGetDevice(&dev) == cudaSuccess && dev >= 0 && dev < 64 &&
            g_blas_state[dev].load(std::memory_order_acquire) < 0)
            r = g_blas_why[dev];
        else
            (void)cudaGetLastError();
        *why = r ? r : "the device's cuBLAS was not prepared (vg_cuda_blas_prepare)";
    }
    return 0;
}
