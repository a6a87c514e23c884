/*
 * target.h - what Kiln compiles for: one Target description, parsed once,
 * passed as `const Target *` through optimization, build, dispatch and
 * tuning.
 *
 * A target string is TVM's: a kind (the first word) and attributes
 *
 *     llvm -mcpu=skylake-avx512          cpu          c -mcpu=x86-64-v3
 *     llvm -mtriple=x86_64-linux-gnu     llvm -keys=cpu -device=cpu
 *
 * The kinds are rows of one table (target.c, TARGET_KINDS below): a row
 * names the kind and its aliases, the attributes it accepts, its keys, the
 * device its code runs on, its code generator and compiler driver, and a
 * resolve hook that fills what the attributes leave open (the vector
 * width, the ISA class records are matched by) and refuses what Kiln cannot
 * build.  Nothing else in Kiln compares a target's name: code asks the
 * Target (t->kind, t->vector_lanes, target_has_key) instead.
 *
 * Invariants of a parsed Target:
 *   - t->kind is a row of the table; t->str is the canonical string (the
 *     kind's own name, the attributes in table order), what tuning records
 *     written for it carry;
 *   - every attribute the row does not accept was refused at parse time
 *     with a message naming it and the ones the kind takes;
 *   - t->vector_lanes > 0 (float32 lanes of the SIMD unit the templates
 *     size their blocks by), t->host is never NULL (a CPU target is its
 *     own host).
 *
 * GPU kinds (cuda, opencl) add rows with their own resolve hook; the
 * fields max_threads_per_block, max_shared_memory_per_block and
 * thread_warp_size are theirs (0 on CPU targets).
 *
 * This header stands on base.h alone, so any layer may read a Target;
 * target.c links the code generator hooks (src/codegen), as TVM's
 * src/target holds its code generators.
 */
#ifndef KILN_TARGET_H
#define KILN_TARGET_H

#include <stdbool.h>

#include "../base/base.h"

#include "kiln/runtime.h"

struct LoweredFunc;
struct KBlob;
struct CompileOptions;
struct LowerOptions;

/* The tag a Target starts with, so the C API can check handles
 * (api.h: KOBJ_TARGET); outside ir.h's KObjKind range. */
#define TARGET_OBJ_TAG 0x4b42

/* The attributes a target string may carry: X(enum, name, is_int).  A
 * kind row lists the ones it accepts. */
#define TARGET_ATTRS(X)                                                        \
  X(TA_MCPU, "mcpu", false)                                                    \
  X(TA_MTRIPLE, "mtriple", false)                                              \
  X(TA_MATTR, "mattr", false)                                                  \
  X(TA_DEVICE, "device", false)                                                \
  X(TA_KEYS, "keys", false)                                                    \
  X(TA_LIBS, "libs", false)                                                    \
  X(TA_MODEL, "model", false)                                                  \
  X(TA_ARCH, "arch", false)                                                    \
  X(TA_MAX_THREADS, "max_threads_per_block", true)                             \
  X(TA_MAX_SHARED, "max_shared_memory_per_block", true)                        \
  X(TA_WARP, "thread_warp_size", true)

typedef enum TargetAttr {
#define TARGET_ATTR_ENUM(e, name, is_int) e,
  TARGET_ATTRS(TARGET_ATTR_ENUM)
#undef TARGET_ATTR_ENUM
  TA_COUNT
} TargetAttr;
#define TA_BIT(a) (1u << (a))

/* The class of CPU tuning records are kept for (the shipped records file
 * is named by it): a config is good for a class, not for one chip. */
typedef enum TargetIsa { ISA_GENERIC, ISA_X86_SSE, ISA_X86_AVX2, ISA_X86_AVX512 } TargetIsa;

typedef struct Target Target;

/* One row of the target table. */
typedef struct TargetKind {
  const char *name;        /* "llvm": the first word of the canonical string */
  const char *aliases[3];  /* other first words naming it ("cpu"), NULL-ended */
  const char *keys;        /* default keys, comma-separated: "cpu" */
  int device_type;         /* DLDeviceType its code runs on (kDLCPU = 1) */
  unsigned attrs;          /* accepted attributes: TA_BIT(TA_MCPU) | ... */
  /* Fill what the attributes leave open (vector width, ISA class, GPU
   * limits) and refuse what Kiln cannot build: 0, or -1 + error. */
  int (*resolve)(Target *t);
  /* The code generator: lowered functions -> nunits sources (heap). */
  char **(*codegen)(struct LoweredFunc **funcs, int nfuncs, int nblobs, const struct KBlob *blobs, int nunits);
  /* The compiler driver: the sources -> a shared object at so_path. */
  int (*compile)(int nunits, const char **sources, int nblobs, const struct KBlob *blobs, const char *so_path,
                 const struct CompileOptions *opt);
  const char *help;        /* one line for listings */
} TargetKind;

struct Target {
  int okind;               /* TARGET_OBJ_TAG */
  const TargetKind *kind;
  const char *str;         /* canonical: "llvm -mcpu=x86-64-v4" */
  const char *attr[TA_COUNT]; /* string attributes as given (NULL: absent) */
  int64_t attr_int[TA_COUNT]; /* integer attributes (0: absent) */
  int nkeys;
  const char *keys[8];     /* "cpu", ...: what templates and records match by */
  int vector_lanes;        /* float32 lanes of the vector unit */
  TargetIsa isa;           /* CPU kinds: the records class */
  /* CPU kinds: the row of the CPU table (target.c) describing this CPU -
   * by -mcpu for an explicit target, by cpuid for the host - or NULL for a
   * CPU the table does not know (an ISA level name, another vendor). */
  const char *cpu;
  /* VDPBF16PS's multiply-adds per cycle over the FMAs' on one core
   * (bench_peak --bf16 / bench_peak); 0 where unknown or absent. */
  double bf16_dot_rate;
  /* CPU kinds: a core's L2 and the L3 its core complex shares, in bytes,
   * from the row; 0 where unknown (read them with target_l2_bytes /
   * target_l3_bytes). */
  int64_t l2_bytes, l3_bytes;
  int max_threads_per_block, max_shared_memory_per_block, thread_warp_size; /* GPU kinds */
  const Target *host;      /* where the host code runs (itself for CPU kinds) */
};

/* Parse a target string and an optional host target string (NULL: the
 * target itself when it is a CPU target, else the default host).  The
 * Target lives in the current arena.  NULL + error: an unknown kind (the
 * message lists the kinds Kiln can build for), an attribute the kind does
 * not take, a -mcpu Kiln does not know, a -mtriple for another machine. */
const Target *target_parse(const char *str, const char *host);
/* The CPU this process runs on ("llvm" resolved: -mcpu the machine's
 * x86-64 level), parsed afresh each call ($KILN_SIMD_WIDTH moves it). */
const Target *target_host(void);
/* The same CPU target at a vector width the caller picks, as
 * $KILN_SIMD_WIDTH=lanes would (the C export's --isa): the class and the
 * canonical -mcpu follow the width.  lanes <= 0: target_host(). */
const Target *target_host_lanes(int lanes);
/* Whether t's code runs on a GPU (its row's device type is not the CPU). */
bool target_is_gpu(const Target *t);
/* The lowering options t asks for: zeros for a CPU kind; for a GPU kind its
 * device type, limits (threads, shared memory per block) and -arch. */
void target_lower_options(const Target *t, struct LowerOptions *o);
/* Whether t's CPU does more multiply-adds per cycle with VDPBF16PS than
 * with FMAs (its description's bf16_dot_rate above 1): the bfloat16
 * templates' fallback form (docs/bf16.md).  False for an unknown CPU. */
bool target_bf16_dot_faster(const Target *t);
/* t's L2 (a core's) and L3 (shared by its core complex) in bytes, what
 * cache rules compare against: its CPU row's, or 1 MiB / 32 MiB (Zen 5's,
 * where the rules were measured) for a CPU the table does not describe or
 * a size its row leaves open. */
int64_t target_l2_bytes(const Target *t);
int64_t target_l3_bytes(const Target *t);
/* The CPU table's row for cpuid's vendor, display family and model (what
 * the host's t->cpu is found by): its -mcpu name, or NULL. */
const char *target_cpu_of(const char *vendor, int family, int model);
/* Whether t has key k ("cpu", "gpu"). */
bool target_has_key(const Target *t, const char *k);
/* An attribute's name without the dash: "mcpu". */
const char *target_attr_name(TargetAttr a);
/* The table, for listings. */
int target_kind_count(void);
const TargetKind *target_kind_at(int i);
/* "llvm, cpu, c": every name a target string may start with (arena). */
const char *target_kind_names(void);
/* The stem of the shipped records file for t: "x86_avx512", "x86_avx2",
 * "x86_sse", "generic"; a GPU kind's name ("cuda", "opencl"). */
const char *target_records_stem(const Target *t);
/* Whether a tuning record written for target string `rec` applies to t
 * (the matching rule in target.c). */
bool target_matches_record(const Target *t, const char *rec);
/* Generate, compile and load lowered functions with t's code generator
 * and compiler driver (t NULL: the host); opt may be NULL. */
KilnModule *target_build(const Target *t, struct LoweredFunc **funcs, int nfuncs, const struct CompileOptions *opt);

#endif
