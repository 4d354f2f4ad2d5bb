/* ir/type.c -- dtypes, placements, shapes. */
#include "ir.h"

#include <string.h>

const DTypeInfo ty_dtypes[DT_COUNT] = {
	[DT_F32] = {"f32", 4, "f32", 0x1p-24},
	[DT_F16] = {"f16", 2, "b16", 0x1p-11},
	[DT_BF16] = {"bf16", 2, "b16", 0x1p-8},
	[DT_I32] = {"i32", 4, "s32", 0},
};

const char *const pl_rednames[3] = {"sum", "max", "min"};

bool
ty_dtype_byname(const char *s, DType *dt)
{
	for (int i = 0; i < DT_COUNT; i++)
		if (strcmp(ty_dtypes[i].name, s) == 0) {
			*dt = (DType)i;
			return true;
		}
	return false;
}

bool
pl_eq(Place a, Place b)
{
	if (a.kind != b.kind)
		return false;
	if (a.kind == PL_SPLIT)
		return a.dim == b.dim;
	if (a.kind == PL_PARTIAL)
		return a.red == b.red;
	return true;
}

bool
ty_same_shape(const Type *a, const Type *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dim[i] != b->dim[i])
			return false;
	return true;
}

/* Shapes were checked for overflow when they were made (sema). */
int64_t
ty_numel(const Type *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= t->dim[i];
	return n;
}

int64_t
ty_local_dim(const Type *t, int d, int nranks)
{
	if (t->pl.kind == PL_SPLIT && t->pl.dim == d)
		return t->dim[d] / nranks;
	return t->dim[d];
}

int64_t
ty_local_numel(const Type *t, int nranks)
{
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= ty_local_dim(t, i, nranks);
	return n;
}

void
ty_local_shape(const Type *t, int nranks, int64_t *out)
{
	for (int i = 0; i < t->rank; i++)
		out[i] = ty_local_dim(t, i, nranks);
}

void
pl_print(Buf *b, Place p)
{
	switch (p.kind) {
	case PL_REPL:
		buf_printf(b, "@repl");
		return;
	case PL_SPLIT:
		buf_printf(b, "@split(%d)", p.dim);
		return;
	case PL_PARTIAL:
		buf_printf(b, "@partial(%s)", pl_rednames[p.red]);
		return;
	}
}

void
ty_print_shape(Buf *b, int rank, const int64_t *dim)
{
	buf_printf(b, "[");
	for (int i = 0; i < rank; i++)
		buf_printf(b, "%s%lld", i ? ", " : "", (long long)dim[i]);
	buf_printf(b, "]");
}

void
ty_print(Buf *b, const Type *t)
{
	buf_printf(b, "%s", ty_dtypes[t->dt].name);
	ty_print_shape(b, t->rank, t->dim);
	buf_printf(b, " ");
	pl_print(b, t->pl);
}
