"""neuromotor as mip packages: the index `make natmods` writes (build.py), its layout
(layout.py), and reading and checking a package on the host before a deploy (fetch.py).

An index is a static folder in MicroPython's layout, the one micropython-lib's index and
mip (on the board, and in mpremote) read:

    index.json                                   the packages and their versions
    package/<mpy>/<name>/<version>.json          {"hashes": [[path, sha256]], "deps": [...], "version"}
    file/<sha256[:2]>/<sha256>                   each file, named by its content

<mpy> is the .mpy version (sys.implementation._mpy & 0xFF), not the architecture, so the
natmods of each architecture are a package of their own: `neuromotor` is the device library
(bytecode, any architecture), `neuromotor-<arch>` the native kernels for <arch>, depending
on `neuromotor`.
"""
