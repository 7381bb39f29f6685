# Frozen into neuromotor's unix build: the device library (device/lib/*.py)
# and asyncio from MicroPython's own tree (needs no micropython-lib).
include("$(MPY_DIR)/extmod/asyncio")
freeze("../lib")
