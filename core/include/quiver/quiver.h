/* Quiver: the whole public API, one header per part. */
#ifndef QUIVER_H
#define QUIVER_H

#include "quiver/base.h"
#include "quiver/memory.h"
#include "quiver/arrow.h"
#include "quiver/encoding.h"
#include "quiver/format.h"
#include "quiver/scan.h"
#include "quiver/file.h"

#endif
