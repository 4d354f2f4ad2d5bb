/* python/syncc/_fastcall.c -- an op's call from PyTorch in C (issue 16:
 * host time per call).  runtime.Launcher.__call__ does the same in Python
 * through ctypes: read each tensor's dtype, shape, device, layout and
 * address, allocate the results with new_empty, fill in the syn_tensor
 * structs and call syncc_<op>_on_stream on torch's current stream.  There
 * that was 5-6 us of a 14 us call (host_breakdown.py on an H100,
 * 2026-12-06: the Python frames, the check, the struct fill, ctypes);
 * here the same reads are C calls on the tensor objects, the structs are
 * the call's own copies (of the launcher's, for their dims), and the GIL is
 * released around the launcher as ctypes released it.
 *
 * Only the common case is handled: every tensor exactly what the signature
 * wants (the dtype object, the shape, on the context's GPU, contiguous,
 * 16-byte aligned), the context open, torch's profiler off.  Anything else
 * goes to the Python path (`slow`), which names what is wrong, or to the
 * torch operator (`routed`) while the profiler records.  The tensors are
 * duck-typed: only attributes and methods are read, so the package's CPU
 * tests drive this with stand-ins and a stand-in launcher.
 *
 * Built by runtime.py at the first load of a process (the interpreter's
 * own headers, into the build cache); where it cannot be built, every call
 * takes the ctypes path.  SYNCC_FASTCALL=0 turns it off. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "syncrt.h"

/* syncc_<op>_on_stream's type (codegen/host.c, emit_on_stream). */
enum { CALLER_MAX_TENSORS = 64 }; /* arguments and results; more take the Python path */
typedef int (*on_stream_fn)(void *ctx, void *stream, syn_tensor *const *t);

/* The Python objects a Caller holds, in its constructor's order after fn,
 * ctx and structs: the struct's fields, GC traversal and clearing
 * come from this one list. */
#define CALLER_OBJECTS(X)                                                     \
	X(dtypes)     /* tuple: each argument's torch.dtype */                    \
	X(shapes)     /* tuple: each argument's torch.Size */                     \
	X(out_shapes) /* tuple: each result's torch.Size */                       \
	X(out_dtypes) /* tuple: each result's torch.dtype */                      \
	X(device)     /* int: the context's GPU */                                \
	X(stream_fn)  /* torch._C._cuda_getCurrentRawStream */                    \
	X(profiler)   /* torch.autograd.profiler (its _is_profiler_enabled) */    \
	X(routed)     /* the torch operator, or None */                           \
	X(slow)       /* slow(tensors): the Python path */                        \
	X(fail)       /* fail(status): raises the runtime's error */              \
	X(keep)       /* what owns ctx and st (kept alive) */                     \
	X(likes)      /* tuple: per result, an argument of its shape and dtype, or -1 */ \
	X(empty_like) /* torch.empty_like, or None */

typedef struct {
	PyObject_HEAD
	on_stream_fn fn;
	void *const *ctx;    /* the context's ctypes c_void_p: NULL once closed */
	const syn_tensor *st; /* the launcher's structs: arguments, then results (their dims) */
	Py_ssize_t nargs, nres;
	long devidx;          /* the context's GPU */
#define FIELD(name) PyObject *name;
	CALLER_OBJECTS(FIELD)
#undef FIELD
} Caller;

#define ONE(name) +1
enum { NOBJ = 0 CALLER_OBJECTS(ONE) };
#undef ONE
_Static_assert(NOBJ == 13, "caller_init's format and keyword names list 13 objects after fn, ctx, structs");

static PyObject *s_dtype, *s_shape, *s_get_device, *s_is_contiguous, *s_data_ptr, *s_new_empty, *s_profiler_on,
    *kw_dtype;

/* After a failed read of a tensor: 0 (an ordinary exception, cleared: the
 * call takes the Python path, which names what is wrong) or -1 (anything
 * else -- KeyboardInterrupt, MemoryError, SystemExit -- left set, to
 * propagate as the Python path would). */
static int
soft_fail(void)
{
	if (!PyErr_ExceptionMatches(PyExc_Exception) || PyErr_ExceptionMatches(PyExc_MemoryError))
		return -1;
	PyErr_Clear();
	return 0;
}

/* A tensor's data_ptr() into *a: 1, 0 (not an address), -1 (error). */
static int
data_ptr(PyObject *t, uintptr_t *a)
{
	PyObject *p = PyObject_CallMethodNoArgs(t, s_data_ptr);
	if (!p)
		return soft_fail();
	*a = (uintptr_t)PyLong_AsVoidPtr(p);
	Py_DECREF(p);
	return PyErr_Occurred() ? soft_fail() : 1;
}

/* 1 if the method returns exactly `want` (an int or a bool compared by
 * value), 0 if not, -1 on an error to propagate. */
static int
method_is(PyObject *t, PyObject *name, long want)
{
	PyObject *v = PyObject_CallMethodNoArgs(t, name);
	long got;
	if (!v)
		return soft_fail();
	got = PyLong_AsLong(v); /* True and False are ints */
	Py_DECREF(v);
	if (got == -1 && PyErr_Occurred())
		return soft_fail();
	return got == want;
}

/* 1 if attribute `name` is `want` (the object, or equal by value), 0 if
 * not, -1 on an error to propagate. */
static int
attr_is(PyObject *t, PyObject *name, PyObject *want, int by_value)
{
	PyObject *v = PyObject_GetAttr(t, name);
	int ok;
	if (!v)
		return soft_fail();
	ok = by_value ? PyObject_RichCompareBool(v, want, Py_EQ) : v == want;
	Py_DECREF(v);
	return ok < 0 ? soft_fail() : ok;
}

/* Argument i as the signature wants it: its address into st[i], 1; 0 if
 * not; -1 on an error to propagate. */
static int
fast_arg(const Caller *c, syn_tensor *st, Py_ssize_t i, PyObject *t)
{
	uintptr_t p = 1;
	int r;
	if ((r = attr_is(t, s_dtype, PyTuple_GET_ITEM(c->dtypes, i), 0)) < 1 ||
	    (r = attr_is(t, s_shape, PyTuple_GET_ITEM(c->shapes, i), 1)) < 1 ||
	    (r = method_is(t, s_get_device, c->devidx)) < 1 || (r = method_is(t, s_is_contiguous, 1)) < 1 ||
	    (r = data_ptr(t, &p)) < 1)
		return r;
	if (p & 15)
		return 0;
	st[i].data = (void *)p;
	return 1;
}

/* 1 while torch's profiler records, else 0; -1 on an error to propagate. */
static int
profiling(const Caller *c)
{
	PyObject *on;
	int r;
	if (c->profiler == Py_None)
		return 0;
	if (!(on = PyObject_GetAttr(c->profiler, s_profiler_on)))
		return soft_fail();
	r = PyObject_IsTrue(on);
	Py_DECREF(on);
	return r < 0 ? soft_fail() : r;
}

/* Result j allocated: empty_like of the argument of its shape and dtype
 * where it has one (a norm's or a residual's output; no size or dtype to
 * parse: 1.1-1.3 us less than new_empty a result on an H100,
 * tests/gpu/host_breakdown.py), else new_empty on argument 0 (torch.empty's
 * device parsing skipped).  A new reference. */
static PyObject *
result(const Caller *c, Py_ssize_t j, PyObject *ts)
{
	long a = c->empty_like == Py_None ? -1 : PyLong_AsLong(PyTuple_GET_ITEM(c->likes, j)); /* checked at init */
	if (a >= 0)
		return PyObject_CallOneArg(c->empty_like, PyTuple_GET_ITEM(ts, a));
	PyObject *args[4] = {NULL, PyTuple_GET_ITEM(ts, 0), PyTuple_GET_ITEM(c->out_shapes, j),
	                     PyTuple_GET_ITEM(c->out_dtypes, j)};
	return PyObject_VectorcallMethod(s_new_empty, args + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, kw_dtype);
}

/* The results, their addresses after the arguments' in st.  A new
 * reference: the tensor, or a tuple of them. */
static PyObject *
results(const Caller *c, syn_tensor *st, PyObject *ts)
{
	PyObject *outs = PyTuple_New(c->nres);
	if (!outs)
		return NULL;
	for (Py_ssize_t j = 0; j < c->nres; j++) {
		PyObject *o = result(c, j, ts);
		uintptr_t p = 1;
		int r;
		if (!o) {
			Py_DECREF(outs);
			return NULL;
		}
		PyTuple_SET_ITEM(outs, j, o);
		if ((r = data_ptr(o, &p)) < 1 || (p & 15)) {
			Py_DECREF(outs);
			return r < 0 ? NULL : PyErr_Format(PyExc_RuntimeError, "syncc: a result's data_ptr() is not an aligned address");
		}
		st[c->nargs + j].data = (void *)p;
	}
	if (c->nres == 1) {
		PyObject *o = PyTuple_GET_ITEM(outs, 0);
		Py_INCREF(o);
		Py_DECREF(outs);
		return o;
	}
	return outs;
}

/* The launcher on torch's current stream, the GIL released as ctypes did
 * (an op with communication may block in NCCL; other threads run
 * meanwhile): the structs are this call's own copies, so a second thread
 * calling the same op cannot change them under it.  Returns outs, or NULL
 * with the runtime's error raised (fail). */
static PyObject *
launch(const Caller *c, syn_tensor *st, PyObject *ts, PyObject *outs)
{
	syn_tensor *ptrs[CALLER_MAX_TENSORS];
	PyObject *sv = PyObject_CallOneArg(c->stream_fn, c->device);
	void *stream, *ctx;
	int r;
	if (!sv) {
		Py_DECREF(outs);
		return NULL;
	}
	stream = PyLong_AsVoidPtr(sv);
	Py_DECREF(sv);
	if (PyErr_Occurred()) {
		Py_DECREF(outs);
		return NULL;
	}
	/* read after the last Python code of the call: closed meanwhile, the
	 * Python path says so (the results are dropped) */
	if (!(ctx = *c->ctx)) {
		Py_DECREF(outs);
		return PyObject_CallOneArg(c->slow, ts);
	}
	for (Py_ssize_t i = 0; i < c->nargs + c->nres; i++)
		ptrs[i] = &st[i];
	Py_BEGIN_ALLOW_THREADS
	r = c->fn(ctx, stream, ptrs);
	Py_END_ALLOW_THREADS
	if (r) {
		PyObject *e = PyObject_CallFunction(c->fail, "i", r);
		Py_XDECREF(e);
		Py_DECREF(outs);
		if (!PyErr_Occurred())
			PyErr_Format(PyExc_RuntimeError, "syncc: the launcher returned %d", r);
		return NULL;
	}
	return outs;
}

/* caller(tensors): the op's results. */
static PyObject *
caller_call(PyObject *self, PyObject *args, PyObject *kw)
{
	Caller *c = (Caller *)self;
	syn_tensor st[CALLER_MAX_TENSORS];
	PyObject *ts, *outs;
	int r;
	if (kw || PyTuple_GET_SIZE(args) != 1 || !PyTuple_Check(PyTuple_GET_ITEM(args, 0))) {
		PyErr_SetString(PyExc_TypeError, "syncc: a caller takes one tuple of tensors");
		return NULL;
	}
	ts = PyTuple_GET_ITEM(args, 0);
	if (!c->fn) {
		PyErr_SetString(PyExc_TypeError, "syncc: the Caller is not initialised (or was cleared)");
		return NULL;
	}
	if (c->routed != Py_None && (r = profiling(c)))
		return r < 0 ? NULL : PyObject_Call(c->routed, ts, NULL);
	if (!*c->ctx || PyTuple_GET_SIZE(ts) != c->nargs)
		return PyObject_CallOneArg(c->slow, ts);
	/* the signature's dtypes, ranks and dims; this call's addresses */
	memcpy(st, c->st, (size_t)(c->nargs + c->nres) * sizeof st[0]);
	for (Py_ssize_t i = 0; i < c->nargs; i++)
		if ((r = fast_arg(c, st, i, PyTuple_GET_ITEM(ts, i))) < 1)
			return r < 0 ? NULL : PyObject_CallOneArg(c->slow, ts);
	if (!(outs = results(c, st, ts)))
		return NULL;
	return launch(c, st, ts, outs);
}

/* An address argument of the constructor: 1, or 0 with ValueError set. */
static int
address(PyObject *v, const char *what, uintptr_t *a)
{
	*a = (uintptr_t)PyLong_AsVoidPtr(v);
	if (PyErr_Occurred())
		return 0;
	if (!*a)
		PyErr_Format(PyExc_ValueError, "syncc: Caller: %s is NULL", what);
	return *a != 0;
}

static int
tuple_of(PyObject *v, Py_ssize_t n, const char *what)
{
	if (PyTuple_Check(v) && PyTuple_GET_SIZE(v) == n)
		return 1;
	PyErr_Format(PyExc_ValueError, "syncc: Caller: %s must be a tuple of %zd", what, n);
	return 0;
}

/* likes: an argument index in [0, nargs) or -1 for each result, with a
 * callable empty_like: 1, else 0 with ValueError set. */
static int
indices(PyObject *likes, Py_ssize_t nargs, PyObject *empty_like)
{
	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(likes); i++) {
		PyObject *v = PyTuple_GET_ITEM(likes, i);
		long a = PyLong_Check(v) ? PyLong_AsLong(v) : -2;
		if (a < -1 || a >= nargs || PyErr_Occurred()) {
			PyErr_Clear();
			PyErr_Format(PyExc_ValueError, "syncc: Caller: likes holds an argument index below %zd, or -1, a result",
			             nargs);
			return 0;
		}
	}
	if (PyCallable_Check(empty_like))
		return 1;
	PyErr_SetString(PyExc_ValueError, "syncc: Caller: empty_like must be callable (or None)");
	return 0;
}

/* Caller(fn, ctx, structs, dtypes, shapes, out_shapes, out_dtypes, device,
 * stream, profiler, routed, slow, fail, keep[, likes, empty_like]), once:
 * a call reads the tuples while it runs Python code (a tensor's methods),
 * which a second __init__ could otherwise replace under it.  Without
 * likes and empty_like every result is new_empty on argument 0. */
static int
caller_init(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *names[] = {"fn",     "ctx",    "structs",  "dtypes", "shapes", "out_shapes", "out_dtypes",
	                        "device", "stream", "profiler", "routed", "slow",   "fail",       "keep",
	                        "likes",  "empty_like", NULL};
	Caller *c = (Caller *)self;
	PyObject *fn, *ctx, *st, *o[NOBJ];
	uintptr_t a_fn, a_ctx, a_st;
	Py_ssize_t nargs, nres;
	long dev;
	o[11] = o[12] = Py_None; /* likes, empty_like: optional */
	if (c->fn || c->dtypes) {
		PyErr_SetString(PyExc_TypeError, "syncc: a Caller is initialised once");
		return -1;
	}
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOOOOOOOOOO|OO", names, &fn, &ctx, &st, &o[0], &o[1], &o[2], &o[3],
	                                 &o[4], &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12]))
		return -1;
	if (!address(fn, "fn", &a_fn) || !address(ctx, "ctx", &a_ctx) || !address(st, "structs", &a_st))
		return -1;
	if (!PyTuple_Check(o[0])) {
		PyErr_SetString(PyExc_ValueError, "syncc: Caller: dtypes must be a tuple");
		return -1;
	}
	nargs = PyTuple_GET_SIZE(o[0]);
	nres = PyTuple_Check(o[2]) ? PyTuple_GET_SIZE(o[2]) : -1;
	if (!tuple_of(o[1], nargs, "shapes") || !tuple_of(o[2], nres, "out_shapes") || !tuple_of(o[3], nres, "out_dtypes"))
		return -1;
	if (nargs < 1 || nres < 1 || nargs + nres > CALLER_MAX_TENSORS) {
		PyErr_Format(PyExc_ValueError, "syncc: Caller: 1 or more arguments and results, %d in all at most",
		             (int)CALLER_MAX_TENSORS);
		return -1;
	}
	if (o[12] != Py_None && (!tuple_of(o[11], nres, "likes") || !indices(o[11], nargs, o[12])))
		return -1;
	if (!PyLong_Check(o[4]) || !PyCallable_Check(o[5]) || !PyCallable_Check(o[8]) || !PyCallable_Check(o[9])) {
		PyErr_SetString(PyExc_ValueError, "syncc: Caller: device an int; stream, slow and fail callables");
		return -1;
	}
	dev = PyLong_AsLong(o[4]);
	if (PyErr_Occurred())
		return -1;
	c->fn = (on_stream_fn)a_fn;
	c->ctx = (void *const *)a_ctx;
	c->st = (const syn_tensor *)a_st;
	c->nargs = nargs;
	c->nres = nres;
	c->devidx = dev;
#define SLOT(name) &c->name,
	PyObject **slot[] = {CALLER_OBJECTS(SLOT)};
#undef SLOT
	for (size_t i = 0; i < sizeof slot / sizeof slot[0]; i++) {
		Py_INCREF(o[i]);
		*slot[i] = o[i];
	}
	return 0;
}

static int
caller_traverse(PyObject *self, visitproc visit, void *arg)
{
	Caller *c = (Caller *)self;
#define VISIT(name) Py_VISIT(c->name);
	CALLER_OBJECTS(VISIT)
#undef VISIT
	return 0;
}

static int
caller_clear(PyObject *self)
{
	Caller *c = (Caller *)self;
	c->fn = NULL; /* a call after this (GC finalisation order) raises */
#define CLEAR(name) Py_CLEAR(c->name);
	CALLER_OBJECTS(CLEAR)
#undef CLEAR
	return 0;
}

static void
caller_dealloc(PyObject *self)
{
	PyObject_GC_UnTrack(self);
	caller_clear(self);
	Py_TYPE(self)->tp_free(self);
}

static PyTypeObject CallerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "syncc._fastcall.Caller",
    .tp_basicsize = sizeof(Caller),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "An op's launcher called on torch tensors in C (python/syncc/_fastcall.c).",
    .tp_new = PyType_GenericNew,
    .tp_init = caller_init,
    .tp_call = caller_call,
    .tp_traverse = caller_traverse,
    .tp_clear = caller_clear,
    .tp_dealloc = caller_dealloc,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_fastcall", .m_doc = "syncc's C call path (python/syncc/_fastcall.c).",
    .m_size = -1};

static int
intern_names(void)
{
	struct {
		PyObject **p;
		const char *s;
	} n[] = {{&s_dtype, "dtype"},         {&s_shape, "shape"},         {&s_get_device, "get_device"},
	         {&s_is_contiguous, "is_contiguous"}, {&s_data_ptr, "data_ptr"}, {&s_new_empty, "new_empty"},
	         {&s_profiler_on, "_is_profiler_enabled"}};
	for (size_t i = 0; i < sizeof n / sizeof n[0]; i++)
		if (!*n[i].p && !(*n[i].p = PyUnicode_InternFromString(n[i].s)))
			return -1;
	if (!kw_dtype && !(kw_dtype = Py_BuildValue("(O)", s_dtype)))
		return -1;
	return 0;
}

PyMODINIT_FUNC
PyInit__fastcall(void)
{
	PyObject *m;
	if (intern_names() < 0 || PyType_Ready(&CallerType) < 0 || !(m = PyModule_Create(&module)))
		return NULL;
	Py_INCREF(&CallerType);
	if (PyModule_AddObject(m, "Caller", (PyObject *)&CallerType) < 0) {
		Py_DECREF(&CallerType);
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
