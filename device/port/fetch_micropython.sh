#!/bin/sh
# Fetch MicroPython's source from Debian's source package into the build cache,
# apply neuromotor's patches and print the path of the tree. Uses a private apt
# configuration so the system's /etc/apt is never touched; the tarball's sha256 is
# pinned.
#
# Patches (device/port/patches/, applied with -p1 in this order); none changes what
# another port builds:
#   gc-peak-tracking.patch   py/gc.c counts blocks in use and keeps their high-water
#                            mark (MICROPY_GC_PEAK_TRACKING, default off; module nm_heap
#                            reads it)
#   webassembly-library-functions.patch
#                            ports/webassembly/library.js: the arrow functions as
#                            function expressions (Debian's emscripten 3.1.6 emits its
#                            library's arrow functions unparseable)
PATCHES="gc-peak-tracking.patch webassembly-library-functions.patch"
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/micropython.env"
cache=${NEUROMOTOR_CACHE:-$HOME/.cache/neuromotor}
src=$cache/micropython-$MICROPYTHON_DEB_VERSION
stamp=.neuromotor-unpacked
mkdir -p "$cache"

# The stamp lists the sha256 of every patch applied to the tree, in order.
want=$(for p in $PATCHES; do sha256sum < "$here/patches/$p" | cut -c1-64; done)

# Builds of several boards may start at once: one of them fetches and patches.
exec 9>"$cache/.fetch.lock"
flock 9

apply_patches() {  # <tree> <patches already in it, as stamp lines>
    for p in $PATCHES; do
        sum=$(sha256sum < "$here/patches/$p" | cut -c1-64)
        if printf '%s\n' "$2" | grep -qx "$sum"; then
            continue
        fi
        command -v patch >/dev/null || {
            echo "fetch_micropython: GNU patch is missing (apt-get install patch)" >&2
            return 1
        }
        patch -d "$1" -p1 -N -s -f < "$here/patches/$p" >&2 || {
            echo "fetch_micropython: $p does not apply to $1" >&2
            return 1
        }
    done
}

if [ -f "$src/$stamp" ]; then
    have=$(cat "$src/$stamp")
    if [ "$have" = "$want" ]; then
        echo "$src"
        exit 0
    fi
    # Patches added since the tree was unpacked go on in place (a build reading the
    # tree meanwhile sees at most a newer file); any other change unpacks afresh.
    case "$want" in
        "$have"*)
            if apply_patches "$src" "$have"; then
                printf '%s\n' "$want" > "$src/$stamp"
                echo "$src"
                exit 0
            fi ;;
    esac
fi
apt_dir=$cache/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
printf 'deb-src http://deb.debian.org/debian trixie main\n' > "$apt_dir/sources.list"
set -- -o Dir::Etc::sourcelist="$apt_dir/sources.list" -o Dir::Etc::sourceparts=/dev/null \
    -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache" -qq
tarball=$cache/$MICROPYTHON_ORIG_TARBALL
if [ ! -f "$tarball" ]; then
    apt-get "$@" update >&2
    (cd "$cache" && apt-get "$@" source --download-only "micropython=$MICROPYTHON_DEB_VERSION" >&2)
fi
echo "$MICROPYTHON_ORIG_SHA256  $tarball" | sha256sum -c --quiet - >&2 || {
    echo "fetch_micropython: sha256 mismatch for $tarball (delete it to fetch again)" >&2
    exit 1
}
tmp=$(mktemp -d "$cache/unpack.XXXXXX")
tar -xJf "$tarball" -C "$tmp"
tree=$(echo "$tmp"/micropython-*)
apply_patches "$tree" "" || { rm -rf "$tmp"; exit 1; }
printf '%s\n' "$want" > "$tree/$stamp"
rm -rf "$src"
mv "$tree" "$src"
rmdir "$tmp"
echo "$src"
