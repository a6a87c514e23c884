/*
 * gpu_target.c - what lowering needs from a GPU target: its device type,
 * its limits (threads and shared memory per block) and, for CUDA, the
 * architecture NVRTC compiles for.  The rows themselves (cuda, opencl)
 * are in src/target/target.c.
 */
#include "codegen.h"

#include <string.h>

#include "../target/target.h"

bool kiln_target_is_gpu(const Target *t) { return t && t->kind->device_type != kDLCPU; }

void kiln_target_lower_options(const Target *t, LowerOptions *o) {
  LowerOptions zero = {0};
  *o = zero;
  if (!kiln_target_is_gpu(t)) return;
  o->device_type = t->kind->device_type;
  o->max_threads_per_block = t->max_threads_per_block;
  o->max_shared_bytes = t->max_shared_memory_per_block;
  o->gpu_arch = t->attr[TA_ARCH];
}
