# syncc -- one Makefile for the compiler, the simulator, the runtime and the tests.
#
#   make            syncc, syncrun and libsyncc.a
#   make check      everything the tests need, then every test; ends with "N passed, N failed"
#   make check-fast every case once on the normal build (no sanitizer build,
#                   no fuzzing): the edit loop (tests/run says what each runs)
#   make fuzz       a libFuzzer target over the front end (clang), FUZZ_SECONDS=600 to run it
#   make fuzz-back  one that plans, lowers and simulates what checks (clang), FUZZ_SECONDS too
#   make fuzz-diff  random programs against the oracle for FUZZ_SECONDS
#
# Generated C (lexer/lexer.c, parser/parser.c, parser/parser.h) is committed
# and regenerated here only where re2c and bison exist (ninja's rule).

.DELETE_ON_ERROR:
.SUFFIXES:

CC      ?= cc
include mk/dirs.mk
CFLAGS  ?= -O2 -g
WARN    := -std=c11 -Wall -Wextra -Wpedantic -Werror -Wno-unused-function
DEFS    := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DSYNCC_SHAREDIR='"$(SHAREDIR)"'
ALL_CFLAGS = $(WARN) $(DEFS) $(CFLAGS)
LDLIBS  := -lm -lpthread

RE2C    := $(shell command -v re2c 2>/dev/null)
BISON   := $(shell command -v bison 2>/dev/null)

BUILD   := build
# Generated sources are warned about less: their style is not ours.
GEN_CFLAGS = $(filter-out -Wpedantic,$(ALL_CFLAGS)) -Wno-unused-but-set-variable

LIB_SRC := base/util.c base/diag.c base/hash.c \
           lexer/lexer.c parser/parser.c parser/ast.c \
           ir/type.c ir/ir.c ir/unit.c ir/sema.c ir/call.c ir/rules.c ir/pass.c ir/fuse.c ir/attn.c \
           sched/blocks.c sched/cost.c sched/list.c sched/search.c sched/flags.c sched/print.c sched/svg.c sched/mtrace.c sched/tune.c \
           sim/tensor.c sim/comm.c sim/run.c sim/plan.c \
           codegen/ptx.c codegen/prog.c codegen/matmul.c codegen/wgmma.c codegen/simt.c codegen/ew.c codegen/rows.c codegen/attn.c codegen/module.c codegen/lower.c \
           codegen/host.c codegen/cubin.c codegen/cubincache.c \
           tools/driver.c tools/calib.c tools/tune.c
GEN_SRC := lexer/lexer.c parser/parser.c

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
ASAN_OBJ := $(LIB_SRC:%.c=$(BUILD)/asan/%.o)

HDRS := base/base.h parser/ast.h parser/parser.h ir/ir.h ir/ops.h tools/driver.h comm/comm.h comm/colls.h comm/backends.h sim/sim.h sched/sched.h codegen/codegen.h

.PHONY: all check check-fast test clean fuzz fuzz-back fuzz-build fuzz-diff gen-check install
all: syncc syncrun libsyncc.a

# ---- generated front end ----
ifneq ($(RE2C),)
lexer/lexer.c: lexer/lexer.re
	$(RE2C) --no-generation-date --no-version -W -o $@ $<
endif
ifneq ($(BISON),)
parser/parser.c parser/parser.h &: parser/parser.y
	$(BISON) -Wall -Werror -o parser/parser.c --header=parser/parser.h $<
endif

# ---- objects ----
$(BUILD)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/lexer/lexer.o $(BUILD)/parser/parser.o: $(BUILD)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(GEN_CFLAGS) -c -o $@ $<

libsyncc.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

syncc: $(BUILD)/tools/syncc.o libsyncc.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

syncrun: $(BUILD)/tools/syncrun.o libsyncc.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# ---- sanitizer build: the whole test suite runs under ASan+UBSan ----
SAN_OPT = -O1
SAN_FLAGS = $(SAN_OPT) -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# The simulator's matmul kernel (not instrumented, sim/tensor.c) vectorized
# as in the normal build: at -O1 it was 3x slower, a sixth of a sanitized
# simulator run.
$(BUILD)/asan/sim/tensor.o: SAN_OPT = -O2

$(BUILD)/asan/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(DEFS) $(SAN_FLAGS) -c -o $@ $<

$(BUILD)/asan/lexer/lexer.o $(BUILD)/asan/parser/parser.o: $(BUILD)/asan/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -Wpedantic,$(WARN)) -Wno-unused-but-set-variable $(DEFS) $(SAN_FLAGS) -c -o $@ $<

# stdlib/ and profiles/ beside the sanitizer binaries, made by one rule: two
# `ln -sfn` racing under make -j once left a link inside stdlib/ itself.
$(BUILD)/asan/syncc: $(BUILD)/asan/tools/syncc.o $(ASAN_OBJ) | $(BUILD)/asan/.links
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/asan/syncrun: $(BUILD)/asan/tools/syncrun.o $(ASAN_OBJ) | $(BUILD)/asan/.links
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/asan/.links:
	@mkdir -p $(BUILD)/asan
	@rm -rf $(BUILD)/asan/stdlib $(BUILD)/asan/profiles
	@ln -s ../../stdlib $(BUILD)/asan/stdlib && ln -s ../../profiles $(BUILD)/asan/profiles && touch $@

# ---- fuzzing (clang + libFuzzer) ----
FUZZ_CC ?= clang
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -DSYNCC_FUZZ
FUZZ_OBJ_FLAGS := -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -DSYNCC_FUZZ
FUZZ_SECONDS ?= 600

# The library once, an object per file (so make -j builds it in parallel),
# instrumented for both targets; the targets link it with their driver.
FUZZ_WARN = $(filter-out -Wpedantic,$(WARN)) -Wno-unused-but-set-variable -Wno-unknown-warning-option
FUZZ_LIB_OBJ := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(filter-out tools/driver.c tools/calib.c tools/tune.c,$(LIB_SRC)))

$(BUILD)/fuzz/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_WARN) $(DEFS) $(FUZZ_OBJ_FLAGS) -c -o $@ $<

$(BUILD)/fuzz/syncc-fuzz: tests/fuzz/fuzz_front.c $(FUZZ_LIB_OBJ) $(HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_WARN) $(DEFS) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_front.c $(FUZZ_LIB_OBJ) -lm

# The back end too: planning, lowering to PTX and the launcher, and the
# simulator on small ops (tests/fuzz/fuzz_back.c).
$(BUILD)/fuzz/syncc-fuzz-back: tests/fuzz/fuzz_back.c $(FUZZ_LIB_OBJ) $(HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_WARN) $(DEFS) $(FUZZ_FLAGS) -DSYNCC_ROOT='"$(CURDIR)"' -o $@ tests/fuzz/fuzz_back.c $(FUZZ_LIB_OBJ) -lm -lpthread

fuzz-build: $(BUILD)/fuzz/syncc-fuzz $(BUILD)/fuzz/syncc-fuzz-back

fuzz: $(BUILD)/fuzz/syncc-fuzz
	@mkdir -p $(BUILD)/fuzz/corpus
	$(BUILD)/fuzz/syncc-fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 \
		-dict=tests/fuzz/syn.dict $(BUILD)/fuzz/corpus tests/fuzz/corpus tests/lang

fuzz-back: $(BUILD)/fuzz/syncc-fuzz-back
	@mkdir -p $(BUILD)/fuzz/corpus-back
	$(BUILD)/fuzz/syncc-fuzz-back -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=20 -rss_limit_mb=4096 \
		-dict=tests/fuzz/syn.dict $(BUILD)/fuzz/corpus-back tests/fuzz/corpus tests/sim examples

# Differential fuzzing: random well-typed programs, simulated at P = 1..8,
# compared with the oracle (FUZZ_SECONDS, default 600).
fuzz-diff: syncrun
	python3 tests/gen/gensyn.py --seconds $(FUZZ_SECONDS) --seed $$(date +%s)

# ---- tests ----
check: all $(BUILD)/asan/syncc $(BUILD)/asan/syncrun gen-check
	@python3 tests/run --asan $(BUILD)/asan/syncc --asan-run $(BUILD)/asan/syncrun $(if $(shell command -v $(FUZZ_CC) 2>/dev/null),--fuzz-replay)

test: check

check-fast: all gen-check
	@python3 tests/run

# The simulator's matmul against the plain loop, bit for bit (tests/sim/suite.py).
$(BUILD)/sim/mm_check: tests/sim/mm_check.c libsyncc.a $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ tests/sim/mm_check.c libsyncc.a $(LDLIBS)

check check-fast: $(BUILD)/sim/mm_check

# The committed generated files must match their sources.
gen-check:
ifneq ($(RE2C)$(BISON),)
	@python3 tests/gencheck.py "$(RE2C)" "$(BISON)"
else
	@echo "gen-check: re2c and bison not found; committed lexer/parser used as they are"
endif

# make install / make uninstall, the compiled-in dirs, syncrt.pc: mk/install.mk
# (included below, after runtime/runtime.mk, which says whether libsyncrt is built).

clean:
	rm -rf $(BUILD) syncc syncrun libsyncc.a

include codegen/codegen.mk
include runtime/runtime.mk
include bench/bench.mk
include mk/install.mk

# The scheduler's own benchmark (bench/compile): not part of the tests.
$(BUILD)/schedbench: $(BUILD)/tools/schedbench.o libsyncc.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# Everything verified on GPUs, in one call on a 2-GPU machine (tests/gpu/gpu-check).
.PHONY: gpu-check
gpu-check: all
	tests/gpu/gpu-check
