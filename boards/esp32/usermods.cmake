# USER_C_MODULES for cmake-based ports (esp32): neuromotor's kernels, plus ulab when
# ULAB_DIR points at a micropython-ulab checkout:
#   make -C ports/esp32 BOARD_DIR=<repo>/boards/esp32 \
#        USER_C_MODULES=<repo>/boards/esp32/usermods.cmake [ULAB_DIR=<micropython-ulab>]
include(${CMAKE_CURRENT_LIST_DIR}/../../device/native/micropython.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/../esp32-common/with_ulab_dir.cmake)
