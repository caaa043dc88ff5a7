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
#include "device_cache.h"
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
    /* cuBLAS 12.5 and later; NULL before (then a batch runs as one
     * cublasGemmEx per group).  Declared here: CUDA 11.8's header has no
     * declaration to take it from. */
    cublasStatus_t (*gemm_grouped)(cublasHandle_t, const cublasOperation_t[],
                                   const cublasOperation_t[], const int[], const int[], const int[],
                                   const void *, const void *const[], cudaDataType, const int[],
                                   const void *const[], cudaDataType, const int[], const void *,
                                   void *const[], cudaDataType, const int[], int, const int[],
                                   cublasComputeType_t);
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

/* The one function BlasApi may lack (gemm_grouped). */
const char kBlasGroupedSymbol[] = "cublasGemmGroupedBatchedEx";

/* Opens `library` and resolves every function of BlasApi from it into *api
 * (gemm_grouped where the library has it).  On failure closes what it
 * opened and writes the reason (the library and dlerror()) to why. */
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
    (void)dlerror();
    void *grouped = dlsym(h, kBlasGroupedSymbol);
    (void)dlerror();
    memcpy(&api->gemm_grouped, &grouped, sizeof grouped);
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

/* The most groups a plan's cuBLAS call takes (the plan list's largest
 * DQBLAS groups). */
constexpr int kMaxBatch = VG_GEMM_MAX_BATCH;
static_assert(3 * kMaxBatch * sizeof(void *) <= kAlign, "the pointer table fits its 256 bytes");

/* One launch's batch of groups (vg_gemm_next_batch: a slot is a grid row
 * of the dequantize kernel and a problem of cuBLAS's grouped GEMM), and where set, the
 * pointer table that GEMM reads from device memory: its A (W copies), B (X
 * rows) and C (Y rows) arrays, kMaxBatch entries each.  The kernels write
 * the table, so a replayed graph finds it written in stream order and
 * nothing is copied from the host. */
struct DequantBatch {
    vg_group_batch gb;
    const void **table; /* NULL: no table (one cublasGemmEx per group) */
    const uint16_t *x;
    uint8_t *y;
    size_t y_row_bytes;
    size_t copy_elems; /* a slot's FP16 copy, rounded up to kAlign bytes */
};

__device__ void write_table(const DequantBatch &b, int slot, const void *w, int32_t k)
{
    b.table[slot] = w;
    b.table[kMaxBatch + slot] = b.x + (size_t)b.gb.row0[slot] * k;
    b.table[2 * kMaxBatch + slot] = b.y + (size_t)b.gb.row0[slot] * b.y_row_bytes;
}

/* fp16: no copy to make, only the table, whose W entries are the groups'
 * own weights.  One thread per slot. */
__global__ void vg_dqblas_table_kernel(KWeight w, DequantBatch b, int slots)
{
    const int slot = threadIdx.x;
    if (slot < slots)
        write_table(b, slot, w.q + (size_t)b.gb.group[slot] * w.q_group_bytes, w.k);
}

/* The most chunks one launch's slot may have: the index arithmetic is
 * 32-bit (a 64-bit division per chunk costs more than the decode), and
 * the grid stride must not wrap it. */
constexpr size_t kMaxDequantChunks = (size_t)1 << 31;

/* Rows n, K elements [16c, 16c + 16) of the W of the group in slot
 * blockIdx.y, as FP16 into that slot's copy ([N][K] row-major, at out +
 * slot * copy_elems).  Consecutive threads take consecutive chunks, so
 * loads and stores are coalesced. */
template <class Deq>
__global__ void __launch_bounds__(256) vg_dequant_f16_kernel(KWeight w, DequantBatch b, __half *out)
{
    const int slot = blockIdx.y;
    const int g = b.gb.group[slot];
    out += (size_t)slot * b.copy_elems;
    if (b.table && blockIdx.x == 0 && threadIdx.x == 0)
        write_table(b, slot, out, w.k);
    constexpr int kBytes = kChunk * Deq::kBits / 8;
    static_assert(kBytes == 8 || kBytes == 16, "a chunk is one 8- or 16-byte load (fp16 makes no copy)");
    const unsigned chunks = (unsigned)((w.k + kChunk - 1) / kChunk);
    const unsigned total = (unsigned)w.n * chunks; /* < kMaxDequantChunks (vg_dqblas_gemm) */
    const uint8_t *q = w.q + (size_t)g * w.q_group_bytes;
    const float epi = Deq::epilogue(w);
    const bool row_vec = ((uintptr_t)q % kBytes) == 0 && (w.q_row_bytes % kBytes) == 0;
    const bool out_vec = ((uintptr_t)out % 16) == 0 && (w.k % 8) == 0;
    /* Where K is a multiple of 16 every chunk is whole and chunk c's FP16
     * elements start at 16c, so two lanes' adjacent chunks are 64
     * contiguous bytes: the pair swaps halves and each of its two stores
     * writes a whole 32-byte sector.  A lane storing its own two halves
     * left every sector half-written by each store instruction, and the
     * pass ran at about 0.73 of the copy bandwidth (H100, fp8, K=14336;
     * KERNELS.md D49).  The same for every thread of the grid, as the
     * shuffle needs. */
    const bool paired = out_vec && (w.k % kChunk) == 0;
    /* The loop runs while the warp's first chunk is in range (i & ~31), so
     * a warp's lanes go round together (the shuffle); a lane past the end
     * decodes zeros and stores nothing. */
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; (i & ~31u) < total; i += gridDim.x * blockDim.x) {
        const bool have = i < total;
        if (!paired && !have)
            break;
        int n = 0, k = 0;
        /* the raw bytes as decode16 reads them: the first kBytes */
        uint4 raw = make_uint4(0, 0, 0, 0);
        uint32_t pre = 0;
        float post = epi;
        if (have) {
            n = (int)(i / chunks);
            k = (int)(i - (unsigned)n * chunks) * kChunk;
            const uint8_t *src = q + (size_t)n * w.q_row_bytes + (size_t)k * Deq::kBits / 8;
            const bool whole = k + kChunk <= w.k;
            if (whole && row_vec) {
                if constexpr (kBytes == 16) {
                    raw = *reinterpret_cast<const uint4 *>(src);
                } else {
                    const uint2 v = *reinterpret_cast<const uint2 *>(src);
                    raw.x = v.x;
                    raw.y = v.y;
                }
            } else {
                /* A row's tail (or an unaligned row): its bytes, zero past
                 * K.  Unrolled with constant indices, so the words stay in
                 * registers (a byte array indexed at run time would put
                 * them into local memory). */
                uint32_t word[4] = {0, 0, 0, 0};
                const int have_bytes = ((whole ? kChunk : w.k - k) * Deq::kBits + 7) / 8;
#pragma unroll
                for (int bi = 0; bi < kBytes; bi++)
                    if (bi < have_bytes)
                        word[bi / 4] |= (uint32_t)src[bi] << (8 * (bi % 4));
                raw = make_uint4(word[0], word[1], word[2], word[3]);
            }
            if constexpr (Deq::kPreScale)
                pre = Deq::prescale(w, g, n, k);
            if constexpr (Deq::kPostScale)
                post = Deq::postscale(w, g, n, k / Deq::kScaleK) * epi;
        }
        uint32_t h[8];
        Deq::decode16(reinterpret_cast<const uint8_t *>(&raw), pre, h);
        uint32_t o[8];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float2 v = __half22float2(*reinterpret_cast<const __half2 *>(&h[j]));
            __half2 r2 = __floats2half2_rn(v.x * post, v.y * post);
            o[j] = *reinterpret_cast<uint32_t *>(&r2);
        }
        if (paired) {
            /* lanes 2s, 2s+1 hold chunks c, c+1 (i's parity is the lane's):
             * the even lane gives its second half, the odd its first, so
             * the pair writes c's 32 bytes with one store and c+1's with
             * the other */
            const unsigned odd = i & 1u, c = i & ~1u;
            uint32_t got[4];
#pragma unroll
            for (int j = 0; j < 4; j++)
                got[j] = __shfl_xor_sync(0xffffffffu, odd ? o[j] : o[4 + j], 1);
            __half *pair = out + (size_t)c * kChunk + 8 * odd;
            if (c < total)
                *reinterpret_cast<uint4 *>(pair) = odd ? make_uint4(got[0], got[1], got[2], got[3])
                                                       : make_uint4(o[0], o[1], o[2], o[3]);
            if (c + 1 < total)
                *reinterpret_cast<uint4 *>(pair + kChunk) = odd ? make_uint4(o[4], o[5], o[6], o[7])
                                                                : make_uint4(got[0], got[1], got[2], got[3]);
            continue;
        }
        __half *dst = out + (size_t)n * w.k + k;
        if (k + kChunk <= w.k && out_vec) {
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

/* One launch for slots slots of chunks chunks each (< kMaxDequantChunks). */
typedef void (*dequant_fn)(const KWeight &w, const DequantBatch &b, __half *out, size_t chunks,
                           int slots, cudaStream_t s);

/* One wave: as many blocks as the SMs hold at once (the occupancy of this
 * kernel, asked once per device), fewer where the chunks do not fill
 * them; each thread's grid-stride loop covers the rest.  A second wave
 * of a few blocks would leave most SMs idle at its end. */
template <class Deq>
void launch_dequant(const KWeight &w, const DequantBatch &b, __half *out, size_t chunks, int slots,
                    cudaStream_t s)
{
    static std::atomic<int> per_sm_known[kVgCachedDevices];
    const int per_sm = vg_cuda_per_device(
        per_sm_known,
        [](int) {
            int blocks = 0;
            return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, vg_dequant_f16_kernel<Deq>, 256, 0) ==
                           cudaSuccess
                       ? blocks
                       : 0;
        },
        4);
    const size_t want = (chunks * (size_t)slots + 255) / 256;
    const size_t wave = (size_t)vg_cuda_device_attr<cudaDevAttrMultiProcessorCount>(80) * (size_t)per_sm;
    unsigned bx = (unsigned)((want < wave ? want : wave) / (size_t)slots);
    vg_dequant_f16_kernel<Deq><<<dim3(bx ? bx : 1, (unsigned)slots), 256, 0, s>>>(w, b, out);
}

/* Indexed by vg_family; fp16 needs none. */
const dequant_fn g_dequant[VG_FAMILY_COUNT] = {
    NULL, launch_dequant<DeqAWQ>, launch_dequant<DeqFP8>, launch_dequant<DeqMXFP4>,
    launch_dequant<DeqNVFP4>};

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

/* Whether cublasGemmGroupedBatchedEx has run a batch, by Y's dtype (0 FP32,
 * 1 FP16): 0 not yet, 1 yes, -1 refused.  cuBLAS documents FP16 inputs with
 * FP16 output under FP32 compute, not FP32 output: where an FP32-output call
 * is refused as not supported or invalid, that batch and every later
 * FP32-output one run as one cublasGemmEx per group instead (the same bits
 * as the one-group plan).  An FP16-output call that fails is an error. */
std::atomic<int> g_grouped_takes[2];

/* cuBLAS reads the grouped GEMM's pointers on the device, where it cannot
 * check their alignment, so the batch goes to it only where every pointer
 * of the table is 16-byte aligned (X and Y rows: K and N of whole 16-byte
 * runs; the copies are 256-aligned; fp16's W like X); else one cublasGemmEx
 * per group, which sees each pointer. */
bool table_aligned(const vg_gemm_args *a, const KWeight &kw, size_t y_row_bytes)
{
    const uintptr_t any = (uintptr_t)a->x | (uintptr_t)a->y | (uintptr_t)kw.q;
    return any % 16 == 0 && ((size_t)kw.k * 2) % 16 == 0 && y_row_bytes % 16 == 0 &&
           (a->w.family != VG_FAMILY_FP16 || kw.q_group_bytes % 16 == 0);
}

/* The batch's problems through one cublasGemmGroupedBatchedEx: each run
 * of slots of equal rows is one of its groups, so an even call's batch is
 * one group of `slots` problems.  *refused: cuBLAS refused the types
 * (nothing launched). */
vg_status blas_gemm_grouped(const BlasApi &blas, cublasHandle_t h, const DequantBatch &b,
                            vg_dtype yt, int n, int k, bool *refused)
{
    const vg_group_batch &gb = b.gb;
    cublasOperation_t ta[kMaxBatch], tb[kMaxBatch];
    int m_arr[kMaxBatch], n_arr[kMaxBatch], k_arr[kMaxBatch], lda[kMaxBatch], ldb[kMaxBatch],
        ldc[kMaxBatch], size[kMaxBatch];
    float alpha[kMaxBatch], beta[kMaxBatch];
    for (int r = 0, first = 0; r < gb.runs; first += gb.run_slots[r++]) {
        ta[r] = CUBLAS_OP_T;
        tb[r] = CUBLAS_OP_N;
        m_arr[r] = n;
        n_arr[r] = gb.rows[first];
        k_arr[r] = k;
        lda[r] = k;
        ldb[r] = k;
        ldc[r] = n;
        size[r] = gb.run_slots[r];
        alpha[r] = 1.0f;
        beta[r] = 0.0f;
    }
    const cudaDataType ct = yt == VG_DTYPE_F16 ? CUDA_R_16F : CUDA_R_32F;
    cublasStatus_t st = blas.gemm_grouped(
        h, ta, tb, m_arr, n_arr, k_arr, alpha, b.table,
        CUDA_R_16F, lda, b.table + kMaxBatch, CUDA_R_16F, ldb,
        beta, (void *const *)(b.table + 2 * kMaxBatch), ct,
        ldc, gb.runs, size, CUBLAS_COMPUTE_32F);
    *refused = yt == VG_DTYPE_F32 &&
               (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE);
    return st == CUBLAS_STATUS_SUCCESS || *refused ? VG_OK
                                                     : blas_fail(st, "cublasGemmGroupedBatchedEx");
}

size_t copy_bytes(int32_t n, int32_t k) { return align_up((size_t)n * (size_t)k * sizeof(__half)); }

/* The copies a plan of `batch` groups per call holds at once: none for
 * fp16, else the batch, but never more than the call's groups. */
int copies_of(vg_family f, int batch, int32_t groups)
{
    if (f == VG_FAMILY_FP16)
        return 0;
    return batch < groups ? batch : (groups > 0 ? groups : 1);
}

} // namespace

size_t vg_dqblas_workspace_bytes(vg_family f, int32_t n, int32_t k, int batch, int32_t groups)
{
    batch = batch < 1 ? 1 : (batch > kMaxBatch ? kMaxBatch : batch);
    const size_t table = batch > 1 ? kAlign : 0;
    /* + kAlign: the caller's workspace need not be 256-byte aligned. */
    return table + (size_t)copies_of(f, batch, groups) * copy_bytes(n, k) + blas_workspace_bytes() +
           kAlign;
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

vg_status vg_dqblas_gemm(const vg_gemm_args *a, const KWeight &kw, int batch)
{
    cudaStream_t s = static_cast<cudaStream_t>(a->stream);
    const vg_family f = a->w.family;
    const int32_t groups = a->path == VG_PATH_DENSE ? 1 : a->w.groups;
    batch = batch < 1 ? 1 : (batch > kMaxBatch ? kMaxBatch : batch);
    const size_t chunks = (size_t)kw.n * (size_t)((kw.k + kChunk - 1) / kChunk);
    if (f != VG_FAMILY_FP16 && chunks >= kMaxDequantChunks)
        return vg_fail(VG_ERR_LIMIT,
                       "dequant+cublas: a %d x %d weight is %zu 16-element chunks, over the "
                       "dequantize kernel's %zu",
                       kw.n, kw.k, chunks, kMaxDequantChunks);
    /* the layout vg_dqblas_workspace_bytes counts */
    uint8_t *base = reinterpret_cast<uint8_t *>(align_up((uintptr_t)a->workspace));
    const size_t table_bytes = batch > 1 ? kAlign : 0;
    __half *copies = reinterpret_cast<__half *>(base + table_bytes);
    const size_t copies_bytes = (size_t)copies_of(f, batch, groups) * copy_bytes(kw.n, kw.k);
    const BlasApi *blas = blas_api();
    if (!blas)
        return VG_ERR_UNSUPPORTED; /* blas_api said why */
    cublasHandle_t h;
    vg_status st = take_handle(*blas, s, &h);
    if (st != VG_OK)
        return st;
    cublasStatus_t bs = blas->set_stream(h, s);
    if (bs == CUBLAS_STATUS_SUCCESS)
        bs = blas->set_workspace(h, base + table_bytes + copies_bytes, blas_workspace_bytes());
    if (bs != CUBLAS_STATUS_SUCCESS) {
        give_back(*blas, h);
        return blas_fail(bs, "handle set-up");
    }
    const size_t ysize = a->y_dtype == VG_DTYPE_F16 ? 2 : 4;
    const int yi = a->y_dtype == VG_DTYPE_F16;
    DequantBatch b;
    memset(&b, 0, sizeof b);
    b.x = a->x;
    b.y = static_cast<uint8_t *>(a->y);
    b.y_row_bytes = (size_t)kw.n * ysize;
    b.copy_elems = copy_bytes(kw.n, kw.k) / sizeof(__half);
    const bool aligned = table_aligned(a, kw, b.y_row_bytes);
    const vg_group_batch &gb = b.gb;
    int32_t next = 0;
    while (st == VG_OK && vg_gemm_next_batch(a, batch, &next, &b.gb)) {
        const int slots = gb.slots;
        /* one cuBLAS call where the library takes it, else one per group */
        const bool grouped = batch > 1 && blas->gemm_grouped && aligned &&
                             g_grouped_takes[yi].load(std::memory_order_relaxed) >= 0;
        b.table = grouped ? reinterpret_cast<const void **>(base) : NULL;
        if (f != VG_FAMILY_FP16) {
            g_dequant[f](kw, b, copies, chunks, slots, s);
        } else if (grouped) {
            vg_dqblas_table_kernel<<<1, 32, 0, s>>>(kw, b, slots);
        }
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) {
            st = vg_fail(VG_ERR_CUDA, "dequant+cublas: dequantize %s: %s", vg_family_name(f),
                         cudaGetErrorString(e));
            break;
        }
        bool refused = false;
        if (grouped) {
            st = blas_gemm_grouped(*blas, h, b, a->y_dtype, kw.n, kw.k, &refused);
            if (st == VG_OK && !refused)
                g_grouped_takes[yi].store(1, std::memory_order_relaxed);
            else if (refused)
                g_grouped_takes[yi].store(-1, std::memory_order_relaxed);
        }
        if (!grouped || refused)
            for (int i = 0; i < slots && st == VG_OK; i++) {
                const __half *w =
                    f == VG_FAMILY_FP16
                        ? reinterpret_cast<const __half *>(kw.q + (size_t)gb.group[i] * kw.q_group_bytes)
                        : copies + (size_t)i * b.copy_elems;
                st = blas_gemm(*blas, h, w, a->x + (size_t)gb.row0[i] * kw.k,
                               b.y + (size_t)gb.row0[i] * b.y_row_bytes, a->y_dtype, gb.rows[i],
                               kw.n, kw.k);
            }
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

extern "C" int vg_cuda_dqblas_grouped_state(int y_f16, int *loaded)
{
    if (loaded) {
        const BlasLoad &l = blas_load();
        *loaded = l.ok && l.api.gemm_grouped != NULL;
    }
    return g_grouped_takes[y_f16 ? 1 : 0].load(std::memory_order_relaxed);
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

/* An on/off switch from the environment: `name`=1 or 0 says so, anything
 * else (or nothing) gives `dflt`. */
static bool env_switch(const char *name, bool dflt)
{
    const char *e = getenv(name);
    if (e && (!strcmp(e, "0") || !strcmp(e, "1")))
        return e[0] == '1';
    return dflt;
}

/* Whether the runtime offers the kind where cuBLAS starts: VG_CUDA_DQBLAS,
 * else VG_CUDA_DQBLAS_DEFAULT (kernels.h). */
static bool dqblas_wanted(void) { return env_switch("VG_CUDA_DQBLAS", VG_CUDA_DQBLAS_DEFAULT != 0); }

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

/* Whether the runtime offers the batched plan where it offers the kind:
 * VG_CUDA_DQBLAS_BATCHED, else its default (kernels.h).  Read on every
 * ask, so a test can set it. */
static bool batched_wanted(void)
{
    return env_switch("VG_CUDA_DQBLAS_BATCHED", VG_CUDA_DQBLAS_BATCHED_DEFAULT != 0);
}

extern "C" int vg_cuda_plan_offered(const vg_plan *p, const char **why)
{
    if (!p)
        return 0;
    if (p->kind != VG_KIND_DEQUANT_BLAS)
        return 1;
    if (vg_dqblas_offered_here()) {
        if (p->stages <= 1 || batched_wanted())
            return 1;
        if (why)
            *why = "the batched dequantize + cuBLAS plan is turned off "
                   "(VG_CUDA_DQBLAS_BATCHED=0, or unset in a build whose default is 0; "
                   "VG_CUDA_DQBLAS_BATCHED=1 offers it)";
        return 0;
    }
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
