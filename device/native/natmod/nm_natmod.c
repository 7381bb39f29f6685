// The kernels as a dynamic native module: `import nm_kernels_natmod`.
// Same functions and errors as the built-in `nm_kernels` (both include
// nm_glue.h); built per architecture by device/port/natmods.mk.
#include "py/dynruntime.h"
#include "nm_glue.h"

// Types in a natmod live in RAM and get their slots at import.
mp_obj_full_type_t nm_forward_type;

mp_obj_t mpy_init(mp_obj_fun_bc_t *self, size_t n_args, size_t n_kw, mp_obj_t *args) {
    MP_DYNRUNTIME_INIT_ENTRY

    nm_forward_type.base.type = (void *)&mp_type_type;
    nm_forward_type.flags = MP_TYPE_FLAG_NONE;
    nm_forward_type.name = MP_QSTR_Forward;
    MP_OBJ_TYPE_SET_SLOT(&nm_forward_type, make_new, nm_forward_make_new, 0);
    MP_OBJ_TYPE_SET_SLOT(&nm_forward_type, call, nm_forward_call, 1);
    mp_store_global(MP_QSTR_Forward, MP_OBJ_FROM_PTR(&nm_forward_type));

    mp_store_global(MP_QSTR_dense, MP_OBJ_FROM_PTR(&nm_py_dense_obj));
    mp_store_global(MP_QSTR_dense_batch, MP_OBJ_FROM_PTR(&nm_py_dense_batch_obj));
    mp_store_global(MP_QSTR_mlp, MP_OBJ_FROM_PTR(&nm_py_mlp_obj));
    mp_store_global(MP_QSTR_pack, MP_OBJ_FROM_PTR(&nm_py_pack_obj));
    mp_store_global(MP_QSTR_layer_size, MP_OBJ_FROM_PTR(&nm_py_layer_size_obj));
    mp_store_global(MP_QSTR_net_size, MP_OBJ_FROM_PTR(&nm_py_net_size_obj));
    mp_store_global(MP_QSTR_scratch_size, MP_OBJ_FROM_PTR(&nm_py_scratch_size_obj));
    mp_store_global(MP_QSTR_crc32, MP_OBJ_FROM_PTR(&nm_py_crc32_obj));
    mp_store_global(MP_QSTR_isa, MP_OBJ_FROM_PTR(&nm_py_isa_obj));
    mp_store_global(MP_QSTR_IDENTITY, MP_OBJ_NEW_SMALL_INT(NM_ACT_IDENTITY));
    mp_store_global(MP_QSTR_RELU, MP_OBJ_NEW_SMALL_INT(NM_ACT_RELU));
    mp_store_global(MP_QSTR_TANH, MP_OBJ_NEW_SMALL_INT(NM_ACT_TANH));
    mp_store_global(MP_QSTR_BLOCK, MP_OBJ_NEW_SMALL_INT(NM_BLOCK));
    mp_store_global(MP_QSTR_VERSION, MP_OBJ_NEW_SMALL_INT(NM_KERNELS_VERSION));
    mp_store_global(MP_QSTR_HOME, MP_OBJ_NEW_QSTR(MP_QSTR_natmod));

    MP_DYNRUNTIME_INIT_EXIT
}
