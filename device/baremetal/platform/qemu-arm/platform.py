"""PlatformIO platform for the emulated MPS2 boards: the system toolchain, nothing to install."""

from platformio.public import PlatformBase


class QemuarmPlatform(PlatformBase):
    pass
