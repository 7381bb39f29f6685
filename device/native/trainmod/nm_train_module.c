// The training kernels as a MicroPython user C module: `import nm_train`.
// Built with USER_C_MODULES=<repo>/device/native (make ports pick up every
// subdirectory with a micropython.mk) or through device/native/micropython.cmake.
#include "py/runtime.h"
#include "nm_train_glue.h"

static const mp_rom_map_elem_t nmt_module_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR_nm_train) },
    { MP_ROM_QSTR(MP_QSTR_sizes), MP_ROM_PTR(&nmt_py_sizes_obj) },
    { MP_ROM_QSTR(MP_QSTR_forward), MP_ROM_PTR(&nmt_py_forward_obj) },
    { MP_ROM_QSTR(MP_QSTR_backward), MP_ROM_PTR(&nmt_py_backward_obj) },
    { MP_ROM_QSTR(MP_QSTR_pack), MP_ROM_PTR(&nmt_py_pack_obj) },
    { MP_ROM_QSTR(MP_QSTR_adam), MP_ROM_PTR(&nmt_py_adam_obj) },
    { MP_ROM_QSTR(MP_QSTR_polyak), MP_ROM_PTR(&nmt_py_polyak_obj) },
    { MP_ROM_QSTR(MP_QSTR_smooth), MP_ROM_PTR(&nmt_py_smooth_obj) },
    { MP_ROM_QSTR(MP_QSTR_bellman), MP_ROM_PTR(&nmt_py_bellman_obj) },
    { MP_ROM_QSTR(MP_QSTR_critic_grad), MP_ROM_PTR(&nmt_py_critic_grad_obj) },
    { MP_ROM_QSTR(MP_QSTR_fill), MP_ROM_PTR(&nmt_py_fill_obj) },
    { MP_ROM_QSTR(MP_QSTR_copy), MP_ROM_PTR(&nmt_py_copy_obj) },
    { MP_ROM_QSTR(MP_QSTR_seed), MP_ROM_PTR(&nmt_py_seed_obj) },
    { MP_ROM_QSTR(MP_QSTR_uniform), MP_ROM_PTR(&nmt_py_uniform_obj) },
    { MP_ROM_QSTR(MP_QSTR_normal), MP_ROM_PTR(&nmt_py_normal_obj) },
    { MP_ROM_QSTR(MP_QSTR_randint), MP_ROM_PTR(&nmt_py_randint_obj) },
    { MP_ROM_QSTR(MP_QSTR_push), MP_ROM_PTR(&nmt_py_push_obj) },
    { MP_ROM_QSTR(MP_QSTR_gather), MP_ROM_PTR(&nmt_py_gather_obj) },
    { MP_ROM_QSTR(MP_QSTR_ADAM_STATE), MP_ROM_INT(NM_ADAM_STATE) },
    { MP_ROM_QSTR(MP_QSTR_VERSION), MP_ROM_INT(NM_TRAIN_VERSION) },
    { MP_ROM_QSTR(MP_QSTR_HOME), MP_ROM_QSTR(MP_QSTR_usermod) },
};
static MP_DEFINE_CONST_DICT(nmt_module_globals, nmt_module_globals_table);

const mp_obj_module_t nm_train_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&nmt_module_globals,
};

MP_REGISTER_MODULE(MP_QSTR_nm_train, nm_train_module);
