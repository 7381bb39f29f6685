// neuromotor emulated boards: port part of the `time` module.
// Included by extmod/modtime.c through MICROPY_PY_TIME_INCLUDEFILE (set in
// qemuboard_config.h); never compiled on its own.
//
// There is no RTC: time.time() counts seconds since reset (of guest time, which
// under -icount shift=0 is instructions / 1e9), time.time_ns() nanoseconds.

static mp_obj_t mp_time_time_get(void) {
    return mp_obj_new_int_from_ull(mp_hal_time_ns() / 1000000000ull);
}
