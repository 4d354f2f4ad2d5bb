/* codegen/module.c -- the PTX module of a file's ops: every op's kernels,
 * each distinct kernel once.  Two kernels whose text differs only in their
 * names (the layers of a model: the same shapes, tiles and epilogues; the
 * site number is a parameter, codegen/ptx.c) are one kernel in the module,
 * and the later one's launcher fetches the earlier one (LKernel.image), so
 * ptxas assembles it once: the 10 layers of bench/build/mlp10.syn at P = 8
 * are 20 kernels of 2 kinds. */
#include "codegen.h"

#include <stdlib.h>
#include <string.h>

/* The span of kernel `name` in an op's PTX: from its .entry line to the
 * next one (or the end). */
static bool
kernel_span(const Buf *ptx, const char *name, size_t *lo, size_t *hi)
{
	char head[96];
	const char *s = ptx->s ? ptx->s : "", *at, *next;
	snprintf(head, sizeof head, ".visible .entry %s(", name);
	if (!(at = strstr(s, head)))
		return false;
	next = strstr(at + 1, ".visible .entry ");
	*lo = (size_t)(at - s);
	*hi = next ? (size_t)(next - s) : ptx->len;
	return true;
}

/* The kernel's text with its name taken out of the .entry line. */
static char *
anonymous(const Buf *ptx, size_t lo, size_t hi, const char *name, size_t *n)
{
	size_t head = strlen(".visible .entry "), nl = strlen(name);
	char *t = xmalloc(hi - lo - nl + 1);
	memcpy(t, ptx->s + lo, head);
	memcpy(t + head, ptx->s + lo + head + nl, hi - lo - head - nl);
	*n = hi - lo - nl;
	t[*n] = 0;
	return t;
}

void
ptx_module_add(PtxModule *m, Buf *module, Lowered *lo)
{
	size_t covered = 0;
	for (int k = 0; k < lo->nkern; k++) {
		LKernel *kn = &lo->kern[k];
		size_t a, b, n;
		char *t;
		int same = -1;
		snprintf(kn->image, sizeof kn->image, "%s", kn->name);
		if (!kernel_span(&lo->ptx, kn->name, &a, &b))
			die("ptx_module_add: kernel %s is not in its op's PTX", kn->name);
		covered += b - a;
		t = anonymous(&lo->ptx, a, b, kn->name, &n);
		for (int i = 0; i < m->n && same < 0; i++)
			if (m->k[i].len == n && !memcmp(m->k[i].text, t, n))
				same = i;
		if (same >= 0) {
			snprintf(kn->image, sizeof kn->image, "%s", m->k[same].name);
			free(t);
			continue;
		}
		m->k = xrealloc(m->k, (size_t)(m->n + 1) * sizeof *m->k);
		m->k[m->n].text = t;
		m->k[m->n].len = n;
		snprintf(m->k[m->n].name, sizeof m->k[m->n].name, "%s", kn->name);
		m->n++;
		buf_put(module, lo->ptx.s + a, b - a);
	}
	if (covered != lo->ptx.len) /* text outside every kernel would be lost */
		die("ptx_module_add: %zu bytes of %s's PTX are in no kernel", lo->ptx.len - covered, sym_str(lo->f->name));
}

void
ptx_module_free(PtxModule *m)
{
	for (int i = 0; i < m->n; i++)
		free(m->k[i].text);
	free(m->k);
	*m = (PtxModule){0};
}
