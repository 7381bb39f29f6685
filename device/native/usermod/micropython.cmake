# neuromotor kernels as a user C module for cmake-based ports (esp32, rp2).
add_library(usermod_nm_kernels INTERFACE)

target_sources(usermod_nm_kernels INTERFACE
    ${CMAKE_CURRENT_LIST_DIR}/nm_module.c
)

target_include_directories(usermod_nm_kernels INTERFACE
    ${CMAKE_CURRENT_LIST_DIR}/..
)

# Bit-identical results with the natmod: never let the compiler fuse mul+add.
target_compile_options(usermod_nm_kernels INTERFACE -ffp-contract=off)

target_link_libraries(usermod INTERFACE usermod_nm_kernels)
