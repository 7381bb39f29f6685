// nm_heap: the MicroPython GC heap's use and high-water mark, for firmware built
// from a tree with device/port/patches/gc-peak-tracking.patch and
// MICROPY_GC_PEAK_TRACKING set (the emulated boards set it in
// boards/qemu-common/qemuboard_config.h). gc.mem_alloc() says what the heap holds
// now; only a count kept by the allocator itself sees how high it went between
// two calls.
//
//   nm_heap.used()        bytes in allocated blocks now (== gc.mem_alloc())
//   nm_heap.peak()        most bytes in allocated blocks at any moment since the
//                         last (soft) reset or reset_peak(); garbage counts until
//                         a collection frees it
//   nm_heap.reset_peak()  start a new high-water mark at used(); returns it
//
// A natmod (.mpy) cannot reach the allocator's counters: on firmware without this
// module, `import nm_heap` fails and the peak is not available.

#include "py/runtime.h"
#include "py/gc.h"

#if MICROPY_GC_PEAK_TRACKING

static mp_obj_t nm_heap_used(void) {
    return mp_obj_new_int_from_uint(gc_used_bytes());
}
static MP_DEFINE_CONST_FUN_OBJ_0(nm_heap_used_obj, nm_heap_used);

static mp_obj_t nm_heap_peak(void) {
    return mp_obj_new_int_from_uint(gc_peak_bytes());
}
static MP_DEFINE_CONST_FUN_OBJ_0(nm_heap_peak_obj, nm_heap_peak);

static mp_obj_t nm_heap_reset_peak(void) {
    gc_peak_reset();
    return mp_obj_new_int_from_uint(gc_peak_bytes());
}
static MP_DEFINE_CONST_FUN_OBJ_0(nm_heap_reset_peak_obj, nm_heap_reset_peak);

static const mp_rom_map_elem_t nm_heap_module_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR_nm_heap) },
    { MP_ROM_QSTR(MP_QSTR_used), MP_ROM_PTR(&nm_heap_used_obj) },
    { MP_ROM_QSTR(MP_QSTR_peak), MP_ROM_PTR(&nm_heap_peak_obj) },
    { MP_ROM_QSTR(MP_QSTR_reset_peak), MP_ROM_PTR(&nm_heap_reset_peak_obj) },
};
static MP_DEFINE_CONST_DICT(nm_heap_module_globals, nm_heap_module_globals_table);

const mp_obj_module_t nm_heap_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&nm_heap_module_globals,
};

MP_REGISTER_MODULE(MP_QSTR_nm_heap, nm_heap_module);

#endif
