/* codegen/cubin.c -- a cubin from the module, when ptxas is at hand: the
 * launcher then loads it without a JIT at run time.  ptxas is looked up as
 * $PTXAS, then on PATH, then in /usr/local/cuda/bin.  A module ptxas
 * rejects is a compiler bug: the caller reports the log as one. */
#include "codegen.h"

#include <fcntl.h>
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

/* false with log[0] == 0: no ptxas here (no cubin, not an error). */
bool
ptx_assemble(const Buf *ptx, unsigned char **cubin, size_t *n, char *log, size_t nlog)
{
	char exe[4096], dir[] = "/tmp/syncc-ptxas-XXXXXX", in[64], out[64], err[64];
	char *argv[] = {exe, "-arch=sm_90a", "-o", out, in, NULL};
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status = -1;
	const char *why;
	char *text = NULL;
	size_t len;
	bool ok = false;
	*cubin = NULL;
	*n = 0;
	log[0] = 0;
	if (!find_ptxas(exe, sizeof exe) || !mkdtemp(dir))
		return false;
	snprintf(in, sizeof in, "%s/m.ptx", dir);
	snprintf(out, sizeof out, "%s/m.cubin", dir);
	snprintf(err, sizeof err, "%s/log", dir);
	if (write_all(in, ptx->s ? ptx->s : "", ptx->len)) {
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
		if (posix_spawn(&pid, exe, &fa, NULL, argv, environ) == 0)
			waitpid(pid, &status, 0);
		posix_spawn_file_actions_destroy(&fa);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && read_file(out, &text, &len, 1 << 30, &why)) {
			*cubin = (unsigned char *)text;
			*n = len;
			ok = true;
		} else if (read_file(err, &text, &len, 1 << 20, &why)) {
			snprintf(log, nlog, "%s: %s", exe, text);
			free(text);
		} else {
			snprintf(log, nlog, "%s failed to run", exe);
		}
	}
	unlink(in);
	unlink(out);
	unlink(err);
	rmdir(dir);
	return ok;
}
