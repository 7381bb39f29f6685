#include <stddef.h>
#include "shared/runtime/interrupt_char.h"
