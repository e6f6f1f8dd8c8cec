/* methodid.c — placeholder, see methodid.h */
#include "ingest/methodid.h"
