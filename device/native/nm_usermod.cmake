# nm_user_module(<module> COMPILE_OPTIONS "<-O level>"), called from device/native/<module>/
# micropython.cmake: the module as a user C module for cmake-based ports (esp32, rp2).
include_guard(GLOBAL)

function(nm_user_module name)
    cmake_parse_arguments(NM "" "COMPILE_OPTIONS" "" ${ARGN})
    set(src ${CMAKE_CURRENT_LIST_DIR}/${name}.c)
    add_library(usermod_${name} INTERFACE)
    target_sources(usermod_${name} INTERFACE ${src})

    get_filename_component(NM_NATIVE_DIR ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
    target_include_directories(usermod_${name} INTERFACE
        ${NM_NATIVE_DIR}
        ${NM_NATIVE_DIR}/include
    )

    # Bit-identical results with the natmod: never let the compiler fuse mul+add.
    target_compile_options(usermod_${name} INTERFACE -ffp-contract=off)

    # The module's level in every home (see its micropython.mk); the rest of the port keeps its own.
    set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${NM_COMPILE_OPTIONS}")

    target_link_libraries(usermod INTERFACE usermod_${name})
endfunction()
