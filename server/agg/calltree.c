/* calltree.c — placeholder, see calltree.h */
#include "agg/calltree.h"
