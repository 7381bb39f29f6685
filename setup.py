"""The compiled part of neuromotor: the training kernels of device/native/include as
neuromotor._nm_host (everything else is in pyproject.toml)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "neuromotor._nm_host",
    sources=["device/native/nm_host/nm_host.c"],
    include_dirs=["device/native/include"],
    depends=["device/native/include/" + h for h in (
        "nm_kernels.h", "nm_train.h", "nm_math.h", "nm_rng.h", "nm_gemm.h", "nm_mlp_train.h", "nm_td3_steps.h")]
    + ["device/native/nm_host/nm_pendulum.h"],
    # -O2 and no contraction, as every other home of nm_train.h, so that the
    # host's numbers are the unix MicroPython build's bit for bit.
    extra_compile_args=["-O2", "-ffp-contract=off", "-Wall", "-Wextra", "-Wno-unused-parameter"],
    optional=False,
)])
