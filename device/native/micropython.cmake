# USER_C_MODULES=<repo>/device/native/micropython.cmake for cmake-based ports:
# every module in device/native.
include(${CMAKE_CURRENT_LIST_DIR}/nm_kernels/micropython.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/nm_train/micropython.cmake)
