/* tests/rt/rt_linkcheck.c -- every public function of libsyncrt, linked
 * into one program.  make check builds it where CUDA and NCCL headers exist;
 * it only runs where a GPU does ("rt_linkcheck run" then opens a context). */
#include "../../runtime/syncrt.h"

#include <stdio.h>
#include <string.h>

typedef void (*Fn)(void);

/* Taking every address makes the linker resolve every symbol. */
static const Fn api[] = {
	(Fn)syn_init, (Fn)syn_init_local, (Fn)syn_run_local, (Fn)syn_finalize, (Fn)syn_bind, (Fn)syn_rank,
	(Fn)syn_nranks, (Fn)syn_device, (Fn)syn_sms, (Fn)syn_free_sms, (Fn)syn_stream, (Fn)syn_error,
	(Fn)syn_status_name, (Fn)syn_alloc, (Fn)syn_free, (Fn)syn_peer_ptr, (Fn)syn_barrier, (Fn)syn_flag_addr,
	(Fn)syn_errw_addr, (Fn)syn_timeout_ns, (Fn)syn_trace_slots, (Fn)syn_kernel_get, (Fn)syn_grid_persistent,
	(Fn)syn_check_args, (Fn)syn_begin, (Fn)syn_begin_local, (Fn)syn_launch, (Fn)syn_launch_group, (Fn)syn_wait, (Fn)syn_raise, (Fn)syn_coll,
	(Fn)syn_copy2d, (Fn)syn_end, (Fn)syn_sync, (Fn)syn_trace_write, (Fn)syn_trace_exposed, (Fn)syn_tensor_check,
	(Fn)syn_stream_enter, (Fn)syn_stream_leave, (Fn)syn_device_info, (Fn)syn_op_flags, (Fn)syn_epoch, (Fn)syn_check_topo,
};

int
main(int argc, char **argv)
{
	syn_ctx *c;
	int r;
	if (argc < 2 || strcmp(argv[1], "run")) {
		printf("%zu functions linked\n", sizeof api / sizeof api[0]);
		return 0;
	}
	r = syn_init(&c, NULL);
	printf("syn_init: %s %s\n", syn_status_name(r), r ? syn_error(c) : "");
	syn_finalize(c);
	return r ? 1 : 0;
}
