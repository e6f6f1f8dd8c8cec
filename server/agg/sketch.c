/* sketch.c — placeholder, see sketch.h */
#include "agg/sketch.h"
