// The training kernels as a dynamic native module: `import nm_train_natmod`.
// Same functions and errors as the built-in `nm_train` (both include
// trainmod/nm_train_glue.h); built per architecture by device/port/natmods.mk.
#include "py/dynruntime.h"
#include "nm_train_glue.h"

mp_obj_t mpy_init(mp_obj_fun_bc_t *self, size_t n_args, size_t n_kw, mp_obj_t *args) {
    MP_DYNRUNTIME_INIT_ENTRY

    mp_store_global(MP_QSTR_sizes, MP_OBJ_FROM_PTR(&nmt_py_sizes_obj));
    mp_store_global(MP_QSTR_forward, MP_OBJ_FROM_PTR(&nmt_py_forward_obj));
    mp_store_global(MP_QSTR_backward, MP_OBJ_FROM_PTR(&nmt_py_backward_obj));
    mp_store_global(MP_QSTR_pack, MP_OBJ_FROM_PTR(&nmt_py_pack_obj));
    mp_store_global(MP_QSTR_adam, MP_OBJ_FROM_PTR(&nmt_py_adam_obj));
    mp_store_global(MP_QSTR_polyak, MP_OBJ_FROM_PTR(&nmt_py_polyak_obj));
    mp_store_global(MP_QSTR_smooth, MP_OBJ_FROM_PTR(&nmt_py_smooth_obj));
    mp_store_global(MP_QSTR_bellman, MP_OBJ_FROM_PTR(&nmt_py_bellman_obj));
    mp_store_global(MP_QSTR_critic_grad, MP_OBJ_FROM_PTR(&nmt_py_critic_grad_obj));
    mp_store_global(MP_QSTR_fill, MP_OBJ_FROM_PTR(&nmt_py_fill_obj));
    mp_store_global(MP_QSTR_copy, MP_OBJ_FROM_PTR(&nmt_py_copy_obj));
    mp_store_global(MP_QSTR_seed, MP_OBJ_FROM_PTR(&nmt_py_seed_obj));
    mp_store_global(MP_QSTR_uniform, MP_OBJ_FROM_PTR(&nmt_py_uniform_obj));
    mp_store_global(MP_QSTR_normal, MP_OBJ_FROM_PTR(&nmt_py_normal_obj));
    mp_store_global(MP_QSTR_randint, MP_OBJ_FROM_PTR(&nmt_py_randint_obj));
    mp_store_global(MP_QSTR_push, MP_OBJ_FROM_PTR(&nmt_py_push_obj));
    mp_store_global(MP_QSTR_gather, MP_OBJ_FROM_PTR(&nmt_py_gather_obj));
    mp_store_global(MP_QSTR_ADAM_STATE, MP_OBJ_NEW_SMALL_INT(NM_ADAM_STATE));
    mp_store_global(MP_QSTR_VERSION, MP_OBJ_NEW_SMALL_INT(NM_TRAIN_VERSION));
    mp_store_global(MP_QSTR_HOME, MP_OBJ_NEW_QSTR(MP_QSTR_natmod));

    MP_DYNRUNTIME_INIT_EXIT
}
