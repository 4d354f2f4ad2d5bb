# mk/install.mk -- make install, make uninstall; included by the Makefile
# after runtime/runtime.mk (RT_CUDA_H, RT_NCCL_H, RT_LDLIBS).
#
#   make install   [DESTDIR=/stage] [PREFIX=/usr/local] [bindir=... libdir=...]
#   make uninstall (the same variables): removes exactly the files install put
#
# The directories are mk/dirs.mk's GNU variables.  What goes where:
#
#   $(bindir)         syncc, syncrun, and where libsyncrt is built syncrun-gpu
#   $(libdir)         libsyncrt.a, libsyncrt.so          (where libsyncrt is built)
#   $(includedir)/syncc  syncrt.h, comm.h and its tables  (where libsyncrt is built)
#   $(pkgconfigdir)   syncrt.pc, written for these dirs  (where libsyncrt is built)
#   $(SHAREDIR)       stdlib/*.syn, profiles/*.prof   ($(datadir)/syncc)
#   $(man1dir)        syncc.1, syncrun.1, and syncrun-gpu.1 with it
#
# The share dir (and, for syncrun-gpu, the include dir) is compiled into the
# binaries.  $(BUILD)/dirs.stamp remembers the values the objects were built
# with; when a later make (make install PREFIX=/opt included) names other
# ones, the few objects that hold them are rebuilt, so the installed binaries
# always look where install put their data.  The binaries also look in
# PARENT/share/syncc beside their own PARENT/bin first, which is what makes
# a DESTDIR-staged or moved tree work (docs/cli.md, "Files").

INSTALL         ?= install
INSTALL_PROGRAM ?= $(INSTALL) -m 755
INSTALL_DATA    ?= $(INSTALL) -m 644

# libsyncrt is built where runtime/runtime.mk found cuda.h and nccl.h.
INST_RT   := $(and $(RT_CUDA_H),$(RT_NCCL_H))
INST_BIN  := syncc syncrun $(if $(INST_RT),syncrun-gpu)
INST_LIB  := $(if $(INST_RT),libsyncrt.a libsyncrt.so)
INST_INC  := $(if $(INST_RT),runtime/syncrt.h comm/comm.h comm/colls.h comm/backends.h)
INST_MAN  := docs/man/syncc.1 docs/man/syncrun.1 $(if $(INST_RT),docs/man/syncrun-gpu.1)
INST_SYN  := $(wildcard stdlib/*.syn)
INST_PROF := $(wildcard profiles/*.prof)
INST_PC   := $(if $(INST_RT),syncrt.pc)
SYNCC_VERSION_TEXT := $(shell sed -n 's/^\#define SYNCC_VERSION "\(.*\)"/\1/p' base/base.h)

# Every installed file, as uninstall removes it (DESTDIR added there).
INST_FILES := $(addprefix $(bindir)/,$(notdir $(INST_BIN))) \
              $(addprefix $(libdir)/,$(notdir $(INST_LIB))) \
              $(addprefix $(includedir)/syncc/,$(notdir $(INST_INC))) \
              $(addprefix $(pkgconfigdir)/,$(INST_PC)) \
              $(addprefix $(SHAREDIR)/stdlib/,$(notdir $(INST_SYN))) \
              $(addprefix $(SHAREDIR)/profiles/,$(notdir $(INST_PROF))) \
              $(addprefix $(man1dir)/,$(notdir $(INST_MAN)))
# The directories that are syncc's alone, removed by uninstall when empty
# (bindir, libdir, man1dir, ... may hold other programs' files).
INST_OWN_DIRS := $(SHAREDIR)/stdlib $(SHAREDIR)/profiles $(SHAREDIR) $(if $(INST_RT),$(includedir)/syncc)

# ---- the dirs compiled in: a change rebuilds what holds them ----
DIRS_STAMP := $(BUILD)/dirs.stamp
DIRS_NOW   := share=$(SHAREDIR) include=$(includedir)
ifeq ($(filter clean,$(MAKECMDGOALS)),)
$(shell mkdir -p $(BUILD) && { [ "$$(cat $(DIRS_STAMP) 2>/dev/null)" = '$(DIRS_NOW)' ] || echo '$(DIRS_NOW)' > $(DIRS_STAMP); })
endif
$(BUILD)/base/util.o $(BUILD)/asan/base/util.o $(BUILD)/tools/syncrun_gpu.o: $(DIRS_STAMP)
$(BUILD)/tools/syncrun_gpu.o: ALL_CFLAGS += -DSYNCC_INCLUDEDIR='"$(includedir)"'

.PHONY: install uninstall
install: all
	$(INSTALL) -d $(DESTDIR)$(bindir) $(DESTDIR)$(SHAREDIR)/stdlib $(DESTDIR)$(SHAREDIR)/profiles $(DESTDIR)$(man1dir)
	$(INSTALL_PROGRAM) $(INST_BIN) $(DESTDIR)$(bindir)/
	$(INSTALL_DATA) $(INST_SYN) $(DESTDIR)$(SHAREDIR)/stdlib/
	$(INSTALL_DATA) $(INST_PROF) $(DESTDIR)$(SHAREDIR)/profiles/
	$(INSTALL_DATA) $(INST_MAN) $(DESTDIR)$(man1dir)/
ifneq ($(INST_RT),)
	$(INSTALL) -d $(DESTDIR)$(libdir) $(DESTDIR)$(includedir)/syncc $(DESTDIR)$(pkgconfigdir)
	$(INSTALL_DATA) libsyncrt.a $(DESTDIR)$(libdir)/
	$(INSTALL_PROGRAM) libsyncrt.so $(DESTDIR)$(libdir)/
	$(INSTALL_DATA) $(INST_INC) $(DESTDIR)$(includedir)/syncc/
	sed 's|^#include "../comm/\(.*\)"$$|#include "\1"|' runtime/syncrt.h >$(DESTDIR)$(includedir)/syncc/syncrt.h
	$(call write_pc,$(DESTDIR)$(pkgconfigdir)/syncrt.pc)
else
	@echo "install: libsyncrt was not built (no cuda.h or nccl.h): syncrun-gpu, libsyncrt, its headers and syncrt.pc not installed"
endif

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INST_FILES))
	-rmdir $(addprefix $(DESTDIR),$(INST_OWN_DIRS)) 2>/dev/null || true

# syncrt.pc, written at install time for the dirs installed to (so there is
# no file in the tree to go stale).  libdir and includedir are written under
# ${prefix} when they are, so `pkg-config --define-prefix` finds a staged or
# moved tree.  A program links -lsyncrt and the CUDA
# driver and NCCL (the CUDA stubs directory is enough for linking: the real
# libcuda.so.1 comes with the GPU driver); linked statically
# (pkg-config --static) it also needs pthreads and libm.
define write_pc
	printf '%s\n' \
		'prefix=$(prefix)' \
		'libdir=$(patsubst $(prefix)/%,$${prefix}/%,$(libdir))' \
		'includedir=$(patsubst $(prefix)/%,$${prefix}/%,$(includedir))' \
		'' \
		'Name: syncrt' \
		'Description: syncc runtime: runs the generated launchers over the CUDA driver API and NCCL' \
		'Version: $(SYNCC_VERSION_TEXT)' \
		'Cflags: -I$${includedir}/syncc' \
		'Libs: -L$${libdir} -lsyncrt $(filter-out -lpthread -lm,$(RT_LDLIBS))' \
		'Libs.private: -lpthread -lm' > $(1)
	chmod 644 $(1)
endef
