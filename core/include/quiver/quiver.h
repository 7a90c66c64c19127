/* Quiver: the whole public API. */
#ifndef QUIVER_H
#define QUIVER_H

#include "quiver/base.h"
#include "quiver/memory.h"

#endif
