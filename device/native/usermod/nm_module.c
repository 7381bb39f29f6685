// The kernels as a MicroPython user C module: `import nm_kernels`.
// Build with USER_C_MODULES=<repo>/device/native (make) or
// USER_C_MODULES=<repo>/device/native/micropython.cmake (cmake ports).
#include "py/runtime.h"
#include "../nm_glue.h"

static MP_DEFINE_CONST_OBJ_TYPE(
    nm_forward_type,
    MP_QSTR_Forward,
    MP_TYPE_FLAG_NONE,
    make_new, nm_forward_make_new,
    call, nm_forward_call
    );

static const mp_rom_map_elem_t nm_module_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR_nm_kernels) },
    { MP_ROM_QSTR(MP_QSTR_dense), MP_ROM_PTR(&nm_py_dense_obj) },
    { MP_ROM_QSTR(MP_QSTR_dense_batch), MP_ROM_PTR(&nm_py_dense_batch_obj) },
    { MP_ROM_QSTR(MP_QSTR_mlp), MP_ROM_PTR(&nm_py_mlp_obj) },
    { MP_ROM_QSTR(MP_QSTR_Forward), MP_ROM_PTR(&nm_forward_type) },
    { MP_ROM_QSTR(MP_QSTR_pack), MP_ROM_PTR(&nm_py_pack_obj) },
    { MP_ROM_QSTR(MP_QSTR_layer_size), MP_ROM_PTR(&nm_py_layer_size_obj) },
    { MP_ROM_QSTR(MP_QSTR_net_size), MP_ROM_PTR(&nm_py_net_size_obj) },
    { MP_ROM_QSTR(MP_QSTR_scratch_size), MP_ROM_PTR(&nm_py_scratch_size_obj) },
    { MP_ROM_QSTR(MP_QSTR_crc32), MP_ROM_PTR(&nm_py_crc32_obj) },
    { MP_ROM_QSTR(MP_QSTR_isa), MP_ROM_PTR(&nm_py_isa_obj) },
    { MP_ROM_QSTR(MP_QSTR_IDENTITY), MP_ROM_INT(NM_ACT_IDENTITY) },
    { MP_ROM_QSTR(MP_QSTR_RELU), MP_ROM_INT(NM_ACT_RELU) },
    { MP_ROM_QSTR(MP_QSTR_TANH), MP_ROM_INT(NM_ACT_TANH) },
    { MP_ROM_QSTR(MP_QSTR_BLOCK), MP_ROM_INT(NM_BLOCK) },
    { MP_ROM_QSTR(MP_QSTR_VERSION), MP_ROM_INT(NM_KERNELS_VERSION) },
    { MP_ROM_QSTR(MP_QSTR_HOME), MP_ROM_QSTR(MP_QSTR_usermod) },
};
static MP_DEFINE_CONST_DICT(nm_module_globals, nm_module_globals_table);

const mp_obj_module_t nm_kernels_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&nm_module_globals,
};

MP_REGISTER_MODULE(MP_QSTR_nm_kernels, nm_kernels_module);
