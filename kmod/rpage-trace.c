// SPDX-License-Identifier: GPL-2.0
/*
 * rpage: the tracepoints of rpage-trace.h are instantiated here.
 */
#include "rpage-pri.h"

#define CREATE_TRACE_POINTS
#include "rpage-trace.h"
