# USER_C_MODULES=<repo>/device/native/micropython.cmake for cmake-based ports.
include(${CMAKE_CURRENT_LIST_DIR}/usermod/micropython.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/trainmod/micropython.cmake)
