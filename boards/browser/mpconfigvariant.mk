# No -s ASYNCIFY (see mpconfigvariant.h); the split heap grows through the wasm memory.
# NODEFS lets boards/browser/micropython-node.mjs show the host's files to scripts run
# under Node; a browser never loads it.
JSFLAGS += -s ALLOW_MEMORY_GROWTH -lnodefs.js
# WebAssembly SIMD: the kernels' 4-lane paths (device/native/include/nm_kernels_wasm.h).
# Chromium and Node have it since 2021 (V8 9.1).
CFLAGS += -msimd128
LDFLAGS += -msimd128
FROZEN_MANIFEST ?= $(VARIANT_DIR)/manifest.py
