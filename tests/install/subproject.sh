#!/bin/sh
# SPDX-License-Identifier: MIT
# subproject.sh SOURCE_ROOT WORKDIR SANITIZE CC...: a project that takes
# libfsaio as a Meson subproject (subprojects/libfsaio is a symlink to this
# tree), built with -Ddefault_library=static. Its consumer runs; its install
# holds only the consumer, libfsaio's archive, headers and .pc (no tests,
# bench, examples or drop-in); then a second program links that install
# statically with `pkg-config --static --libs libfsaio` and runs.
. "$(dirname "$0")/lib.sh"
top=$1 work=$2
skip_sanitized "$3"
shift 3

rm -rf "$work"
mkdir -p "$work/proj/subprojects"
cp "$src/subproject/meson.build" "$src/consumer.c" "$src/consumer.h" "$work/proj/"
ln -s "$(cd "$top" && pwd)" "$work/proj/subprojects/libfsaio"

# forcefallback: the subproject even where libfsaio is installed system-wide.
CC="$*" meson setup "$work/build" "$work/proj" --wrap-mode=forcefallback \
	-Ddefault_library=static --prefix=/usr --libdir=lib >"$work/setup.log" 2>&1 ||
	{ cat "$work/setup.log"; fail "meson setup"; }
meson compile -C "$work/build" >"$work/compile.log" 2>&1 ||
	{ cat "$work/compile.log"; fail "meson compile"; }
(cd "$work" && ./build/consumer "$work/sub.dat") || fail "the subproject's consumer failed"

dest=$work/dest
meson install -C "$work/build" --no-rebuild --destdir "$dest" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; fail "meson install"; }
got=$(cd "$dest" && find . -type f -o -type l | sort | tr '\n' ' ')
want="./usr/bin/consumer ./usr/include/fsaio.h ./usr/include/fsaio_version.h ./usr/lib/libfsaio.a ./usr/lib/pkgconfig/libfsaio.pc "
[ "$got" = "$want" ] || fail "the subproject installed: $got; expected: $want"

export PKG_CONFIG_SYSROOT_DIR="$dest"
export PKG_CONFIG_PATH="$dest/usr/lib/pkgconfig"
flags=$(pkg-config --cflags --static --libs libfsaio)
echo "pkg-config --cflags --static --libs libfsaio: $flags"
for want in -lfsaio -luring -pthread; do
	case " $flags " in *" $want "*) ;; *) fail "pkg-config --static --libs lacks $want: $flags" ;; esac
done
# shellcheck disable=SC2086
"$@" -Wall -Wextra -Werror -o "$work/consumer-static" "$src/consumer.c" $flags ||
	fail "the static consumer does not link with pkg-config --static"
if ldd "$work/consumer-static" | grep -q libfsaio; then
	fail "the static consumer loads a shared libfsaio"
fi
(cd "$work" && ./consumer-static "$work/static.dat") || fail "the static consumer failed"
echo "subproject: ok"
