# neuromotor's esp32 boards: their USER_C_MODULES take a user's micropython-ulab checkout as well
# when ULAB_DIR (the environment's or cmake's) names one; without it the firmware has neuromotor's
# kernels alone. Nothing of ulab is here: only the path to the user's copy.
if(DEFINED ENV{ULAB_DIR})
    set(NEUROMOTOR_ULAB_DIR $ENV{ULAB_DIR})
elseif(DEFINED ULAB_DIR)
    set(NEUROMOTOR_ULAB_DIR ${ULAB_DIR})
endif()
if(NEUROMOTOR_ULAB_DIR)
    include(${NEUROMOTOR_ULAB_DIR}/code/micropython.cmake)
endif()
