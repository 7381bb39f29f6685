# nm_train as a user C module for cmake-based ports (esp32, rp2).
add_library(usermod_nm_train INTERFACE)

target_sources(usermod_nm_train INTERFACE
    ${CMAKE_CURRENT_LIST_DIR}/nm_train.c
)

get_filename_component(NM_NATIVE_DIR ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
target_include_directories(usermod_nm_train INTERFACE
    ${NM_NATIVE_DIR}
    ${NM_NATIVE_DIR}/include
)

# Bit-identical results with the natmod: never let the compiler fuse mul+add.
target_compile_options(usermod_nm_train INTERFACE -ffp-contract=off)

# -O2 in every home (see micropython.mk); the rest of the port keeps its level.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/nm_train.c PROPERTIES COMPILE_OPTIONS "-O2")

target_link_libraries(usermod INTERFACE usermod_nm_train)
