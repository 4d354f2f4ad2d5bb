# mk/dirs.mk -- where `make install` puts things: the GNU directory
# variables (GNU Coding Standards, "Variables for Installation
# Directories").  Included by the Makefile before the compiler flags,
# which compile the share dir in.  `make PREFIX=/opt/syncc` and
# `make prefix=/opt/syncc` mean the same; any one variable can be set alone
# (`make install bindir=$HOME/bin`).

PREFIX       ?= /usr/local
prefix       ?= $(PREFIX)
exec_prefix  ?= $(prefix)
bindir       ?= $(exec_prefix)/bin
libdir       ?= $(exec_prefix)/lib
includedir   ?= $(prefix)/include
datarootdir  ?= $(prefix)/share
datadir      ?= $(datarootdir)
mandir       ?= $(datarootdir)/man
man1dir      ?= $(mandir)/man1
pkgconfigdir ?= $(libdir)/pkgconfig

# stdlib/ and profiles/ of an installed syncc.  Compiled into the binaries
# (base/util.c: share_dir()); an installed tree also finds its own
# PARENT/share/syncc beside PARENT/bin first, so DESTDIR staging and a
# moved prefix work too.
SHAREDIR     ?= $(datadir)/syncc
