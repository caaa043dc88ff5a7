# voltgate — one non-recursive Makefile; every output lands under $(BUILD).
#
#   make            the libraries and build/bin/voltgate:
#                     build/lib/libvoltgate.{a,so}   what a serving engine links: the
#                       kernels and the tuning runtime, public headers include/voltgate/
#                       (voltgate/voltgate.h), needs cJSON, libm and, with CUDA, cudart
#                       and libdl; no HDF5, and no cuBLAS at link time: it is loaded at
#                       run time (VG_CUBLAS_LIBRARY, kernels/kernels.h vg_cuda_blas_load)
#                     build/lib/libvoltgate_harness.a   the test and benchmark harness:
#                       golden/ (HDF5 golden files, voltgate/golden.h) and the bench's
#                       cuBLAS peers and CUDA helpers (kernels/cuda/cuda_bench.h); the
#                       tools and suites link it before libvoltgate, with -lhdf5
#   make check      dependencies, build, every suite; ends "N passed, N failed, N skipped"
#   make regress    golden verification on every backend present, benchmarks, report
#   make deps       check (and as root on Debian/Ubuntu install) the dependencies
#   make clean
#
# Knobs:
#   CUDA=0              CPU-only build even where nvcc exists
#   CUDA_ARCHS="70 90"  the SM list (default: 70 or the lowest nvcc lists, 80, 90)
#   DEPS_PREFIX=DIR     an extra prefix holding usr/include and usr/lib/<triplet>
#                       (the GPU machine's unpacked cmocka/cJSON .debs, see ci/device-run)
#   VG_DEPS=build       make deps checks only what building and testing need
#                       (no gcovr, no matplotlib): for machines without a network

BUILD ?= build
CC ?= cc
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || command -v python3)
VG_DEPS ?= all
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
DEPS_PREFIX ?=

# ---- CUDA detection -------------------------------------------------------
CUDA ?= auto
ifeq ($(CUDA),0)
  NVCC :=
else
  NVCC ?= $(shell command -v nvcc 2>/dev/null || (test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc))
endif
ifneq ($(NVCC),)
  CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
  NVCC_ARCHS := $(shell $(NVCC) --list-gpu-arch 2>/dev/null | sed -n 's/^compute_\([0-9]*\)$$/\1/p' | sort -n)
  # 70 when this nvcc still builds for Volta (CUDA 12 and older), else its lowest arch; 80 and 90 always.
  CUDA_ARCH_LOW := $(if $(filter 70,$(NVCC_ARCHS)),70,$(firstword $(NVCC_ARCHS)))
  CUDA_ARCHS ?= $(sort $(CUDA_ARCH_LOW) 80 90)
  VG_WITH_CUDA := 1
else
  VG_WITH_CUDA := 0
  CUDA_ARCHS :=
endif

# ---- Dependencies' flags --------------------------------------------------
TRIPLET := $(shell $(CC) -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
HDF5_CFLAGS := $(shell pkg-config --cflags hdf5-serial 2>/dev/null || echo -I/usr/include/hdf5/serial)
HDF5_LIBS := $(shell pkg-config --libs hdf5-serial 2>/dev/null || echo -L/usr/lib/$(TRIPLET)/hdf5/serial -lhdf5)
ifneq ($(DEPS_PREFIX),)
  DEPS_ABS := $(abspath $(DEPS_PREFIX))
  EXTRA_CFLAGS := -I$(DEPS_ABS)/usr/include
  EXTRA_LDFLAGS := -L$(DEPS_ABS)/usr/lib/$(TRIPLET) -Wl,-rpath,$(DEPS_ABS)/usr/lib/$(TRIPLET)
endif

# ---- Include paths, one list per folder --------------------------------------
# Each folder sees the public headers and what lies below it in
# formats -> kernels -> runtime -> tools, nothing above (a wrong #include
# fails to compile).  kernels/util/ (fileio.h, timing.h) is the small shared
# file/clock/median layer every folder may use.
KERNELS_INC := -Iinclude -Ikernels -Ikernels/util
RUNTIME_INC := $(KERNELS_INC) -Iruntime
# golden/ uses the public API and fileio.h, not the kernels' or the runtime's
# private headers.
GOLDEN_INC := -Iinclude -Ikernels/util -Igolden $(HDF5_CFLAGS)
# tools/: the public API (voltgate/golden.h is the harness's), kernels/util
# and its own headers.  The exceptions are per file, below.
TOOLS_INC := -Iinclude -Ikernels/util -Itools
# The suites test internals: they see everything (so do suites/coord.mk's and
# suites/fuzz/fuzz.mk's programs, through VG_CPPFLAGS).
SUITES_INC := -Iinclude -Ikernels -Ikernels/util -Iruntime -Igolden -Itools -Isuites/common $(HDF5_CFLAGS)
VG_DEFS := $(EXTRA_CFLAGS) -DVG_WITH_CUDA=$(VG_WITH_CUDA) -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
VG_CPPFLAGS := $(SUITES_INC) $(VG_DEFS)
VG_INC = $(SUITES_INC)
$(BUILD)/obj/kernels/%: VG_INC = $(KERNELS_INC)
$(BUILD)/obj/runtime/%: VG_INC = $(RUNTIME_INC)
$(BUILD)/obj/golden/%: VG_INC = $(GOLDEN_INC)
$(BUILD)/obj/tools/%: VG_INC = $(TOOLS_INC)
# Tools that drive internals on purpose, each with the one folder it needs:
# - the benchmark (cmd_bench.c, bench_*.c but bench_dispatch.c) times the
#   kernels' plan tables directly and against the cuBLAS peers, so it reads
#   kernels.h and the harness's cuda/cuda_bench.h (kernels/cuda/); `plans`
#   (cmd_plans.c) prints those tables; main.c asks kernels.h whether a CUDA
#   device is there (vg_cuda_device_count) to pick the default backend.
# - bench --dispatch (bench_dispatch.c) times vg_dispatch_decide() alone and
#   `replay` (cmd_replay.c) drives the warm-up's layer buffers and the LUT
#   path helpers: runtime/internal.h, no public API does either.
TOOLS_KERNELS_OBJS := $(addprefix $(BUILD)/obj/tools/,main.o cmd_plans.o cmd_bench.o \
                        bench_output.o bench_peers.o bench_rows.o bench_shapes.o)
TOOLS_RUNTIME_OBJS := $(addprefix $(BUILD)/obj/tools/,bench_dispatch.o cmd_replay.o)
$(TOOLS_KERNELS_OBJS): VG_INC = $(TOOLS_INC) -Ikernels
$(TOOLS_RUNTIME_OBJS): VG_INC = $(TOOLS_INC) -Iruntime
# CFLAGS/LDFLAGS stay the user's (make CFLAGS=-O0 keeps the warnings below).
CFLAGS ?= -O2 -g
VG_CFLAGS = -std=c11 -Wall -Wextra -Werror -fPIC -pthread $(CFLAGS)
VG_LDFLAGS = $(EXTRA_LDFLAGS) -pthread $(LDFLAGS)
# libvoltgate links cJSON, libm and (CUDA builds) the CUDA runtime and libdl:
# it dlopens cuBLAS, so that it loads where cuBLAS is missing (the
# dequantize + cuBLAS kind is then not offered; suites/test_fences.sh fails
# if cuBLAS comes back as a link dependency).  The harness
# (libvoltgate_harness.a) adds HDF5 and, with CUDA, cuBLAS (the bench's
# cuBLAS peers call it directly).  LDLIBS is both, for the programs that
# link both (tools, suites).
LIB_LDLIBS := -lcjson -lm
HARNESS_LDLIBS := $(HDF5_LIBS)

ifeq ($(VG_WITH_CUDA),1)
  NVCC_GENCODE := $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
                  -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
  NVCCFLAGS ?= -O3 -lineinfo
  # -compress-all: nvcc compresses only large device images by default; the
  # per-family objects' cubins (gemm_<family>.cu, 3-9 MB each) stayed
  # uncompressed, 82 MB against one compressed 14 MB gemm.cu.o (KERNELS.md D35).
  VG_NVCCFLAGS = $(NVCCFLAGS) -std=c++17 $(NVCC_GENCODE) -Xcompiler=-fPIC,-Wall,-Wextra -Werror=all-warnings \
               -Xfatbin=-compress-all -Iinclude -Ikernels -Ikernels/cuda -Ikernels/util -DVG_WITH_CUDA=1
  # the rpath also serves dlopen("libcublas.so.<major>") (a DT_RUNPATH of
  # the calling object is searched)
  LIB_LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -ldl -lstdc++
  HARNESS_LDLIBS += -lcublas
endif
LDLIBS := $(HARNESS_LDLIBS) $(LIB_LDLIBS)

# The kernel build id stamped into LUT entries (runtime/lut.c): LUTs measured
# by another commit's kernels are stale.  A stamp file rebuilds lut.o when
# the id changes.
VG_BUILD_ID ?= $(shell git describe --always --dirty 2>/dev/null || echo unknown)
BUILD_ID_STAMP := $(BUILD)/build-id
$(shell mkdir -p $(BUILD) && echo '$(VG_BUILD_ID)' | cmp -s - $(BUILD_ID_STAMP) || echo '$(VG_BUILD_ID)' > $(BUILD_ID_STAMP))
$(BUILD)/obj/runtime/lut.o: $(BUILD_ID_STAMP)
$(BUILD)/obj/runtime/lut.o: VG_DEFS += -DVG_BUILD_ID='"voltgate $(VG_BUILD_ID)"'
# The same id for `voltgate --version` and the "build" of every JSON it writes.
$(BUILD)/obj/tools/main.o: $(BUILD_ID_STAMP)
$(BUILD)/obj/tools/main.o: VG_DEFS += -DVG_BUILD_ID='"voltgate $(VG_BUILD_ID)"'

# ---- Sources ----------------------------------------------------------------
# libvoltgate: the kernels (every kernels/cuda/*.cu but the bench peers) and
# the runtime.  The harness: golden/ (HDF5) and the benchmark's CUDA helpers
# and cuBLAS peers (kernels/cuda/cuda_bench.h: bench_peer.cu, or
# cuda_bench_absent.c's stand-ins in a CPU-only build).
HARNESS_CU_ONLY := kernels/cuda/bench_peer.cu
LIB_C_SRCS := $(filter-out kernels/cuda_bench_absent.c,$(wildcard kernels/*.c kernels/cpu/*.c kernels/util/*.c runtime/*.c))
HARNESS_C_SRCS := $(wildcard golden/*.c) kernels/cuda_bench_absent.c
ifeq ($(VG_WITH_CUDA),1)
  LIB_C_SRCS := $(filter-out kernels/cuda_absent.c,$(LIB_C_SRCS))
  LIB_CU_SRCS := $(filter-out $(HARNESS_CU_ONLY),$(wildcard kernels/cuda/*.cu))
  HARNESS_CU_SRCS := $(HARNESS_CU_ONLY)
endif
TOOL_SRCS := $(wildcard tools/*.c)
SUITE_SRCS := $(wildcard suites/test_*.c)
SUITE_COMMON := $(wildcard suites/common/*.c)

LIB_OBJS := $(LIB_C_SRCS:%.c=$(BUILD)/obj/%.o) $(LIB_CU_SRCS:%.cu=$(BUILD)/obj/%.cu.o)
HARNESS_OBJS := $(HARNESS_C_SRCS:%.c=$(BUILD)/obj/%.o) $(HARNESS_CU_SRCS:%.cu=$(BUILD)/obj/%.cu.o)
TOOL_OBJS := $(TOOL_SRCS:%.c=$(BUILD)/obj/%.o)
SUITE_COMMON_OBJS := $(SUITE_COMMON:%.c=$(BUILD)/obj/%.o)
SUITE_BINS := $(SUITE_SRCS:suites/%.c=$(BUILD)/suites/%)

LIB_A := $(BUILD)/lib/libvoltgate.a
LIB_SO := $(BUILD)/lib/libvoltgate.so
HARNESS_A := $(BUILD)/lib/libvoltgate_harness.a
TOOL := $(BUILD)/bin/voltgate

.PHONY: all check regress deps clean suites print-config sanitize coverage fuzz sm70-check
.DEFAULT_GOAL := all
# Keep the suites' objects: they are intermediate files of a chain.
.SECONDARY:

all: $(LIB_A) $(LIB_SO) $(HARNESS_A) $(TOOL)

print-config:
	@echo "CUDA=$(VG_WITH_CUDA) NVCC=$(NVCC) CUDA_ARCHS=$(CUDA_ARCHS)"
	@echo "CC=$(CC) PYTHON=$(PYTHON) DEPS_PREFIX=$(DEPS_PREFIX)"

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(VG_INC) $(VG_DEFS) $(CPPFLAGS) $(VG_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(VG_NVCCFLAGS) $(EXTRA_CFLAGS) -MMD -MP -c $< -o $@

$(LIB_A): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# --no-undefined: every symbol of the library resolves in what it links
# (no HDF5, no harness), or the link fails.
$(LIB_SO): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,--no-undefined $(VG_LDFLAGS) -o $@ $^ $(LIB_LDLIBS)

$(HARNESS_A): $(HARNESS_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The harness before the library: it calls into libvoltgate, never the reverse.
$(TOOL): $(TOOL_OBJS) $(HARNESS_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(VG_LDFLAGS) -o $@ $(TOOL_OBJS) $(HARNESS_A) $(LIB_A) $(LDLIBS)

$(BUILD)/suites/%: $(BUILD)/obj/suites/%.o $(SUITE_COMMON_OBJS) $(HARNESS_A) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(VG_LDFLAGS) -o $@ $< $(SUITE_COMMON_OBJS) $(HARNESS_A) $(LIB_A) $(LDLIBS) -lcmocka

suites: $(SUITE_BINS) $(TOOL)

# ---- The two commands -------------------------------------------------------
deps:
	@VG_DEPS=$(VG_DEPS) DEPS_PREFIX="$(DEPS_PREFIX)" PYTHON="$(PYTHON)" sh ci/deps.sh

# Suites run side by side: JOBS when given (make check JOBS=4), else make's
# own -jN, else one per CPU (suites/run.py --jobs).
RUN_JOBS = $(if $(filter command line environment,$(origin JOBS)),--jobs $(JOBS))
# The shared library too: suites/test_fences.sh checks that it needs no HDF5.
check: deps
	@$(MAKE) --no-print-directory -j$(JOBS) suites $(LIB_SO)
	@$(PYTHON) suites/run.py --build $(BUILD) --python $(PYTHON) $(RUN_JOBS)

regress: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) PYTHON=$(PYTHON) sh ci/regress

# ---- Reliability ------------------------------------------------------------
# Every CPU suite under ASan+UBSan, then the threaded suites under TSan, each
# in its own CPU-only build folder.
SANITIZE_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
TSAN_FLAGS := -O1 -g -fsanitize=thread
TSAN_SUITES ?= test_freeze test_concurrency test_policy test_stress_freeze test_coord test_engine
sanitize: deps
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/asan CUDA=0 CFLAGS="$(SANITIZE_FLAGS)" LDFLAGS="-fsanitize=address,undefined" suites
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  $(PYTHON) suites/run.py --build $(BUILD)/asan
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/tsan CUDA=0 CFLAGS="$(TSAN_FLAGS)" LDFLAGS="-fsanitize=thread" suites
	TSAN_OPTIONS=halt_on_error=1 $(PYTHON) suites/run.py --build $(BUILD)/tsan $(foreach s,$(TSAN_SUITES),--only $(s))

# gcov build of the CPU library and suites; gcovr HTML and Cobertura XML under
# $(BUILD)/reports/coverage/, failing under COVERAGE_MIN percent of lines of
# runtime/ and kernels/ host code.
COVERAGE_MIN ?= 85
coverage: deps
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/cov CUDA=0 CFLAGS="-O0 -g --coverage" LDFLAGS="--coverage" suites
	-$(PYTHON) suites/run.py --build $(BUILD)/cov
	@mkdir -p $(BUILD)/reports/coverage
	gcovr --root . --object-directory $(BUILD)/cov/obj --filter 'runtime/' --filter 'kernels/' \
	  --exclude 'kernels/cuda/' --exclude 'kernels/cuda_absent.c' --exclude 'kernels/cuda_bench_absent.c' \
	  --html-details $(BUILD)/reports/coverage/index.html \
	  --cobertura $(BUILD)/reports/coverage/coverage.xml \
	  --print-summary --fail-under-line $(COVERAGE_MIN) \
	  || { echo "coverage: under $(COVERAGE_MIN)% of lines in runtime/ and kernels/ (or gcovr failed)"; exit 1; }

# The Volta build that CUDA 13 cannot make: every CUDA source for sm_70 with
# a CUDA 12-or-older nvcc (ci/sm70 install gets Debian's 11.8), and every
# GEMM kernel's SASS checked for the m8n8k4 MMA.  Says "skipped" without
# such a toolkit.  Not part of check: about 1.5 min on 2 cores (kernels/cuda/KERNELS.md D35).
sm70-check:
	@ci/sm70 build $(BUILD)/sm70; rc=$$?; [ $$rc = 77 ] && exit 0; exit $$rc

clean:
	rm -rf $(BUILD)

-include $(LIB_OBJS:.o=.d) $(HARNESS_OBJS:.o=.d) $(TOOL_OBJS:.o=.d) $(SUITE_BINS:$(BUILD)/suites/%=$(BUILD)/obj/suites/%.d)
-include suites/fuzz/fuzz.mk
-include suites/coord.mk
