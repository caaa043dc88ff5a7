// ci/racecheck-probe.cu — does compute-sanitizer's racecheck still report a
// race that is not there?  Two K groups of 4 warps each take their own named
// barrier (bar.sync 1 + g, 128) n0 and n1 times, then group 1 stores, the
// block syncs (__syncthreads, every thread), and group 0 reads what group 1
// stored.  The block barrier orders the store and the read whatever n0 and
// n1 are, but racecheck (seen on the H100 image) reports one hazard whenever
// n1 > n0.  The mid decode plans have the same pattern (their K groups'
// partial sums), so they take each group's ring barrier as often as the
// busiest group's (decode_kernel.cuh, KERNELS.md D46); once this probe runs
// clean at n1 > n0, that padding can go.  ci/device-run's racecheck phase
// runs it.  Usage: racecheck-probe N0 N1 (prints one line; exit 0 unless
// CUDA fails).
#include <cstdio>
#include <cstdlib>

__global__ void two_groups(float *out, int n0, int n1)
{
    extern __shared__ float smem[];
    float *red = smem, *ring = smem + 128;
    const int g = threadIdx.x / 128, t = threadIdx.x % 128;
    float acc = (float)threadIdx.x;
    for (int i = 0; i < (g == 0 ? n0 : n1); i++) {
        ring[g * 128 + t] = acc;
        asm volatile("bar.sync %0, 128;" ::"r"(1 + g) : "memory");
        acc += ring[g * 128 + (t ^ 1)];
        asm volatile("bar.sync %0, 128;" ::"r"(1 + g) : "memory");
    }
    if (g == 1)
        red[t] = acc;
    __syncthreads();
    if (g == 0)
        out[blockIdx.x * 128 + t] = acc + red[t];
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: racecheck-probe N0 N1\n");
        return 2;
    }
    const int n0 = atoi(argv[1]), n1 = atoi(argv[2]);
    float *out = nullptr;
    cudaError_t e = cudaMalloc(&out, 8 * 128 * sizeof(float));
    if (e == cudaSuccess) {
        two_groups<<<8, 256, 3 * 128 * sizeof(float)>>>(out, n0, n1);
        e = cudaDeviceSynchronize();
    }
    printf("racecheck-probe n0=%d n1=%d: %s\n", n0, n1, cudaGetErrorString(e));
    cudaFree(out);
    return e == cudaSuccess ? 0 : 1;
}
