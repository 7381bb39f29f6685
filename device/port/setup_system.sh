#!/bin/sh
# Install every Debian package `make demo` and `make test` need, on a minimal
# Debian (bookworm or later) that has only python3 and make: the host compiler
# and Python's venv for the virtual environment, the cross compilers and QEMU for
# the boards, cmake for the CMake home of the user C modules, valgrind for the
# kernel fuzz test, patch for the MicroPython source's patches; emscripten, Node and
# Chromium for the browser board (its build, its tests under Node and in a page);
# gcc-12-source for the ESP8266's soft-float routines (libgcc's xtensa sources) and
# picolibc-xtensa-lx106-elf for their C headers (and the ESP32 natmods' C headers);
# clang-22 and llvm-22 (Debian 12's bookworm-security) for the ESP32's windowed Xtensa
# ABI, which no GCC in a registry targets (the lx106's GNU ld links its bare-metal
# programs: lld has no Xtensa). Skips
# the install when everything is already present.
set -eu
pkgs="gcc libc6-dev make cmake patch pkg-config libffi-dev xz-utils ca-certificates
gcc-arm-none-eabi libnewlib-arm-none-eabi picolibc-arm-none-eabi
gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf
gcc-xtensa-lx106 picolibc-xtensa-lx106-elf gcc-12-source
clang-22 llvm-22
qemu-system-arm qemu-system-misc valgrind
emscripten nodejs chromium"
# Debian's python3 ships venv and ensurepip in separate packages; a python3 that
# already has both (pyenv, a distribution build) needs neither.
python=${PYTHON:-python3}
if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
    pkgs="$pkgs python3-venv"
fi
if ! "$python" -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null; then
    pkgs="$pkgs python3-dev"
fi
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || {
        echo "setup_system: need root or sudo to install:$missing" >&2
        exit 1
    }
    sudo="sudo"
fi
echo "setup_system: installing$missing" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
