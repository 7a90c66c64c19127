/* Transitional: the scan API now lives in quiver/scan.h. Remove once nothing includes this. */
#include "quiver/scan.h"
