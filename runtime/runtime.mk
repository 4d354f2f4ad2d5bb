# runtime/runtime.mk -- libsyncrt, included by the root Makefile.
#
#   make                  also builds libsyncrt.a and libsyncrt.so where cuda.h
#                         and nccl.h are found (else says it skipped them)
#   make check            also runs the runtime's CPU tests (tests/rt/), links a
#                         program against libsyncrt, runs ptxas on its PTX
#   make rt-gpu-test      build/rt/rt_test, the GPU test (tests/gpu/gpu-check-runtime)
#
# NCCL is looked for in NCCL_HOME, then next to CUDA (the CPU machines' CUDA
# folder carries 2.28.9), then in /usr/include (the GPU machines' Debian
# package, 2.28.3): the code guards on NCCL_VERSION_CODE, never on struct sizes.

CUDA_HOME ?= /usr/local/cuda
NCCL_HOME ?=

RT_CUDA_H := $(wildcard $(CUDA_HOME)/include/cuda.h)
RT_NCCL_H := $(firstword $(wildcard $(if $(NCCL_HOME),$(NCCL_HOME)/include/nccl.h) \
                                    $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h))
RT_NCCL_INC := $(patsubst %/nccl.h,%,$(RT_NCCL_H))
RT_NCCL_LIBDIR := $(if $(filter /usr/include,$(RT_NCCL_INC)),,$(firstword $(wildcard \
                    $(patsubst %/include,%/lib64,$(RT_NCCL_INC)) $(patsubst %/include,%/lib,$(RT_NCCL_INC)))))
RT_STUBS := $(firstword $(wildcard $(CUDA_HOME)/lib64/stubs $(CUDA_HOME)/lib/stubs))
RT_PTXAS := $(firstword $(wildcard $(CUDA_HOME)/bin/ptxas) $(shell command -v ptxas 2>/dev/null))
RT_NVCC := $(firstword $(wildcard $(CUDA_HOME)/bin/nvcc) $(shell command -v nvcc 2>/dev/null))

comma := ,
RT_CPU_SRC := runtime/rt_err.c runtime/rt_env.c runtime/rt_boot.c runtime/rt_trace.c \
              runtime/rt_check.c runtime/rt_plan.c runtime/rt_ptx.c
RT_GPU_SRC := runtime/rt_ctx.c runtime/rt_cuerr.c runtime/rt_sym.c runtime/rt_module.c runtime/rt_world.c \
              runtime/rt_launch.c runtime/rt_watch.c runtime/rt_nccl.c \
              runtime/rt_ce.c runtime/rt_p2p.c runtime/rt_clock.c runtime/rt_ref.c runtime/rt_stream.c runtime/rt_info.c
RT_HDRS := runtime/rt.h runtime/rt_p2p.h runtime/syncrt.h comm/comm.h comm/colls.h comm/backends.h

# System headers are -isystem so their pedantry is not ours.
RT_INC := -isystem $(CUDA_HOME)/include $(if $(filter /usr/include $(CUDA_HOME)/include,$(RT_NCCL_INC)),,-isystem $(RT_NCCL_INC))
RT_CFLAGS = $(ALL_CFLAGS) -fPIC $(RT_INC)
RT_LDLIBS := $(if $(RT_STUBS),-L$(RT_STUBS)) -lcuda \
             $(if $(RT_NCCL_LIBDIR),-L$(RT_NCCL_LIBDIR) -Wl$(comma)-rpath$(comma)$(RT_NCCL_LIBDIR)) -lnccl \
             -lpthread -lm

RT_CPU_OBJ := $(RT_CPU_SRC:runtime/%.c=$(BUILD)/rt/%.o)
RT_GPU_OBJ := $(RT_GPU_SRC:runtime/%.c=$(BUILD)/rt/%.o) $(BUILD)/rt/rt_p2p_ptx.o

$(BUILD)/rt/%.o: runtime/%.c $(RT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(RT_CFLAGS) -c -o $@ $<

# The p2p backend's kernels: CUDA source to PTX and an sm_90 cubin, both
# embedded (the PTX as a string, a line of it a literal; the cubin as bytes),
# so a context loads the cubin at set-up without a JIT.  Without nvcc both
# are empty and the backend refuses its chunks with an error that says so.
$(BUILD)/rt/rt_p2p.ptx: runtime/rt_p2p.cu runtime/rt_p2p.h comm/backends.h
	@mkdir -p $(dir $@)
	$(if $(RT_NVCC),$(RT_NVCC) -arch=sm_90 -ptx -O3 -Iruntime -o $@ runtime/rt_p2p.cu,: > $@)

$(BUILD)/rt/rt_p2p.cubin: runtime/rt_p2p.cu runtime/rt_p2p.h comm/backends.h
	@mkdir -p $(dir $@)
	$(if $(RT_NVCC),$(RT_NVCC) -arch=sm_90 -cubin -O3 -Iruntime -o $@ runtime/rt_p2p.cu,: > $@)

$(BUILD)/rt/rt_p2p_ptx.c: $(BUILD)/rt/rt_p2p.ptx $(BUILD)/rt/rt_p2p.cubin runtime/runtime.mk
	{ echo '/* generated from runtime/rt_p2p.cu by runtime/runtime.mk */'; \
	  echo '#include "rt.h"'; echo 'const char rt_p2p_ptx[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^.*$$/"&\\n"/' $(BUILD)/rt/rt_p2p.ptx; echo '"";'; \
	  echo 'const unsigned char rt_p2p_cubin[] = {'; \
	  od -An -v -tx1 $(BUILD)/rt/rt_p2p.cubin | sed -e 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0};'; \
	  echo 'static const syn_image image = {"libsyncrt p2p kernels (runtime/rt_p2p.cu)", rt_p2p_ptx, rt_p2p_cubin,'; \
	  echo '                                sizeof rt_p2p_cubin - 1};'; \
	  echo 'const syn_image *rt_p2p_image(void) { return &image; }'; } > $@

$(BUILD)/rt/rt_p2p_ptx.o: $(BUILD)/rt/rt_p2p_ptx.c $(RT_HDRS)
	$(CC) $(RT_CFLAGS) -Wno-overlength-strings -Iruntime -c -o $@ $<

$(BUILD)/rt/rt_cpu_test: tests/rt/rt_cpu_test.c $(RT_CPU_OBJ) $(RT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ tests/rt/rt_cpu_test.c $(RT_CPU_OBJ) -lpthread -lm

.PHONY: runtime-all rt-check-deps rt-gpu-test rt-clean

ifneq ($(and $(RT_CUDA_H),$(RT_NCCL_H)),)
runtime-all: libsyncrt.a libsyncrt.so syncrun-gpu

# syncrun on GPUs: libsyncrt linked whole and exported (-rdynamic) so the
# launchers it builds and dlopens find syn_* in it.
syncrun-gpu: $(BUILD)/tools/syncrun_gpu.o libsyncc.a libsyncrt.a
	$(CC) $(ALL_CFLAGS) -rdynamic -o $@ $(BUILD)/tools/syncrun_gpu.o libsyncc.a \
		-Wl,--whole-archive libsyncrt.a -Wl,--no-whole-archive $(RT_LDLIBS) -ldl

$(BUILD)/tools/syncrun_gpu.o: tools/syncrun_gpu.c $(HDRS) $(RT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

libsyncrt.a: $(RT_CPU_OBJ) $(RT_GPU_OBJ)
	rm -f $@
	ar rcs $@ $^

libsyncrt.so: $(RT_CPU_OBJ) $(RT_GPU_OBJ)
	$(CC) -shared -Wl,--no-undefined -o $@ $^ $(RT_LDLIBS)

# The library must link into a program (it is never run here: no GPU).
$(BUILD)/rt/rt_linkcheck: tests/rt/rt_linkcheck.c libsyncrt.a $(RT_HDRS)
	$(CC) $(RT_CFLAGS) -o $@ tests/rt/rt_linkcheck.c libsyncrt.a $(RT_LDLIBS)

$(BUILD)/rt/rt_test: tests/gpu/rt_test.c tests/gpu/bf16.h libsyncrt.a $(RT_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(RT_CFLAGS) -o $@ tests/gpu/rt_test.c libsyncrt.a $(RT_LDLIBS)

rt-gpu-test: $(BUILD)/rt/rt_test
rt-check-deps: $(BUILD)/rt/rt_cpu_test $(BUILD)/rt/rt_linkcheck
else
runtime-all:
	@echo "runtime: cuda.h or nccl.h not found (CUDA_HOME=$(CUDA_HOME), NCCL_HOME=$(NCCL_HOME)): libsyncrt skipped"

rt-gpu-test: runtime-all
rt-check-deps: $(BUILD)/rt/rt_cpu_test
endif

# For tests/rt/rttests.py: where ptxas is ("" when it is not).
$(BUILD)/rt/ptxas.path: FORCE_RT
	@mkdir -p $(dir $@)
	@echo "$(RT_PTXAS)" > $@
.PHONY: FORCE_RT
rt-check-deps: $(BUILD)/rt/ptxas.path

all: runtime-all
check check-fast: rt-check-deps
clean: rt-clean
rt-clean:
	rm -f libsyncrt.a libsyncrt.so syncrun-gpu
