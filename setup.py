"""The compiled part of neuromotor: the training kernels of device/native/include as
neuromotor.native._nm_host; and, in a wheel, what the package reads of the source tree
(everything else is in pyproject.toml).

A wheel (`python -m build`) carries in neuromotor/data/: the device library
(device/lib), the board descriptors and board files (boards/), the kernel headers
(device/native/include), the PlatformIO project template (device/baremetal/pio_template)
and the prebuilt native modules `make natmods` left in the build cache
($NEUROMOTOR_CACHE/natmods/<arch>/*.mpy), so an installed package deploys, benches and
exports without a checkout. An editable install reads the checkout itself.
"""

import os
import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
TREE = ("device/lib", "device/native/include", "device/baremetal/pio_template", "boards")


class build_py_with_data(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        data = Path(self.build_lib) / "neuromotor" / "data"
        shutil.rmtree(data, ignore_errors=True)
        for rel in TREE:
            shutil.copytree(HERE / rel, data / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        cache = Path(os.environ.get("NEUROMOTOR_CACHE", Path.home() / ".cache" / "neuromotor")) / "natmods"
        for mpy in sorted(cache.glob("*/*.mpy")):
            (data / "natmods" / mpy.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy2(mpy, data / "natmods" / mpy.parent.name / mpy.name)


setup(cmdclass={"build_py": build_py_with_data}, ext_modules=[Extension(
    "neuromotor.native._nm_host",
    sources=["device/native/nm_host/nm_host.c"],
    include_dirs=["device/native/include"],
    depends=sorted(str(p.relative_to(HERE)) for p in (HERE / "device" / "native").glob("*/*.h")),
    # -O2 and no contraction, as every other home of nm_train.h, so that the
    # host's numbers are the unix MicroPython build's bit for bit.
    extra_compile_args=["-O2", "-ffp-contract=off", "-Wall", "-Wextra", "-Wno-unused-parameter"],
    optional=False,
)])
