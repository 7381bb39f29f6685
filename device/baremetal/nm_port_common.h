/* What every port of xtensa/nm_policy_run.c declares besides its name and its clock: the
 * console and the exit its port.c gives, and the stringising the program's output uses. */
#ifndef NM_PORT_COMMON_H
#define NM_PORT_COMMON_H
#include <stddef.h>
#include <stdint.h>

#define NM_STR_(x) #x
#define NM_STR(x) NM_STR_(x)

void nm_port_write(const char *s, size_t n);
__attribute__((noreturn)) void nm_port_exit(int code);
#endif
