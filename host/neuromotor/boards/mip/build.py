"""Write neuromotor's mip index: the device library compiled by mpy-cross as package
`neuromotor`, and each architecture's natmods as package `neuromotor-<arch>`.

    python -m neuromotor.boards.mip.build OUT --natmods $NEUROMOTOR_CACHE/natmods --archs "x64 armv7emsp"

`make natmods` runs this into $NEUROMOTOR_CACHE/mip. The index is written beside OUT and
moved into place when complete, so a server of OUT never serves half an index. The same
inputs give the same bytes (no timestamps): files are named by their SHA-256.
"""

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

from neuromotor.boards.deploy.core import MPY_VERSION, compile_lib, lib_sources
from neuromotor.boards.mip.layout import RUNTIME, VERSION, file_path, natmod_package, package_path

DESCRIPTIONS = {RUNTIME: "neuromotor's device runtime: policy files, native/ulab/python backends, bench server"}


def _package_json(files: dict, deps=()) -> bytes:
    pkg = {"hashes": [[name, hashlib.sha256(data).hexdigest()] for name, data in sorted(files.items())],
           "deps": [[d, VERSION] for d in deps], "version": VERSION}
    return (json.dumps(pkg, indent=1) + "\n").encode()


def packages(natmods: Path, archs) -> dict:
    """{package name: (files {name: bytes}, deps)}: the runtime, then one package per arch
    that has natmods in `natmods`/<arch>/."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="nm-mip-") as work:
        out[RUNTIME] = ({f"{src.stem}.mpy": compile_lib(src, None, Path(work)) for src in lib_sources()}, ())
    for arch in sorted(set(archs)):
        mods = sorted((natmods / arch).glob("*.mpy"))
        if mods:
            out[natmod_package(arch)] = ({m.name: m.read_bytes() for m in mods}, (RUNTIME,))
    return out


def write_index(out: Path, natmods: Path, archs) -> dict:
    """Write the index into `out` (replacing it); returns {package: [file names]}."""
    out = Path(out)
    new = out.with_name(out.name + ".new")
    shutil.rmtree(new, ignore_errors=True)
    listing = []
    made = {}
    for name, (files, deps) in packages(natmods, archs).items():
        for data in files.values():
            f = new / file_path(hashlib.sha256(data).hexdigest())
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(data)
        pkg = _package_json(files, deps)
        for version in (VERSION, "latest"):
            p = new / package_path(MPY_VERSION, name, version)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(pkg)
        arch = name[len(RUNTIME) + 1:]
        listing.append({"name": name, "version": VERSION,
                        "description": DESCRIPTIONS.get(name, f"neuromotor's native kernels for {arch} (natmods)"),
                        "versions": {str(MPY_VERSION): [VERSION]}})
        made[name] = sorted(files)
    (new / "index.json").write_text(json.dumps({"v": 2, "packages": listing}, indent=1) + "\n")
    old = out.with_name(out.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        out.rename(old)
    new.rename(out)
    shutil.rmtree(old, ignore_errors=True)
    return made


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m neuromotor.boards.mip.build", description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="index folder to write (replaced)")
    p.add_argument("--natmods", required=True, help="folder of <arch>/*.mpy (make natmods' output)")
    p.add_argument("--archs", required=True, help="architectures, space-separated")
    args = p.parse_args(argv)
    archs = args.archs.split()
    made = write_index(Path(args.out), Path(args.natmods), archs)
    missing = [a for a in archs if natmod_package(a) not in made]
    print(f"mip index in {args.out}: " + ", ".join(made))
    if missing:
        print(f"mip index: no natmods found for {', '.join(missing)} in {args.natmods}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
