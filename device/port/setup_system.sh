#!/bin/sh
# Install the Debian packages the firmware builds and emulated boards need,
# skipping the install when everything is already present.
set -eu
pkgs="gcc-arm-none-eabi libnewlib-arm-none-eabi picolibc-arm-none-eabi
gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf
qemu-system-arm qemu-system-misc libffi-dev pkg-config valgrind xz-utils"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup_system: installing$missing" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
