#!/bin/sh
# SPDX-License-Identifier: MIT
# installed.sh BUILDDIR WORKDIR SANITIZE CC...: `meson install --destdir`
# the build into WORKDIR/dest, check the layout, then build and run a
# program against it with `pkg-config --cflags --libs libfsaio`.
. "$(dirname "$0")/lib.sh"
build=$1 work=$2
skip_sanitized "$3"
shift 3

rm -rf "$work"
mkdir -p "$work"
dest=$work/dest
meson install -C "$build" --no-rebuild --destdir "$dest" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; fail "meson install"; }

# prefix, libdir, bindir, datadir as the build was configured (absolute).
eval "$(meson introspect "$build" --buildoptions | python3 -c '
import json, os, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
for k in ("prefix", "libdir", "bindir", "datadir"):
    print("%s=%s" % (k, os.path.join(o["prefix"], o[k])))')"
L=$dest$libdir

# The library, its headers and .pc.
[ -f "$L/libfsaio.so.0.2.0" ] || [ -f "$L/libfsaio.a" ] || fail "no libfsaio in $libdir"
[ -f "$dest$prefix/include/fsaio.h" ] || fail "fsaio.h not installed"
[ -f "$dest$prefix/include/fsaio_version.h" ] || fail "fsaio_version.h not installed"
[ -f "$L/pkgconfig/libfsaio.pc" ] || fail "libfsaio.pc not installed"
# The prep helpers as functions, for foreign-function interfaces.
[ -f "$L/libfsaio-ffi.so.0.2.0" ] || [ -f "$L/libfsaio-ffi.a" ] || fail "no libfsaio-ffi in $libdir"
[ -f "$L/pkgconfig/libfsaio-ffi.pc" ] || fail "libfsaio-ffi.pc not installed"
# The libaio drop-in: one file under $libdir/fsaio, libaio's sonames as links
# to it, nothing of it in $libdir itself.
if [ -e "$build/dropin/libfsaio-libaio.so" ]; then
	[ -f "$L/fsaio/libfsaio-libaio.so" ] && [ ! -L "$L/fsaio/libfsaio-libaio.so" ] ||
		fail "libfsaio-libaio.so is not a file in $libdir/fsaio"
	for name in libaio.so.1 libaio.so.1t64; do
		[ "$(readlink "$L/fsaio/$name")" = libfsaio-libaio.so ] ||
			fail "$libdir/fsaio/$name is not a link to libfsaio-libaio.so"
	done
	[ "$(ls "$L/fsaio" | wc -l)" = 3 ] || fail "more than the drop-in in $libdir/fsaio: $(ls "$L/fsaio")"
	grep -q "^default_shim='$libdir/fsaio/libfsaio-libaio.so'$" "$dest$bindir/fsaio-run" ||
		fail "fsaio-run does not point at $libdir/fsaio/libfsaio-libaio.so"
	# The POSIX AIO drop-in by its soname: the runtime package has no .so link.
	grep -q "^default_posix_shim='$libdir/libfsaio-posixaio.so.0'$" "$dest$bindir/fsaio-run" ||
		fail "fsaio-run does not point at $libdir/libfsaio-posixaio.so.0"
fi
for f in "$L"/libaio* "$L"/libfsaio-libaio*; do
	[ ! -e "$f" ] || fail "$f installed in the public libdir"
done
# Examples are documentation, not commands.
[ ! -e "$dest$bindir/fsaio-cat" ] || fail "fsaio-cat installed in $bindir"
if [ -d "$build/examples" ]; then
	[ -f "$dest$datadir/doc/libfsaio/examples/fsaio-cat.c" ] ||
		fail "examples not installed under $datadir/doc/libfsaio/examples"
fi

# The manual pages, found by name through the destdir: the overview under
# fsaio too, and the structs' own pages.
if [ -e "$build/man/libfsaio.7" ] && command -v man >/dev/null 2>&1; then
	for name in fsaio libfsaio fsaio_req fsaio_event fsaio_submit; do
		page=$(MANPATH="$dest$datadir/man" man -w "$name" 2>/dev/null) ||
			fail "man $name finds no page in $datadir/man"
		case $page in "$dest$datadir/man/"*) ;; *) fail "man $name found $page, not the installed one" ;; esac
	done
fi

# A program built with what pkg-config says, found through the destdir.
export PKG_CONFIG_SYSROOT_DIR="$dest"
export PKG_CONFIG_PATH="$L/pkgconfig"
[ "$(pkg-config --modversion libfsaio)" = "$(sed -n 's/^#define FSAIO_VERSION_STRING "\(.*\)"/\1/p' "$dest$prefix/include/fsaio_version.h")" ] ||
	fail "pkg-config's version is not the header's"
static=$(pkg-config --static --libs libfsaio)
for want in -lfsaio -luring -pthread; do
	case " $static " in *" $want "*) ;; *) fail "pkg-config --static --libs lacks $want: $static" ;; esac
done
flags=$(pkg-config --cflags --libs libfsaio)
echo "pkg-config --cflags --libs libfsaio: $flags"
# shellcheck disable=SC2086
"$@" -std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -pedantic -Werror \
	-o "$work/consumer" "$src/consumer.c" $flags || fail "the consumer does not build"
deps=$(LD_LIBRARY_PATH="$L" ldd "$work/consumer")
echo "$deps" | grep -q "libfsaio.so.0 => $L/libfsaio.so.0" ||
	fail "the consumer does not load the installed libfsaio: $deps"
(cd "$work" && LD_LIBRARY_PATH="$L" ./consumer "$work/consumer.dat") || fail "the consumer failed"

# A libaio program finds the installed drop-in by libaio's soname.
if [ -e "$build/dropin/libfsaio-libaio.so" ]; then
	if printf '#include <libaio.h>\n' | "$@" -E -x c - >/dev/null 2>&1; then
		"$@" -o "$work/libaio_consumer" "$src/libaio_consumer.c" -laio ||
			fail "libaio_consumer does not build"
		LD_LIBRARY_PATH="$L/fsaio" "$work/libaio_consumer" "$L/fsaio" "$work/libaio.dat" ||
			fail "a libaio program is not served by $libdir/fsaio"
	else
		echo "no libaio.h: the drop-in is not run (Debian: libaio-dev)"
	fi
fi
echo "installed: ok"
