#!/bin/sh
# Fetch MicroPython's source from Debian's source package into the build cache and
# print the path of the unpacked tree. Uses a private apt configuration so the
# system's /etc/apt is never touched; the tarball's sha256 is pinned.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/micropython.env"
cache=${NEUROMOTOR_CACHE:-$HOME/.cache/neuromotor}
src=$cache/micropython-$MICROPYTHON_DEB_VERSION
if [ -f "$src/.neuromotor-unpacked" ]; then
    echo "$src"
    exit 0
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
rm -rf "$src"
mv "$tmp"/micropython-* "$src"
rmdir "$tmp"
touch "$src/.neuromotor-unpacked"
echo "$src"
