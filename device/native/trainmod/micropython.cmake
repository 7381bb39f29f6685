# neuromotor training kernels (nm_train) as a user C module for cmake-based ports.
add_library(usermod_nm_train INTERFACE)
target_sources(usermod_nm_train INTERFACE ${CMAKE_CURRENT_LIST_DIR}/nm_train_module.c)
target_include_directories(usermod_nm_train INTERFACE ${CMAKE_CURRENT_LIST_DIR}/.. ${CMAKE_CURRENT_LIST_DIR}/../include ${CMAKE_CURRENT_LIST_DIR})
target_compile_options(usermod_nm_train INTERFACE -ffp-contract=off)
target_link_libraries(usermod INTERFACE usermod_nm_train)
