/* batch.c — placeholder, see batch.h */
#include "ingest/batch.h"
