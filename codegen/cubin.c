/* codegen/cubin.c -- a cubin from the module, when ptxas is at hand: the
 * launcher then loads it without a JIT at run time.  ptxas is looked up as
 * $PTXAS, then on PATH, then in /usr/local/cuda/bin, and works in a
 * directory of its own under $TMPDIR (or /tmp).  A module ptxas rejects
 * with a message is a compiler bug: the caller reports the log as one; a
 * ptxas that fails without a word, or dies, is the tool's failure. */
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

/* Runs ptxas with stderr to `errpath` and waits; returns 0 with its wait
 * status in *status, or the ending signal that came first (ptxas killed
 * and reaped), or -1 when it could not be started. */
static int
run_held(const char *exe, char *const *argv, const char *errpath, int *status)
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
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
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

/* What ptxas made of the module (codegen.h: PtxasResult). */
PtxasResult
ptx_assemble(const Buf *ptx, unsigned char **cubin, size_t *n, char *log, size_t nlog)
{
	char exe[4096], dir[4200], in[4300], out[4300], err[4300];
	char *argv[] = {exe, "-arch=sm_90a", "-o", out, in, NULL};
	const char *tmp = getenv("TMPDIR"), *why;
	int status = -1, sig = -1;
	char *text = NULL;
	size_t len;
	PtxasResult r = PTXAS_FAILED;
	*cubin = NULL;
	*n = 0;
	log[0] = 0;
	snprintf(dir, sizeof dir, "%s/syncc-ptxas-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!find_ptxas(exe, sizeof exe) || !mkdtemp(dir))
		return PTXAS_NONE; /* no cubin: the launcher JIT-compiles the PTX */
	snprintf(in, sizeof in, "%s/m.ptx", dir);
	snprintf(out, sizeof out, "%s/m.cubin", dir);
	snprintf(err, sizeof err, "%s/log", dir);
	if (!write_all(in, ptx->s ? ptx->s : "", ptx->len))
		snprintf(log, nlog, "cannot write %s for %s", in, exe);
	else if ((sig = run_held(exe, argv, err, &status)) < 0)
		snprintf(log, nlog, "%s could not be started", exe);
	else if (sig == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && read_file(out, &text, &len, 1 << 30, &why)) {
		*cubin = (unsigned char *)text;
		*n = len;
		r = PTXAS_OK;
	} else if (sig == 0 && read_file(err, &text, &len, 1 << 20, &why) && len > 0 && WIFEXITED(status)) {
		snprintf(log, nlog, "%s: %s", exe, text); /* it read the module and said what is wrong */
		r = PTXAS_REJECTED;
	} else if (sig == 0 && WIFSIGNALED(status)) {
		snprintf(log, nlog, "%s was killed by signal %d", exe, WTERMSIG(status));
	} else if (sig == 0) {
		snprintf(log, nlog, "%s failed (exit status %d) and said nothing", exe, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	if (r != PTXAS_OK)
		free(text);
	unlink(in);
	unlink(out);
	unlink(err);
	rmdir(dir);
	if (sig > 0)
		redeliver(sig);
	return r;
}
