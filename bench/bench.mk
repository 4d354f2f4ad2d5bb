# bench/bench.mk -- make bench: the baselines of issue 8 (docs/bench.md).
# bench/run builds bench/baseline.c with nvcc and the C compiler, runs it and
# bench/asynctp.py on the GPUs, and writes $OUT (default build/bench-out).
# Without GPUs it says that it needs them and exits 0.  Included at the end of
# the root Makefile.

.PHONY: bench
bench:
	@bash bench/run
