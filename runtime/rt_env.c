/* runtime/rt_env.c -- rank and world from what torchrun, mpirun and Slurm
 * set, and the SYNC_* knobs.  Reads through an RtGetenv so the tests can
 * hand it any environment. */
#include "rt.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* First launcher whose rank variable is set wins: torchrun inside a Slurm
 * allocation sets RANK and is the one that knows the world.  local_size:
 * the ranks of this node, G of a multi-node plan (syn_opts.gpus_per_node);
 * Slurm has no variable that says it exactly (SLURM_NTASKS_PER_NODE is
 * only there when asked for, and may read "4(x2)"). */
static const struct {
	RtLauncher l;
	const char *name, *rank, *size, *local, *local_size;
} launchers[] = {
	{RL_TORCHRUN, "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
	{RL_MPI, "mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
	 "OMPI_COMM_WORLD_LOCAL_SIZE"},
	{RL_SLURM, "slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL},
};

/* Integer knobs.  def < 0 means "derived later" (see fill_derived). */
static const struct {
	const char *name;
	size_t off;
	int def, min, max;
} knobs[] = {
	{"SYNC_TIMEOUT_MS", offsetof(RtEnv, timeout_ms), 10000, 1, INT_MAX},
	{"SYNC_BOOT_TIMEOUT_MS", offsetof(RtEnv, boot_timeout_ms), 30000, 1, INT_MAX},
	{"SYNC_NCCL_MAX_CTAS", offsetof(RtEnv, nccl_max_ctas), 16, 1, 64},
	{"SYNC_FREE_SMS", offsetof(RtEnv, free_sms), -1, 0, 4096},
	{"SYNC_NFLAGS", offsetof(RtEnv, nflags), 4096, 16, 1 << 22},
	{"SYNC_TRACE", offsetof(RtEnv, trace), 0, 0, 1},
	{"SYNC_WATCHDOG_MS", offsetof(RtEnv, watchdog_ms), 20, 1, 60000},
	{"SYNC_BOOT_PORT", offsetof(RtEnv, boot_port), 0, 0, 65535},
	{"SYNC_SYM_VMM", offsetof(RtEnv, sym_vmm), 1, 0, 2},
	{"SYNC_P2P_KFLAGS", offsetof(RtEnv, p2p_kflags), 0, 0, 1},
};

const char *
rt_env_launcher_name(RtLauncher l)
{
	for (size_t i = 0; i < RT_NELEM(launchers); i++)
		if (launchers[i].l == l)
			return launchers[i].name;
	return "none";
}

const char *
rt_env_process(const char *name, void *ud)
{
	(void)ud;
	return getenv(name);
}

/* Whole string, decimal, in [lo, hi]. */
static int
parse_int(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;
	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

static int
bad(char *err, size_t n, const char *fmt, const char *name, const char *val)
{
	rt_fmt(err, n, fmt, name, val);
	return SYN_EENV;
}

static int
parse_knobs(RtEnv *e, RtGetenv get, void *ud, char *err, size_t n)
{
	for (size_t i = 0; i < RT_NELEM(knobs); i++) {
		int *field = (int *)((char *)e + knobs[i].off);
		const char *s = get(knobs[i].name, ud);
		*field = knobs[i].def;
		if (!s || !*s)
			continue;
		if (parse_int(s, knobs[i].min, knobs[i].max, field)) {
			rt_fmt(err, n, "%s='%s' is not an integer in [%d, %d]", knobs[i].name, s, knobs[i].min,
			       knobs[i].max);
			return SYN_EENV;
		}
	}
	if (e->free_sms < 0)
		e->free_sms = e->nccl_max_ctas;
	return SYN_OK;
}

/* The ranks of this node, where the launcher says: between 1 and the world. */
static int
parse_local_size(RtEnv *e, const char *var, RtGetenv get, void *ud, char *err, size_t n)
{
	const char *s = var ? get(var, ud) : NULL;
	if (!s || !*s)
		return SYN_OK;
	if (parse_int(s, 1, e->world, &e->local_world)) {
		rt_fmt(err, n, "%s='%s' is not a node size in [1, %d] (the world's size)", var, s, e->world);
		return SYN_EENV;
	}
	e->local_world_var = var;
	return SYN_OK;
}

static int
parse_launcher(RtEnv *e, RtGetenv get, void *ud, char *err, size_t n)
{
	e->launcher = RL_NONE;
	e->rank = 0;
	e->world = 1;
	e->local_rank = -1;
	for (size_t i = 0; i < RT_NELEM(launchers); i++) {
		const char *r = get(launchers[i].rank, ud), *w, *l;
		if (!r || !*r)
			continue;
		w = get(launchers[i].size, ud);
		l = get(launchers[i].local, ud);
		e->launcher = launchers[i].l;
		if (!w || !*w)
			return bad(err, n, "%s is set but %s is not", launchers[i].rank, launchers[i].size);
		if (parse_int(w, 1, RT_MAX_RANKS, &e->world))
			return bad(err, n, "%s='%s' is not a world size in [1, 4096]", launchers[i].size, w);
		if (parse_int(r, 0, INT_MAX, &e->rank))
			return bad(err, n, "%s='%s' is not a non-negative integer", launchers[i].rank, r);
		if (e->rank >= e->world) {
			rt_fmt(err, n, "%s=%d is out of range for %s=%d", launchers[i].rank, e->rank,
			       launchers[i].size, e->world);
			return SYN_EENV;
		}
		if (l && *l && parse_int(l, 0, INT_MAX, &e->local_rank))
			return bad(err, n, "%s='%s' is not a non-negative integer", launchers[i].local, l);
		return parse_local_size(e, launchers[i].local_size, get, ud, err, n);
	}
	return SYN_OK;
}

/* MASTER_ADDR/MASTER_PORT: torchrun sets them; under mpirun or Slurm the
 * job script exports them (rank 0's host and a free port). */
static int
parse_master(RtEnv *e, RtGetenv get, void *ud, char *err, size_t n)
{
	const char *a = get("MASTER_ADDR", ud), *p = get("MASTER_PORT", ud);
	e->master_addr[0] = 0;
	e->master_port = RT_DEFAULT_PORT;
	if (a && *a) {
		if (strlen(a) >= sizeof e->master_addr)
			return bad(err, n, "%s is too long (%s)", "MASTER_ADDR", a);
		memcpy(e->master_addr, a, strlen(a) + 1);
	} else if (e->world > 1) {
		rt_fmt(err, n,
		       "MASTER_ADDR is not set but %s says WORLD_SIZE=%d: export MASTER_ADDR=<host of rank 0> "
		       "(torchrun sets it; mpirun and Slurm do not)",
		       rt_env_launcher_name(e->launcher), e->world);
		return SYN_EENV;
	}
	if (p && *p && parse_int(p, 1, 65535, &e->master_port))
		return bad(err, n, "%s='%s' is not a TCP port in [1, 65535]", "MASTER_PORT", p);
	return SYN_OK;
}

int
rt_env_parse(RtEnv *e, RtGetenv get, void *ud, char *err, size_t n)
{
	const char *h;
	int r;
	memset(e, 0, sizeof *e);
	err[0] = 0;
	if ((r = parse_launcher(e, get, ud, err, n)) || (r = parse_master(e, get, ud, err, n)) ||
	    (r = parse_knobs(e, get, ud, err, n)))
		return r;
	/* torch.distributed's store already listens on MASTER_PORT: a process
	 * that also runs torch gives the bootstrap a port of its own */
	if (e->boot_port > 0)
		e->master_port = e->boot_port;
	h = get("NCCL_HOSTID", ud);
	if (h && *h)
		rt_fmt(e->hostid, sizeof e->hostid, "%s", h);
	return SYN_OK;
}

/* Which ranks share a node decides peer access (ce, cross-rank flag
 * pushes).  NCCL_HOSTID overrides it exactly as it does for NCCL, so an
 * emulated second node is a second node to us too. */
void
rt_node_id(const char *hostid, char *out, size_t n)
{
	char host[128] = "?", boot[64] = "";
	FILE *f;
	if (hostid && *hostid) {
		rt_fmt(out, n, "id:%s", hostid);
		return;
	}
	if (gethostname(host, sizeof host - 1))
		rt_fmt(host, sizeof host, "?");
	host[sizeof host - 1] = 0;
	f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f) {
		if (!fgets(boot, sizeof boot, f))
			boot[0] = 0;
		fclose(f);
		boot[strcspn(boot, "\n")] = 0;
	}
	rt_fmt(out, n, "host:%s/%s", host, boot);
}
