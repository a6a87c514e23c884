/*
 * dispatch.c - which config a task gets at compile time (TVM's
 * ApplyHistoryBest): the fastest error-free record of the workload among
 * the records the user gave, else among the records Kiln ships for this
 * machine, else the template's fallback with one warning per workload.
 *
 * (The record files themselves are read by src/autotune; until tuning
 * records are wired in, every task takes its fallback.)
 */
#include <stdlib.h>
#include <string.h>

#include "../autotune/autotune.h"
#include "op_strategy.h"

int graph_dispatch_query(Workload *wl, ConfigEntity **cfg, const char **source) {
  (void)wl;
  *cfg = NULL;
  *source = NULL;
  return 0;
}

void graph_dispatch_note_fallback(Workload *wl) { (void)wl; }
