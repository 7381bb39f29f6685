// The browser board: MicroPython's webassembly port with neuromotor's kernels and
// device library built in (device/port/webassembly.mk builds it as a port variant).
//
// The stock variant finds heap pointers held in wasm locals by unwinding the C stack
// through ASYNCIFY (emscripten_scan_registers). Under Debian's emscripten 3.1.6 every
// collection then aborts ("mp_js_do_exec is running asynchronously"), and ASYNCIFY makes
// every call slower. Here the GC only collects when control is back in JavaScript, where
// no C frame holds a heap pointer; in between, a full heap grows by a new region. The
// trainer is called in chunks of steps, so collections happen between chunks.
#define MICROPY_GC_SPLIT_HEAP           (1)
#define MICROPY_GC_SPLIT_HEAP_AUTO      (1)
