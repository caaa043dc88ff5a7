# libFuzzer targets for every parser voltgate exposes to files users write.
# Included from the top-level Makefile (`-include suites/fuzz/fuzz.mk`).
#
#   make fuzz                    build every suites/fuzz/fuzz_*.c and run each
#                                for FUZZ_SECONDS (default 60) on a copy of its
#                                corpus; fails when any target crashes
#   make fuzz FUZZ_SECONDS=600   the long run
#   make fuzz FUZZ_TARGETS=fuzz_lut   one target only
#   make fuzz-build              build only
#
# The library is rebuilt with clang under $(BUILD)/fuzz, CPU-only whatever the
# top-level build detected (kernels/cuda_absent.c, never kernels/cuda/*.cu),
# instrumented with -fsanitize=fuzzer-no-link,address,undefined; each target
# is linked with -fsanitize=fuzzer,address,undefined.
#
# Each run works in $(BUILD)/fuzz/run/<target>/: corpus/ starts as a copy of
# suites/fuzz/corpus/<target>/ and collects what the fuzzer finds (the
# committed corpus is never written), crash-*/leak-*/timeout-* artifacts land
# in artifacts/ (slow-unit-* are kept there but do not fail the run), and
# log.txt keeps libFuzzer's output with its final stats.
#
# Long runs that must go on past a crash: FUZZ_EXTRA="-fork=1 -ignore_crashes=1
# -ignore_timeouts=1" (every crash still lands in artifacts/ and fails make).
# A crash: minimize it (`$(BUILD)/fuzz/bin/<target> -minimize_crash=1
# -runs=10000 ARTIFACT`), keep it under suites/fuzz/regressions/<target>/ and
# add a case to suites/test_fuzz_regressions.c.

FUZZ_SECONDS ?= 60
FUZZ_EXTRA ?=
FUZZ_CC ?= clang
FUZZ_BUILD := $(BUILD)/fuzz
FUZZ_ALL := $(patsubst suites/fuzz/%.c,%,$(wildcard suites/fuzz/fuzz_*.c))
FUZZ_TARGETS ?= $(FUZZ_ALL)

# Same sources as the library, CPU-only: cuda_absent.c stands in for kernels/cuda/.
FUZZ_LIB_SRCS := $(wildcard kernels/*.c kernels/cpu/*.c kernels/util/*.c runtime/*.c golden/*.c)
FUZZ_LIB_OBJS := $(FUZZ_LIB_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_LIB := $(FUZZ_BUILD)/lib/libvoltgate-fuzz.a
FUZZ_BINS := $(FUZZ_ALL:%=$(FUZZ_BUILD)/bin/%)

FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CPPFLAGS := $(filter-out -DVG_WITH_CUDA=%,$(VG_CPPFLAGS)) -DVG_WITH_CUDA=0
# -Werror stays off here: the gcc build is the warning gate; clang's extra
# warnings are printed, not fatal, so they cannot stop a fuzz run.
FUZZ_CFLAGS := -std=c11 -Wall -Wextra -O1 -g -fno-omit-frame-pointer -pthread $(FUZZ_SAN)
FUZZ_LDLIBS := $(HDF5_LIBS) -lcjson -lm

# Per-target libFuzzer options.  HDF5 is not instrumented and keeps free
# lists and caches that LeakSanitizer sees as leaks: suites/fuzz/lsan.supp
# suppresses leaks allocated inside libhdf5 (ours are still reported).
FUZZ_OPTS := -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1536 -print_final_stats=1
FUZZ_OPTS_fuzz_config := -dict=suites/fuzz/json.dict
FUZZ_OPTS_fuzz_safetensors := -dict=suites/fuzz/json.dict
FUZZ_OPTS_fuzz_lut := -dict=suites/fuzz/lut.dict
FUZZ_OPTS_fuzz_golden :=

.PHONY: fuzz fuzz-build fuzz-deps

# clang and libFuzzer (libclang-rt-14-dev on Debian 12): installed as root
# through apt when missing, else the exact command is printed and make fails.
FUZZ_DEPS_STAMP := $(FUZZ_BUILD)/.deps-ok
fuzz-deps: $(FUZZ_DEPS_STAMP)
$(FUZZ_DEPS_STAMP):
	@mkdir -p $(FUZZ_BUILD)
	@probe() { printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}\n' \
	    > $(FUZZ_BUILD)/probe.c && $(FUZZ_CC) -fsanitize=fuzzer,address,undefined \
	    $(FUZZ_BUILD)/probe.c -o $(FUZZ_BUILD)/probe >/dev/null 2>&1; }; \
	if ! probe; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "fuzz: $(FUZZ_CC) with libFuzzer missing; installing clang libclang-rt-14-dev"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y clang libclang-rt-14-dev || exit 1; \
	  fi; \
	  probe || { echo "fuzz: $(FUZZ_CC) cannot link -fsanitize=fuzzer; install it with:"; \
	             echo "  sudo apt-get install -y clang libclang-rt-14-dev"; exit 1; }; \
	fi
	@rm -f $(FUZZ_BUILD)/probe $(FUZZ_BUILD)/probe.c
	@touch $@

# Known, reported undefined behaviour that would stop every run at its first
# input can be exempted per file while its owner fixes it (FUZZ_KNOWN_UB=lut
# did this for runtime/lut.c's NULL + 0 and qsort(NULL, 0), fixed in 4ab5f79;
# suites/test_fuzz_regressions.c keeps checking both under `make sanitize`).
# lut covers the LUT's three files (lut.c, lut_export.c, lut_import.c).
FUZZ_KNOWN_UB ?=
$(if $(filter lut,$(FUZZ_KNOWN_UB)),$(addprefix $(FUZZ_BUILD)/obj/runtime/,lut.o lut_export.o lut_import.o): FUZZ_EXEMPT := -fno-sanitize=pointer-overflow -fno-sanitize=nonnull-attribute)

$(FUZZ_BUILD)/obj/%.o: %.c | $(FUZZ_DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(FUZZ_CFLAGS) $(FUZZ_EXEMPT) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_LIB): $(FUZZ_LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/bin/%: $(FUZZ_BUILD)/obj/suites/fuzz/%.o $(FUZZ_LIB)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB) $(FUZZ_LDLIBS)

fuzz-build: $(FUZZ_BINS)

# Runs every target in turn, then fails if any crashed (every target runs
# even after a crash, so one bug does not hide another).
fuzz: fuzz-build
	@failed=""; \
	for t in $(FUZZ_TARGETS); do \
	  run=$(FUZZ_BUILD)/run/$$t; rm -rf $$run; mkdir -p $$run/corpus $$run/artifacts; \
	  cp suites/fuzz/corpus/$$t/* $$run/corpus/ 2>/dev/null; \
	  opts="$(FUZZ_OPTS)"; \
	  case $$t in \
	    fuzz_config) opts="$$opts $(FUZZ_OPTS_fuzz_config)";; \
	    fuzz_lut) opts="$$opts $(FUZZ_OPTS_fuzz_lut)";; \
	    fuzz_safetensors) opts="$$opts $(FUZZ_OPTS_fuzz_safetensors)";; \
	    fuzz_golden) opts="$$opts $(FUZZ_OPTS_fuzz_golden)";; \
	  esac; \
	  echo "fuzz: $$t for $(FUZZ_SECONDS) s ($$(ls $$run/corpus | wc -l) seeds) -> $$run/log.txt"; \
	  ASAN_OPTIONS=abort_on_error=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/suites/fuzz/lsan.supp \
	  $(FUZZ_BUILD)/bin/$$t $$opts -max_total_time=$(FUZZ_SECONDS) $(FUZZ_EXTRA) \
	    -artifact_prefix=$$run/artifacts/ $$run/corpus > $$run/log.txt 2>&1; rc=$$?; \
	  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)|^#[0-9]+ +DONE' $$run/log.txt | tail -4 | sed "s/^/  $$t: /"; \
	  if [ $$rc -ne 0 ] || ls $$run/artifacts/ | grep -qv '^slow-unit-'; then \
	    echo "fuzz: $$t FAILED (rc=$$rc); artifacts:"; ls $$run/artifacts/ | sed 's/^/    /'; \
	    grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error' $$run/log.txt | sed 's/^/    /'; \
	    failed="$$failed $$t"; \
	  fi; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: crashes in:$$failed"; exit 1; fi; \
	echo "fuzz: $(words $(FUZZ_TARGETS)) target(s), $(FUZZ_SECONDS) s each, no crash"

-include $(FUZZ_LIB_OBJS:.o=.d) $(FUZZ_ALL:%=$(FUZZ_BUILD)/obj/suites/fuzz/%.d)
