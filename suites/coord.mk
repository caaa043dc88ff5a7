# Coordinated tuning across MPI ranks (issue 8): the MPI test program and
# `make check-mpi`.  Included from the top-level Makefile
# (`-include suites/coord.mk`), so BUILD, LIB_A, VG_CPPFLAGS, VG_CFLAGS,
# VG_LDFLAGS and LIB_LDLIBS are the top-level ones.  Both programs link
# libvoltgate alone, as a serving engine does: no harness, no HDF5.
#
#   make check-mpi                 build $(BUILD)/suites/coord_mpi_test, run it
#                                  under mpirun with 2 and then 4 ranks
#   make check-mpi COORD_NP=2      one size only
#   make coord-mpi                 build only
#
# The program is compiled with mpicc and linked with the static library:
# libvoltgate itself never links MPI (voltgate/coord_mpi.h is header-only and
# compiles here, in the caller).  It is not named test_*: suites/run.py runs
# it through suites/test_coord_mpi.sh, not as a cmocka binary.  Each run has
# a wall-clock limit (COORD_TIMEOUT seconds) so that a deadlocked collective
# fails instead of hanging CI.

MPICC ?= mpicc
MPIRUN ?= mpirun
# Root in CI and on the dev machine; more ranks than cores on 2 cores.
MPIRUN_FLAGS ?= --allow-run-as-root --oversubscribe
COORD_NP ?= 2 4
COORD_TIMEOUT ?= 120

COORD_MPI_SRC := suites/coord/coord_mpi_test.c
COORD_MPI_OBJ := $(BUILD)/obj/suites/coord/coord_mpi_test.o
COORD_MPI_BIN := $(BUILD)/suites/coord_mpi_test

.PHONY: check-mpi coord-mpi

coord-mpi: $(COORD_MPI_BIN)

$(COORD_MPI_OBJ): $(COORD_MPI_SRC)
	@mkdir -p $(dir $@)
	$(MPICC) $(VG_CPPFLAGS) $(CPPFLAGS) $(VG_CFLAGS) -MMD -MP -c $< -o $@

$(COORD_MPI_BIN): $(COORD_MPI_OBJ) $(LIB_A)
	@mkdir -p $(dir $@)
	$(MPICC) $(VG_LDFLAGS) -o $@ $< $(LIB_A) $(LIB_LDLIBS)

check-mpi: $(COORD_MPI_BIN)
	@for np in $(COORD_NP); do \
	  echo "check-mpi: $(MPIRUN) -np $$np $(COORD_MPI_BIN)"; \
	  start=$$(date +%s%N); \
	  timeout --kill-after=10 $(COORD_TIMEOUT) $(MPIRUN) $(MPIRUN_FLAGS) -np $$np $(COORD_MPI_BIN) \
	    || { echo "check-mpi: FAILED with $$np ranks (status $$?)"; exit 1; }; \
	  echo "check-mpi: $$np ranks passed in $$(awk "BEGIN{printf \"%.2f\", ($$(date +%s%N) - $$start) / 1e9}") s"; \
	done

-include $(COORD_MPI_OBJ:.o=.d)

# ---- NCCL: the coordinated warm-up on several GPUs --------------------------
#   make coord-nccl                build $(BUILD)/suites/coord_nccl_test
#   make check-nccl                run it with COORD_NCCL_RANKS (2) processes,
#                                  one per GPU; 77 (skip) with fewer GPUs
# Only in a CUDA build with nccl.h in $(CUDA_HOME)/include or /usr/include.
# It launches its own processes (no mpirun: the GPU image may lack MPI).
COORD_NCCL_RANKS ?= 2
COORD_NCCL_DIR ?= $(BUILD)/coord-nccl
COORD_NCCL_OBJ := $(BUILD)/obj/suites/coord/coord_nccl_test.o
COORD_NCCL_BIN := $(BUILD)/suites/coord_nccl_test
ifeq ($(VG_WITH_CUDA),1)
  NCCL_HEADER ?= $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h))
endif

.PHONY: coord-nccl check-nccl
ifneq ($(NCCL_HEADER),)
coord-nccl: $(COORD_NCCL_BIN)

$(COORD_NCCL_OBJ): suites/coord/coord_nccl_test.c
	@mkdir -p $(dir $@)
	$(CC) $(VG_CPPFLAGS) -I$(CUDA_HOME)/include $(CPPFLAGS) $(VG_CFLAGS) -MMD -MP -c $< -o $@

$(COORD_NCCL_BIN): $(COORD_NCCL_OBJ) $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(VG_LDFLAGS) -o $@ $< $(LIB_A) $(LIB_LDLIBS) -lnccl

check-nccl: $(COORD_NCCL_BIN)
	rm -rf $(COORD_NCCL_DIR)
	$(COORD_NCCL_BIN) --ranks $(COORD_NCCL_RANKS) $(COORD_NCCL_DIR)

-include $(COORD_NCCL_OBJ:.o=.d)
else
coord-nccl check-nccl:
	@echo "$@: skipped: needs a CUDA build and nccl.h (CUDA=$(VG_WITH_CUDA))"; exit 77
endif
