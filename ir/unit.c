/* ir/unit.c -- a compilation unit: the main file and the files it reaches
 * through `use`.  `use nn;` looks for nn.syn in the using file's directory,
 * then each -I directory, then stdlib/ beside the binary, then the
 * installed share directory (docs/language.md, "Modules"). */
#include "ir.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Unit *
unit_new(const Options *opt)
{
	Unit *u = xcalloc(1, sizeof *u);
	u->opt = *opt;
	u->arena = arena_new();
	return u;
}

void
unit_free(Unit *u)
{
	if (!u)
		return;
	for (Func *f = u->funcs, *n; f; f = n) {
		n = f->next;
		ir_func_free(f);
	}
	for (Module *m = u->modules; m; m = m->next)
		free(m->uses);
	for (int i = 0; i < u->ntexts; i++)
		free(u->texts[i]);
	free(u->texts);
	arena_free(u->arena);
	free(u);
}

static const char *
dirname_of(Arena *a, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return ".";
	if (slash == path)
		return "/";
	return arena_strndup(a, path, slash - path);
}

static Sym
module_name(const char *path)
{
	const char *b = strrchr(path, '/');
	size_t n;
	b = b ? b + 1 : path;
	n = strlen(b);
	if (n > 4 && strcmp(b + n - 4, ".syn") == 0)
		n -= 4;
	return sym_intern(b, n);
}

static Module *
parse_text(Unit *u, const char *path, char *text, size_t len)
{
	Module *m = arena_alloc(u->arena, sizeof *m);
	m->file = src_add(strcmp(path, "-") ? path : "<stdin>", text, len);
	m->name = strcmp(path, "-") ? module_name(path) : sym_cstr("stdin");
	m->dir = strcmp(path, "-") ? dirname_of(u->arena, path) : ".";
	m->items = parse_file(m->file, u->arena);
	u->texts = xrealloc(u->texts, (u->ntexts + 1) * sizeof *u->texts);
	u->texts[u->ntexts++] = text;
	return m;
}

/* Parses one file; `where` locates the `use` that asked for it. */
static Module *
load_file(Unit *u, const char *path, Span where)
{
	char *text;
	size_t len;
	const char *why;

	if (++u->nfiles > LIM_FILES) {
		diag_error(where, "more than %d files reached through `use`", LIM_FILES);
		return NULL;
	}
	if (!read_file(path, &text, &len, LIM_SOURCE_BYTES, &why)) {
		if (where.file >= 0)
			diag_error(where, "cannot read %s: %s", path, why);
		else
			diag_usage("cannot read %s: %s", path, why);
		return NULL;
	}
	return parse_text(u, path, text, len);
}

static bool
exists(const char *path)
{
	return access(path, R_OK) == 0;
}

/* The search path of `use`, in order: the using file's directory, the
 * -I directories, stdlib/ beside the binary, the installed share dir. */
static const char *
search_dir(Unit *u, Module *from, int i)
{
	if (i == 0)
		return from->dir;
	if (--i < u->opt.nincdirs)
		return u->opt.incdirs[i];
	i -= u->opt.nincdirs;
	if (i == 0 && u->opt.libdir)
		return u->opt.libdir;
	i -= u->opt.libdir != NULL;
	if (i == 0 && u->opt.sharedir)
		return u->opt.sharedir;
	return NULL;
}

/* Returns a malloc'd path or NULL. */
static char *
find_use(Unit *u, Module *from, Sym name)
{
	Buf b = {0};
	const char *dir;
	for (int i = 0; (dir = search_dir(u, from, i)); i++) {
		b.len = 0;
		if (strcmp(dir, ".") == 0)
			buf_printf(&b, "%s.syn", sym_str(name));
		else
			buf_printf(&b, "%s/%s.syn", dir, sym_str(name));
		if (exists(b.s))
			return b.s;
	}
	buf_free(&b);
	return NULL;
}

static void
not_found(Unit *u, Module *m, Node *use)
{
	Buf b = {0};
	const char *dir;
	diag_error(use->span, "cannot find module '%s' (%s.syn)", sym_str(use->u.name), sym_str(use->u.name));
	for (int i = 0; (dir = search_dir(u, m, i)); i++)
		buf_printf(&b, "%s%s/", i ? ", " : "", dir);
	diag_note(NOSPAN, "searched %s", b.s);
	buf_free(&b);
}

static void
report_cycle(Unit *u, Node *use, Module *dep)
{
	Buf b = {0};
	int i = 0;
	while (u->loading.m[i] != dep)
		i++;
	for (; i < u->loading.n; i++)
		buf_printf(&b, "%s.syn -> ", sym_str(u->loading.m[i]->name));
	diag_error(use->span, "`use %s` makes a cycle: %s%s.syn", sym_str(use->u.name), b.s, sym_str(dep->name));
	buf_free(&b);
}

static Module *
by_path(Unit *u, const char *path)
{
	char real[PATH_MAX];
	if (!realpath(path, real))
		return NULL;
	for (Module *m = u->modules; m; m = m->next) {
		char other[PATH_MAX];
		const Src *s = src_get(m->file);
		if (realpath(s->path, other) && strcmp(real, other) == 0)
			return m;
	}
	return NULL;
}

static void add_module(Unit *u, Module *m);

/* Loads what `m` uses, depth first; a file met again while it is still
 * loading closes a cycle. */
static void
resolve_uses(Unit *u, Module *m)
{
	m->state = 1;
	u->loading.m[u->loading.n++] = m;
	for (Node *it = m->items; it; it = it->next) {
		char *path;
		Module *dep;
		if (it->kind != NK_USE)
			continue;
		path = find_use(u, m, it->u.name);
		if (!path) {
			not_found(u, m, it);
			continue;
		}
		dep = by_path(u, path);
		if (dep && dep->state == 1) {
			report_cycle(u, it, dep);
			free(path);
			continue;
		}
		if (!dep) {
			dep = load_file(u, path, it->span);
			if (dep) {
				add_module(u, dep);
				resolve_uses(u, dep);
			}
		}
		free(path);
		if (!dep)
			continue;
		for (int i = 0; i < m->nuses; i++)
			if (m->uses[i] == dep)
				dep = NULL;
		if (!dep)
			continue;
		m->uses = xrealloc(m->uses, (m->nuses + 1) * sizeof *m->uses);
		m->uses[m->nuses++] = dep;
	}
	u->loading.n--;
	m->state = 2;
}

static void
add_module(Unit *u, Module *m)
{
	Module **t = &u->modules;
	while (*t)
		t = &(*t)->next;
	*t = m;
}

static bool
load_main(Unit *u, Module *m, int before)
{
	if (!m)
		return false;
	add_module(u, m);
	if (diag_errors() == before)
		resolve_uses(u, m);
	return diag_errors() == before;
}

bool
unit_load(Unit *u, const char *path)
{
	int before = diag_errors();
	u->nfiles = 0;
	u->loading.n = 0;
	return load_main(u, load_file(u, path, NOSPAN), before);
}

/* ---- the standard library, for the hint of an unknown function ---- */

static int
is_syn(const struct dirent *e)
{
	size_t n = strlen(e->d_name);
	return n > 4 && strcmp(e->d_name + n - 4, ".syn") == 0;
}

/* The stdlib's modules (stdlib/ beside the binary, else the share
 * directory's), parsed once per unit on the first unknown function and
 * kept apart from the unit's own modules: nothing else sees them. */
static void
read_stdlib(Unit *u)
{
	const char *dirs[2] = {u->opt.libdir, u->opt.sharedir};
	struct dirent **e = NULL;
	int n = -1;
	u->stdlib_read = true;
	for (int d = 0; d < 2 && n < 0; d++)
		if (dirs[d] && (n = scandir(dirs[d], &e, is_syn, alphasort)) >= 0) {
			for (int i = 0; i < n && i < 64; i++) { /* our own library: a few files */
				Buf path = {0};
				char *text;
				size_t len;
				const char *why;
				buf_printf(&path, "%s/%s", dirs[d], e[i]->d_name);
				if (read_file(path.s, &text, &len, LIM_SOURCE_BYTES, &why)) {
					Module *m = parse_text(u, path.s, text, len);
					m->next = u->stdlib;
					u->stdlib = m;
				}
				buf_free(&path);
			}
			for (int i = 0; i < n; i++)
				free(e[i]);
			free(e);
		}
}

Sym
unit_stdlib_home(Unit *u, Sym name)
{
	if (!u->stdlib_read)
		read_stdlib(u);
	for (Module *m = u->stdlib; m; m = m->next)
		for (Node *it = m->items; it; it = it->next)
			if ((it->kind == NK_OP || it->kind == NK_KERNEL) && it->u.fn.name == name)
				return m->name;
	return 0;
}

/* The main file from memory (the fuzzer); `text` becomes the unit's. */
bool
unit_load_text(Unit *u, const char *path, char *text, size_t len)
{
	int before = diag_errors();
	u->nfiles = 1;
	u->loading.n = 0;
	return load_main(u, parse_text(u, path, text, len), before);
}
