/* codegen/cubin.c -- a cubin from the module, when ptxas is at hand: the
 * launcher then loads it without a JIT at run time.  ptxas is looked up as
 * $PTXAS, then on PATH, then in /usr/local/cuda/bin, and works in a
 * directory of its own under $TMPDIR (or /tmp).  A module ptxas rejects
 * with a message is a compiler bug: the caller reports the log as one; a
 * ptxas that fails without a word, or dies, is the tool's failure.  A
 * module assembled before comes from the cubin cache (codegen/cubincache.c)
 * instead: ptxas then only says its version, which is part of the key. */
#include "codegen.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static bool
find_ptxas(char *path, size_t n)
{
	const char *env = getenv("PTXAS"), *p = getenv("PATH");
	if (env && *env) {
		snprintf(path, n, "%s", env);
		return access(path, X_OK) == 0;
	}
	while (p && *p) {
		size_t k = strcspn(p, ":");
		snprintf(path, n, "%.*s/ptxas", (int)k, p);
		if (k && access(path, X_OK) == 0)
			return true;
		p += k + (p[k] == ':');
	}
	snprintf(path, n, "/usr/local/cuda/bin/ptxas");
	return access(path, X_OK) == 0;
}

static bool
write_all(const char *path, const char *s, size_t n)
{
	FILE *f = fopen(path, "wb");
	bool ok = f && fwrite(s, 1, n, f) == n;
	if (f && fclose(f))
		ok = false;
	return ok;
}

/* Signals that end a compile: while ptxas runs they are held, and one
 * that comes kills ptxas and removes its directory before it takes
 * effect -- killing syncc during ptxas left ptxas running and the whole
 * module in the temporary directory. */
static const int ending[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* Runs ptxas with stdout to `outpath` and stderr to `errpath` and waits;
 * returns 0 with its wait status in *status, or the ending signal that
 * came first (ptxas killed and reaped), or -1 when it could not be started. */
static int
run_held(const char *exe, char *const *argv, const char *outpath, const char *errpath, int *status)
{
	sigset_t hold, old, dflt;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	pid_t pid;
	int sig = 0, spawned;
	sigemptyset(&hold);
	sigemptyset(&dflt);
	for (size_t i = 0; i < NELEM(ending); i++)
		sigaddset(&hold, ending[i]), sigaddset(&dflt, ending[i]);
	sigaddset(&hold, SIGCHLD); /* wakes the wait below */
	pthread_sigmask(SIG_BLOCK, &hold, &old);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 1, outpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &old); /* ptxas as it would be without us */
	posix_spawnattr_setsigdefault(&at, &dflt);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	spawned = posix_spawn(&pid, exe, &fa, &at, argv, environ) == 0;
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	while (spawned) {
		struct timespec tick = {0, 50 * 1000 * 1000}; /* and polled, should SIGCHLD be lost */
		int got = sigtimedwait(&hold, NULL, &tick);
		if (waitpid(pid, status, WNOHANG) == pid)
			break;
		if (got > 0 && got != SIGCHLD) {
			sig = got;
			kill(pid, SIGKILL);
			waitpid(pid, status, 0);
			break;
		}
	}
	if (!sig)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	return spawned ? sig : -1;
}

/* After the clean-up: the signal that interrupted ptxas, as if it had
 * come with nothing held (its default action: syncc ends by it). */
static void
redeliver(int sig)
{
	sigset_t one;
	signal(sig, SIG_DFL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	raise(sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	_exit(128 + sig); /* only if it did not end us */
}

/* The flags ptxas is given besides its files: the cache key has them all,
 * so a flag added here keys the cubins it makes. */
static char *const ptxas_flags[] = {"-arch=sm_90a", NULL};

/* The module's key in the cubin cache, from `ptxas --version` (run in
 * `dir`); false: no key (the cache is off, there is no directory for it,
 * or ptxas did not say its version: then nothing is kept), and *sig the
 * ending signal that interrupted it, if one did. */
static bool
cache_key(const char *exe, const char *dir, const Buf *ptx, CubinKey *k, int *sig)
{
	char out[4300], err[4300], *argv[] = {(char *)exe, "--version", NULL}, *text = NULL;
	const char *why;
	size_t len;
	int status = -1;
	bool ok;
	snprintf(out, sizeof out, "%s/version", dir);
	snprintf(err, sizeof err, "%s/log", dir);
	*sig = run_held(exe, argv, out, err, &status);
	ok = *sig == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && read_file(out, &text, &len, 1 << 16, &why) &&
	     len > 0 && ptx_cache_key(ptx, text, ptxas_flags, k);
	free(text);
	unlink(out);
	unlink(err);
	return ok;
}

/* ptxas on the module in `dir` (codegen.h: PtxasResult); *sig as
 * cache_key's. */
static PtxasResult
assemble(const char *exe, const char *dir, const Buf *ptx, unsigned char **cubin, size_t *n, char *log, size_t nlog,
         int *sig)
{
	char in[4300], out[4300], err[4300], *argv[NELEM(ptxas_flags) + 4];
	const char *why;
	int status = -1, k = 0;
	char *text = NULL;
	size_t len;
	PtxasResult r = PTXAS_FAILED;
	argv[k++] = (char *)exe;
	for (size_t i = 0; ptxas_flags[i]; i++)
		argv[k++] = ptxas_flags[i];
	argv[k++] = "-o";
	argv[k++] = out;
	argv[k++] = in;
	argv[k] = NULL;
	snprintf(in, sizeof in, "%s/m.ptx", dir);
	snprintf(out, sizeof out, "%s/m.cubin", dir);
	snprintf(err, sizeof err, "%s/log", dir);
	if (!write_all(in, ptx->s ? ptx->s : "", ptx->len))
		snprintf(log, nlog, "cannot write %s for %s", in, exe);
	else if ((*sig = run_held(exe, argv, "/dev/null", err, &status)) < 0)
		snprintf(log, nlog, "%s could not be started", exe);
	else if (*sig == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	         read_file(out, &text, &len, 1 << 30, &why)) {
		*cubin = (unsigned char *)text;
		*n = len;
		r = PTXAS_OK;
	} else if (*sig == 0 && read_file(err, &text, &len, 1 << 20, &why) && len > 0 && WIFEXITED(status)) {
		snprintf(log, nlog, "%s: %s", exe, text); /* it read the module and said what is wrong */
		r = PTXAS_REJECTED;
	} else if (*sig == 0 && WIFSIGNALED(status)) {
		snprintf(log, nlog, "%s was killed by signal %d", exe, WTERMSIG(status));
	} else if (*sig == 0) {
		snprintf(log, nlog, "%s failed (exit status %d) and said nothing", exe,
		         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	if (r != PTXAS_OK)
		free(text);
	unlink(in);
	unlink(out);
	unlink(err);
	return r;
}

/* What ptxas made of the module (codegen.h: PtxasResult): the cached
 * cubin when the cache has this module's (ptxas then runs only to say its
 * version), else a fresh one, which is kept. */
PtxasResult
ptx_assemble(const Buf *ptx, unsigned char **cubin, size_t *n, char *log, size_t nlog)
{
	char exe[4096], dir[4200];
	const char *tmp = getenv("TMPDIR");
	CubinKey key;
	bool keyed;
	int sig = 0;
	PtxasResult r = PTXAS_FAILED;
	*cubin = NULL;
	*n = 0;
	log[0] = 0;
	snprintf(dir, sizeof dir, "%s/syncc-ptxas-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!find_ptxas(exe, sizeof exe) || !mkdtemp(dir))
		return PTXAS_NONE; /* no cubin: the launcher JIT-compiles the PTX */
	keyed = cache_key(exe, dir, ptx, &key, &sig);
	if (keyed && ptx_cache_get(&key, cubin, n)) {
		r = PTXAS_OK;
	} else if (sig <= 0) { /* a version that could not be had is no reason not to assemble */
		sig = 0;
		r = assemble(exe, dir, ptx, cubin, n, log, nlog, &sig);
		if (r == PTXAS_OK && keyed)
			ptx_cache_put(&key, *cubin, *n);
	}
	rmdir(dir);
	if (sig > 0)
		redeliver(sig);
	return r;
}
