# nm_kernels as a user C module for cmake-based ports (esp32, rp2).
add_library(usermod_nm_kernels INTERFACE)

target_sources(usermod_nm_kernels INTERFACE
    ${CMAKE_CURRENT_LIST_DIR}/nm_kernels.c
)

get_filename_component(NM_NATIVE_DIR ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
target_include_directories(usermod_nm_kernels INTERFACE
    ${NM_NATIVE_DIR}
    ${NM_NATIVE_DIR}/include
)

# Bit-identical results with the natmod: never let the compiler fuse mul+add.
target_compile_options(usermod_nm_kernels INTERFACE -ffp-contract=off)

# -O3 in every home (see micropython.mk); the rest of the port keeps its level.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/nm_kernels.c PROPERTIES COMPILE_OPTIONS "-O3")

target_link_libraries(usermod INTERFACE usermod_nm_kernels)
