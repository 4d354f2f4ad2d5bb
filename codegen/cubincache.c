/* codegen/cubincache.c -- cubins kept across compiles, so that a module
 * ptxas has assembled once (the same file, or another with the same
 * kernels) is not assembled again: ptxas is most of a compile's time (of
 * every example's at P = 8, all but 10-30 ms of syncc's CPU;
 * bench/results/2026-12-04-cubin-cache.md).  One file per key, DIR/cubin/HEX.cubin under the directory the
 * tuning cache uses (base/util.c: cache_dir); HEX is the SHA-256 of
 * everything the cubin depends on: the PTX text, ptxas's --version and
 * the flags it is given.  SYNCC_NO_CUBIN_CACHE=1 turns the cache off.
 *
 * Nothing here may fail a compile or put a wrong cubin in a launcher: an
 * entry is believed only when its header names this key and its size and
 * the hash of its bytes match (a short, damaged or foreign file is a miss,
 * and the fresh cubin replaces it); a directory that cannot be made is a
 * miss, one that cannot be written keeps nothing, and nothing is written
 * anywhere else instead; an entry appears
 * whole or not at all (written beside, then renamed over). */
#include "codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "syncc-cubin 1\n" /* the entry's format; a new one makes old entries misses */

static bool
cache_off(void)
{
	const char *e = getenv("SYNCC_NO_CUBIN_CACHE");
	return e && *e && strcmp(e, "0") != 0;
}

/* The key of a module for the ptxas that says `version` and is run with
 * `flags` (NULL-terminated); false: no cache this time (turned off, or no
 * directory to keep it in). */
bool
ptx_cache_key(const Buf *ptx, const char *version, char *const *flags, CubinKey *k)
{
	char dir[4096];
	Buf m = {0};
	if (cache_off() || !cache_dir(dir, sizeof dir))
		return false;
	snprintf(k->dir, sizeof k->dir, "%s/cubin", dir);
	if (mkdir(k->dir, 0777) != 0 && access(k->dir, R_OK | X_OK) != 0)
		return false; /* one that can be read but not written still has its hits */
	buf_printf(&m, "%sptxas %s\nflags", MAGIC, version);
	for (int i = 0; flags[i]; i++)
		buf_printf(&m, " %s", flags[i]);
	buf_printf(&m, "\nptx %zu\n", ptx->len);
	buf_put(&m, ptx->s ? ptx->s : "", ptx->len);
	sha256_hex(m.s, m.len, k->hex);
	buf_free(&m);
	snprintf(k->path, sizeof k->path, "%s/%s.cubin", k->dir, k->hex);
	return true;
}

/* An entry: MAGIC, "key HEX", "size N", "sum HEX of the N bytes", then
 * the N bytes of the cubin. */
static void
header(Buf *b, const CubinKey *k, const unsigned char *cubin, size_t n)
{
	char sum[65];
	sha256_hex(cubin, n, sum);
	buf_printf(b, "%skey %s\nsize %zu\nsum %s\n", MAGIC, k->hex, n, sum);
}

/* The cubin kept under key k, when its entry is whole and is k's. */
bool
ptx_cache_get(const CubinKey *k, unsigned char **cubin, size_t *n)
{
	char *text, *nl;
	size_t len, size = 0, at = 0, line[4];
	const char *why;
	Buf want = {0};
	int lines = 0;
	bool ok;
	if (!read_file(k->path, &text, &len, 1 << 30, &why))
		return false;
	for (; lines < 4 && (nl = memchr(text + at, '\n', len - at)); lines++) {
		line[lines] = at;
		at = (size_t)(nl - text) + 1;
	}
	ok = lines == 4 && sscanf(text + line[2], "size %zu", &size) == 1 && size == len - at;
	if (ok) { /* the header this key and these bytes would have, byte for byte */
		header(&want, k, (unsigned char *)text + at, size);
		ok = want.len == at && memcmp(want.s, text, at) == 0;
	}
	buf_free(&want);
	if (!ok) {
		free(text);
		return false;
	}
	memmove(text, text + at, size);
	*cubin = (unsigned char *)text;
	*n = size;
	return true;
}

/* Keeps the cubin under key k: written to a file of its own in the same
 * directory and renamed over the entry, so a reader (another syncc at the
 * same time) sees the old entry or the new one, never half of one. */
void
ptx_cache_put(const CubinKey *k, const unsigned char *cubin, size_t n)
{
	char tmp[4300];
	Buf h = {0};
	FILE *f;
	int fd;
	bool ok;
	snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", k->dir);
	if ((fd = mkstemp(tmp)) < 0)
		return;
	if (!(f = fdopen(fd, "wb"))) {
		close(fd);
		unlink(tmp);
		return;
	}
	header(&h, k, cubin, n);
	ok = fwrite(h.s, 1, h.len, f) == h.len && fwrite(cubin, 1, n, f) == n;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, k->path) != 0)
		unlink(tmp);
	buf_free(&h);
}
