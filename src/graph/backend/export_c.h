/*
 * export_c.h - what the two halves of the standalone C export share.
 *
 *   export_c.c        the model as C: kernels, the memory plan as offsets
 *                     into the caller's workspace, the straight-line
 *                     executor NAME_run, the header NAME.h
 *   export_c_files.c  everything around it: the weights (C arrays in
 *                     chunks, or NAME.bin), the freestanding math file,
 *                     the Makefile, a CMake snippet, the example main.c
 *                     and metadata.json
 *   export_c_math.c   the freestanding math file kiln_math.h (Kiln's own
 *                     expf, logf, ... with measured error bounds)
 */
#ifndef KILN_GRAPH_EXPORT_C_H
#define KILN_GRAPH_EXPORT_C_H

#include "build.h"

#define CEXPORT_FORMAT "kiln-c-export-1" /* metadata.json "format"; NAME_VERSION */
#define CEXPORT_ALIGN 64                 /* workspace, weights and every offset in them */
#define CEXPORT_BIN_HEADER 64            /* NAME.bin: magic, sizes, checksum, then the weights */

/* One model tensor at the C boundary: an input, an output or a weight. */
typedef struct CTensor {
  const char *name;  /* the model's name */
  const char *cname; /* its C identifier (NAME_run's parameter, a weight's symbol) */
  TType type;
  int64_t bytes;
  int64_t offset;    /* weights: offset in the weights blob */
} CTensor;

/* The export as the file writers see it. */
typedef struct CExport {
  const CExportOptions *opt;
  const char *dir, *prefix, *upper; /* upper: the prefix in capitals, for macros */
  int nin, nout, nweights;
  CTensor *in, *out, *weights;
  GNode **weight_nodes;
  int64_t weights_bytes;            /* the blob: every weight at a 64-byte aligned offset */
  int64_t workspace_bytes;
  int64_t graph_plan_bytes;         /* the graph executor's plan of the same kernels' outputs */
  int64_t naive_bytes;              /* one buffer per intermediate */
  int nkernels;
  const char *isa_name, *threads_name;
  const char *isa_flags;             /* the compiler flags of its instruction set */
  uint64_t checksum;                /* FNV-1a 64 of the C sources and the weights */
  StrBuf meta_kernels;              /* metadata.json "kernels" entries */
  StrBuf meta_plan;                 /* metadata.json "memory_plan" entries */
} CExport;

/* ===== export_c_files.c ===== */

/* FNV-1a 64, continued from h (start with CEXPORT_FNV_INIT). */
#define CEXPORT_FNV_INIT 0xcbf29ce484222325ull
uint64_t cexport_fnv(uint64_t h, const void *data, size_t n);
/* A weight's bytes (little-endian, as the graph holds them). */
const void *cexport_weight_data(const CExport *x, int i);
/* The C type of a dtype ("float", "int64_t", ...). */
const char *cexport_ctype(DType t);
/* The compiler flags of a CExportIsa ("-march=native", "-mavx2 -mfma", ...). */
const char *cexport_isa_flags(int isa);
/* NumPy's descr of a dtype ("<f4", "|b1", ...). */
const char *cexport_npy_descr(DType t);
/* Write dir/NAME_weightsK.c (embedded) or dir/NAME.bin (separate); files
 * (const char *) gets the C sources written.  Adds to the checksum. */
int cexport_write_weights(CExport *x, AVec *files);
/* Makefile, CMakeLists.txt, main.c and metadata.json. */
int cexport_write_build_files(CExport *x, AVec *csources);

/* ===== export_c_math.c ===== */

/* The freestanding math file's text (kiln_expf, ...), for NAME.c to include. */
const char *cexport_math_source(void);

#endif
