# No -s ASYNCIFY (see mpconfigvariant.h); the split heap grows through the wasm memory.
# NODEFS lets boards/browser/micropython-node.mjs show the host's files to scripts run
# under Node; a browser never loads it.
JSFLAGS += -s ALLOW_MEMORY_GROWTH -lnodefs.js
FROZEN_MANIFEST ?= $(VARIANT_DIR)/manifest.py
