# ulab beside neuromotor's kernels in the esp32 boards' USER_C_MODULES, when ULAB_DIR (the
# environment's or cmake's) points at a micropython-ulab checkout; without it the firmware has
# the kernels alone.
if(DEFINED ENV{ULAB_DIR})
    set(NEUROMOTOR_ULAB_DIR $ENV{ULAB_DIR})
elseif(DEFINED ULAB_DIR)
    set(NEUROMOTOR_ULAB_DIR ${ULAB_DIR})
endif()
if(NEUROMOTOR_ULAB_DIR)
    include(${NEUROMOTOR_ULAB_DIR}/code/micropython.cmake)
endif()
