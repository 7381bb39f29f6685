# nm_kernels as a user C module for cmake-based ports (esp32, rp2), -O3 in every home (see micropython.mk).
include(${CMAKE_CURRENT_LIST_DIR}/../nm_usermod.cmake)
nm_user_module(nm_kernels COMPILE_OPTIONS "-O3")
