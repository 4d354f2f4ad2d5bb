# codegen/codegen.mk -- the PTX code generator (codegen/), its tool
# build/ptxgen (tests and the GPU harness; not installed) and the GPU
# harness build/gpu-kernels (built only where cuda.h is found).  Included at
# the end of the root Makefile: objects join libsyncc.a through
# prerequisites, since the root's object lists are already expanded there.

# (codegen/*.c are in the root Makefile's LIB_SRC, like every layer.)
$(BUILD)/tools/ptxgen.o: codegen/codegen.h

$(BUILD)/ptxgen: $(BUILD)/tools/ptxgen.o libsyncc.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

all: $(BUILD)/ptxgen
check check-fast: $(BUILD)/ptxgen

# The GPU harness: driver API only; links against the stub libcuda where
# there is no GPU, the real one where there is.
CUDA_HOME ?= /usr/local/cuda
$(BUILD)/gpu-kernels: tests/gpu/kernels.c libsyncc.a codegen/codegen.h
	$(CC) $(ALL_CFLAGS) -I$(CUDA_HOME)/include -o $@ tests/gpu/kernels.c libsyncc.a \
		-L$(CUDA_HOME)/lib64/stubs -lcuda $(LDLIBS)

.PHONY: gpu-kernels
gpu-kernels: $(BUILD)/gpu-kernels
