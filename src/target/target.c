/*
 * target.c - the target table, the parser, and which tuning records apply
 * to a target.
 *
 * The table (kinds[] below) is the one place a target's name is looked at.
 * Kiln generates C for the CPU it runs on, compiled by the host's C
 * compiler: "llvm" (TVM's CPU target; "cpu" is Kiln's own alias) and "c"
 * (TVM's C source target) are rows with the same code generator and
 * driver.  The GPU kinds, "cuda" and "opencl", are rows with their own
 * resolve hook (limits, -arch); their host code is the CPU's C.
 *
 * CPU targets.  A config is good for a machine class, not for one chip:
 * the x86 templates size their blocks by the vector width.  So a CPU
 * target's class is the ISA level named by -mcpu, with LLVM's x86-64
 * level names (the psABI microarchitecture levels) or the CPU names LLVM
 * knows (cpu lists below):
 *
 *   AVX-512 (16 float lanes)  "llvm -mcpu=x86-64-v4"   records/x86_avx512.json
 *   AVX2 + FMA (8 lanes)      "llvm -mcpu=x86-64-v3"   records/x86_avx2.json
 *   other x86 (4 lanes)       "llvm -mcpu=x86-64-v2"   records/x86_sse.json
 *   other machines            "llvm -mcpu=generic"     records/generic.json
 *
 * Without -mcpu the class is this machine's (its vector width, which
 * $KILN_SIMD_WIDTH overrides), and the canonical string names it, so
 * "llvm" on an AVX-512 machine is "llvm -mcpu=x86-64-v4" - the target
 * string tuning records written here carry.  The code itself is compiled
 * for the machine it is built on (-march=native, compiler.c): -mcpu picks
 * the vector width, the templates' blocks and the records, and a -mtriple
 * for another architecture is refused (Kiln does not cross-compile).
 *
 * The matching rule for a record's target string: its kind must share a
 * key with the target's ("cpu"); for CPU targets, no -device other than
 * cpu, no -mtriple for another architecture, and its -mcpu, when given,
 * must name a CPU of the target's class.  A CPU record without -mcpu
 * ("llvm", as older AutoTVM logs write) applies to every CPU, as it does
 * in TVM; an unknown -mcpu applies to none.  TopHub's "cuda -model=..."
 * records never match a CPU.
 */
#include "target.h"

#include <stdlib.h>
#include <string.h>

#include "../codegen/codegen.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* ===== the attributes ===== */

static const char *const attr_names[TA_COUNT] = {
#define TARGET_ATTR_NAME(e, name, is_int) name,
    TARGET_ATTRS(TARGET_ATTR_NAME)
#undef TARGET_ATTR_NAME
};
static const bool attr_is_int[TA_COUNT] = {
#define TARGET_ATTR_INT(e, name, is_int) is_int,
    TARGET_ATTRS(TARGET_ATTR_INT)
#undef TARGET_ATTR_INT
};

const char *target_attr_name(TargetAttr a) { return a >= 0 && a < TA_COUNT ? attr_names[a] : NULL; }

/* ===== CPU classes ===== */

static const char *const avx512_cpus[] = {
    "x86-64-v4",      "skylake-avx512", "cascadelake",   "cooperlake",     "cannonlake",  "icelake-client",
    "icelake-server", "tigerlake",      "rocketlake",    "sapphirerapids", "emeraldrapids", "graniterapids",
    "znver4",         "znver5",         "knl",           "knm",            NULL};
static const char *const avx2_cpus[] = {"x86-64-v3", "core-avx2", "haswell",   "broadwell", "skylake", "alderlake",
                                        "raptorlake", "meteorlake", "arrowlake", "gracemont", "znver1",  "znver2",
                                        "znver3",     "bdver4",     NULL};
static const char *const sse_cpus[] = {"x86-64",     "x86-64-v2", "core2",     "nehalem",    "westmere", "sandybridge",
                                       "ivybridge",  "corei7",    "corei7-avx", "core-avx-i", "btver2",   "bdver1",
                                       "bdver2",     "bdver3",    "silvermont", "goldmont",  "tremont",  NULL};

/* The level name and float32 lanes of each class. */
static const struct {
  const char *level, *stem;
  int lanes;
} isa_info[] = {
    [ISA_GENERIC] = {"generic", "generic", 4},
    [ISA_X86_SSE] = {"x86-64-v2", "x86_sse", 4},
    [ISA_X86_AVX2] = {"x86-64-v3", "x86_avx2", 8},
    [ISA_X86_AVX512] = {"x86-64-v4", "x86_avx512", 16},
};

#define ISA_UNKNOWN (-1)

static bool in_list(const char *const *list, const char *s, size_t n) {
  for (int i = 0; list[i]; i++)
    if (strlen(list[i]) == n && !strncmp(list[i], s, n)) return true;
  return false;
}

static int isa_of_cpu(const char *s, size_t n) {
  if (in_list(avx512_cpus, s, n)) return ISA_X86_AVX512;
  if (in_list(avx2_cpus, s, n)) return ISA_X86_AVX2;
  if (in_list(sse_cpus, s, n)) return ISA_X86_SSE;
  if (n == 7 && !strncmp(s, "generic", 7)) return ISA_GENERIC;
  return ISA_UNKNOWN;
}

/* ===== CPU descriptions =====
 *
 * What the templates' choices depend on beyond the vector width, one row
 * per core: an explicit target finds its row by -mcpu, the host by cpuid
 * (vendor, display family, a range of display models).  A CPU no row
 * names - an ISA level name such as x86-64-v4, an unlisted model - has no
 * description (t->cpu NULL, every rate 0), and the templates take their
 * conservative choices.  A family holds several cores, so the rows list
 * the models of one core only (Linux's arch/x86/kernel/cpu/amd.c ranges):
 * Zen 5 is family 26 (0x1a) models 0x00-0x2f, 0x40-0x4f and 0x60-0x7f;
 * the family's later models (Zen 6: 0x50-0x5f, 0x80 on) get no row until
 * measured.
 *
 * bf16_dot_rate: VDPBF16PS's multiply-adds per cycle over the FMAs' (one
 * core, independent accumulators: bench_peak --bf16 over bench_peak).
 * Above 1 the bfloat16 templates' fallback issues VDPBF16PS, otherwise it
 * widens the bfloat16 weights and uses FMAs (docs/bf16.md):
 *   Zen 5            1.87  measured (EPYC, family 26 model 2: 444 / 238 GFLOP/s)
 *   Zen 4            2.0   assumed, not measured: VDPBF16PS issued at the
 *                          FMA's instruction rate, as on Zen 5
 *   Emerald Rapids   0.48  measured (Xeon, family 6 model 207: 0.46-0.50)
 *   Sapphire Rapids  0.5   assumed, not measured: Emerald Rapids' core
 *
 * l2, l3: a core's L2 and the L3 the cores of its complex share, in bytes,
 * what the templates' cache rules compare against (target_l2_bytes,
 * target_l3_bytes): Zen 4 and Zen 5 1 MiB and a CCD's 32 MiB (Zen 4c,
 * models 0xa0-0xaf: 16 MiB a core complex), Sapphire and Emerald Rapids
 * 2 MiB; their L3 is the socket's and varies by part (1.875-5 MiB a
 * core), so it is left open (0).
 */
#define MIB(n) ((int64_t)(n) << 20)

static const struct CpuDesc {
  const char *mcpu;
  const char *vendor;         /* cpuid leaf 0's vendor string */
  int family, model_lo, model_hi; /* display family and model range */
  double bf16_dot_rate;
  int64_t l2, l3; /* bytes; 0: open */
} cpu_descs[] = {
    {"znver5", "AuthenticAMD", 0x1a, 0x00, 0x2f, 1.87, MIB(1), MIB(32)},
    {"znver5", "AuthenticAMD", 0x1a, 0x40, 0x4f, 1.87, MIB(1), MIB(32)},
    {"znver5", "AuthenticAMD", 0x1a, 0x60, 0x7f, 1.87, MIB(1), MIB(32)},
    {"znver4", "AuthenticAMD", 0x19, 0x10, 0x1f, 2.0, MIB(1), MIB(32)},
    {"znver4", "AuthenticAMD", 0x19, 0x60, 0x7f, 2.0, MIB(1), MIB(32)},
    {"znver4", "AuthenticAMD", 0x19, 0xa0, 0xaf, 2.0, MIB(1), MIB(16)},
    {"emeraldrapids", "GenuineIntel", 6, 0xcf, 0xcf, 0.48, MIB(2), 0},
    {"sapphirerapids", "GenuineIntel", 6, 0x8f, 0x8f, 0.5, MIB(2), 0},
};
#define NCPU_DESCS ((int)(sizeof cpu_descs / sizeof cpu_descs[0]))

static const struct CpuDesc *cpu_desc_named(const char *mcpu) {
  for (int i = 0; i < NCPU_DESCS; i++)
    if (!strcmp(cpu_descs[i].mcpu, mcpu)) return &cpu_descs[i];
  return NULL;
}

static const struct CpuDesc *cpu_desc_of(const char *vendor, int family, int model) {
  for (int i = 0; i < NCPU_DESCS; i++)
    if (!strcmp(cpu_descs[i].vendor, vendor) && cpu_descs[i].family == family && model >= cpu_descs[i].model_lo &&
        model <= cpu_descs[i].model_hi)
      return &cpu_descs[i];
  return NULL;
}

const char *target_cpu_of(const char *vendor, int family, int model) {
  const struct CpuDesc *c = cpu_desc_of(vendor, family, model);
  return c ? c->mcpu : NULL;
}

/* This machine's row, by cpuid; NULL when none matches or not x86. */
static const struct CpuDesc *host_cpu_desc(void) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  char vendor[13];
  if (!__get_cpuid(0, &a, &b, &c, &d)) return NULL;
  memcpy(vendor, &b, 4), memcpy(vendor + 4, &d, 4), memcpy(vendor + 8, &c, 4), vendor[12] = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return NULL;
  int family = (a >> 8) & 0xf, model = (a >> 4) & 0xf;
  if (family == 0xf) family += (a >> 20) & 0xff;
  if (family == 6 || family >= 0xf) model |= ((a >> 16) & 0xf) << 4;
  return cpu_desc_of(vendor, family, model);
#else
  return NULL;
#endif
}

static void set_cpu_desc(Target *t, const struct CpuDesc *c) {
  t->cpu = c ? c->mcpu : NULL;
  t->bf16_dot_rate = c ? c->bf16_dot_rate : 0;
  t->l2_bytes = c ? c->l2 : 0;
  t->l3_bytes = c ? c->l3 : 0;
}

bool target_bf16_dot_faster(const Target *t) { return t && t->bf16_dot_rate > 1.0; }

/* A CPU the table does not describe: Zen 5's caches, which the cache rules
 * were measured on. */
int64_t target_l2_bytes(const Target *t) { return t && t->l2_bytes > 0 ? t->l2_bytes : MIB(1); }
int64_t target_l3_bytes(const Target *t) { return t && t->l3_bytes > 0 ? t->l3_bytes : MIB(32); }

static bool host_is_x86(void) {
#if defined(__x86_64__) || defined(__i386__)
  return true;
#else
  return false;
#endif
}

/* The vector width of this machine in float32 lanes: 16 with AVX-512, 8
 * with AVX2, else 4; $KILN_SIMD_WIDTH overrides. */
static int host_lanes(void) {
  const char *e = getenv("KILN_SIMD_WIDTH");
  if (e && atoi(e) > 0) return atoi(e);
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 16;
  if (__builtin_cpu_supports("avx2")) return 8;
#endif
  return 4;
}

/* Whether a triple names this machine's architecture family. */
static bool triple_is_x86(const char *triple, size_t n) {
  return (n >= 6 && !strncmp(triple, "x86_64", 6)) || (n >= 4 && triple[0] == 'i' && !strncmp(triple + 2, "86", 2));
}

static const char *host_arch(void) {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__i386__)
  return "i686";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "this machine's";
#endif
}

static bool triple_is_host(const char *triple) {
  size_t n = strcspn(triple, "-");
  if (host_is_x86()) return triple_is_x86(triple, n);
  const char *arch = host_arch();
  return strlen(arch) == n && !strncmp(triple, arch, n);
}

static const char *cpu_names(void) {
  StrBuf sb = {0};
  const char *const *lists[] = {avx512_cpus, avx2_cpus, sse_cpus};
  for (int l = 0; l < 3; l++)
    for (int i = 0; lists[l][i]; i++) sb_printf(&sb, "%s, ", lists[l][i]);
  sb_puts(&sb, "generic");
  char *s = kstrdup(sb.data);
  sb_free(&sb);
  return s;
}

/* A CPU target without -mcpu: this machine's class at a vector width of
 * lanes float32 lanes. */
static void host_class(Target *t, int lanes) {
  t->isa = !host_is_x86() ? ISA_GENERIC : lanes >= 16 ? ISA_X86_AVX512 : lanes >= 8 ? ISA_X86_AVX2 : ISA_X86_SSE;
  t->vector_lanes = lanes;
}

/* llvm, c: the CPU Kiln runs on. */
static int resolve_cpu(Target *t) {
  const char *dev = t->attr[TA_DEVICE];
  if (dev && strcmp(dev, "cpu"))
    return kiln_set_error("target '%s': -device=%s is not supported (Kiln builds for the CPU it runs on: "
                          "leave -device out, or write -device=cpu)",
                          t->str, dev);
  const char *triple = t->attr[TA_MTRIPLE];
  if (triple && !triple_is_host(triple))
    return kiln_set_error("target '%s': -mtriple=%s names another architecture; Kiln compiles with this machine's "
                          "C compiler for %s and does not cross-compile (leave -mtriple out)",
                          t->str, triple, host_arch());
  const char *cpu = t->attr[TA_MCPU];
  if (cpu) {
    int isa = isa_of_cpu(cpu, strlen(cpu));
    if (isa == ISA_UNKNOWN)
      return kiln_set_error("target '%s': unknown -mcpu=%s (Kiln knows: %s)", t->str, cpu, cpu_names());
    if ((isa != ISA_GENERIC) != host_is_x86())
      return kiln_set_error("target '%s': -mcpu=%s is not a CPU of this machine's architecture (%s)", t->str, cpu,
                            host_arch());
    t->isa = (TargetIsa)isa;
    t->vector_lanes = isa_info[isa].lanes;
    set_cpu_desc(t, cpu_desc_named(cpu));
  } else {
    host_class(t, host_lanes());
    set_cpu_desc(t, host_cpu_desc());
  }
  return 0;
}

/* cuda, opencl: kernels for a GPU (src/codegen/codegen_gpu.c), launched by
 * host code for the CPU (the host target's code generator and driver).
 * The limits default to TVM's: 1024 threads per block for CUDA, 256 for
 * OpenCL, 48 KiB of shared memory; CUDA code is compiled for -arch (sm_90
 * when absent, src/codegen/build.c). */
static int resolve_gpu(Target *t) {
  bool cuda = t->kind->device_type == 2 /* kDLCUDA */;
  const char *arch = t->attr[TA_ARCH];
  if (arch) {
    bool ok = !strncmp(arch, "sm_", 3) && arch[3];
    for (const char *q = arch + 3; ok && *q; q++) ok = (*q >= '0' && *q <= '9') || (*q == 'a' && !q[1]);
    if (!ok) return kiln_set_error("target '%s': -arch=%s is not a CUDA architecture like sm_90", t->str, arch);
  }
  t->max_threads_per_block = t->attr_int[TA_MAX_THREADS] ? (int)t->attr_int[TA_MAX_THREADS] : cuda ? 1024 : 256;
  t->max_shared_memory_per_block = t->attr_int[TA_MAX_SHARED] ? (int)t->attr_int[TA_MAX_SHARED] : 48 * 1024;
  t->thread_warp_size = t->attr_int[TA_WARP] ? (int)t->attr_int[TA_WARP] : cuda ? 32 : 1;
  t->vector_lanes = 1; /* a GPU schedule binds threads instead of vectorizing */
  t->isa = ISA_GENERIC;
  return 0;
}

/* ===== the table ===== */

#define CPU_ATTRS (TA_BIT(TA_MCPU) | TA_BIT(TA_MTRIPLE) | TA_BIT(TA_DEVICE) | TA_BIT(TA_KEYS))
#define GPU_ATTRS                                                                                  \
  (TA_BIT(TA_DEVICE) | TA_BIT(TA_KEYS) | TA_BIT(TA_LIBS) | TA_BIT(TA_MODEL) | TA_BIT(TA_MAX_THREADS) | \
   TA_BIT(TA_MAX_SHARED) | TA_BIT(TA_WARP))

static const TargetKind kinds[] = {
    {"llvm", {"cpu", NULL}, "cpu", 1 /* kDLCPU */, CPU_ATTRS, resolve_cpu, codegen_c_units, kiln_compile_c,
     "the host CPU: C with vector extensions, compiled by the host's C compiler"},
    {"c", {NULL}, "cpu", 1 /* kDLCPU */, CPU_ATTRS, resolve_cpu, codegen_c_units, kiln_compile_c,
     "the host CPU, as TVM's C source target"},
    {"cuda", {NULL}, "cuda,gpu", 2 /* kDLCUDA */, GPU_ATTRS | TA_BIT(TA_ARCH), resolve_gpu, codegen_c_units,
     kiln_compile_c, "NVIDIA GPUs: CUDA C compiled to PTX by NVRTC, run by the CUDA driver"},
    {"opencl", {NULL}, "opencl,gpu", 4 /* kDLOpenCL */, GPU_ATTRS, resolve_gpu, codegen_c_units, kiln_compile_c,
     "OpenCL devices (POCL runs them on the CPU): OpenCL C built by the driver at load"},
};
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

int target_kind_count(void) { return NKINDS; }
const TargetKind *target_kind_at(int i) { return i >= 0 && i < NKINDS ? &kinds[i] : NULL; }

const char *target_kind_names(void) {
  StrBuf sb = {0};
  for (int i = 0; i < NKINDS; i++) {
    sb_printf(&sb, "%s%s", i ? ", " : "", kinds[i].name);
    for (int a = 0; kinds[i].aliases[a]; a++) sb_printf(&sb, ", %s", kinds[i].aliases[a]);
  }
  char *s = kstrdup(sb.data);
  sb_free(&sb);
  return s;
}

static const TargetKind *kind_named(const char *s, size_t n) {
  for (int i = 0; i < NKINDS; i++) {
    if (strlen(kinds[i].name) == n && !strncmp(kinds[i].name, s, n)) return &kinds[i];
    for (int a = 0; kinds[i].aliases[a]; a++)
      if (strlen(kinds[i].aliases[a]) == n && !strncmp(kinds[i].aliases[a], s, n)) return &kinds[i];
  }
  return NULL;
}

static const char *accepted(const TargetKind *k) {
  StrBuf sb = {0};
  for (int a = 0; a < TA_COUNT; a++)
    if (k->attrs & TA_BIT(a)) sb_printf(&sb, "%s-%s", sb.len ? ", " : "", attr_names[a]);
  char *s = kstrdup(sb.data ? sb.data : "none");
  sb_free(&sb);
  return s;
}

static void add_key(Target *t, const char *k, size_t n) {
  if (n == 0 || t->nkeys == (int)(sizeof t->keys / sizeof t->keys[0])) return;
  for (int i = 0; i < t->nkeys; i++)
    if (strlen(t->keys[i]) == n && !strncmp(t->keys[i], k, n)) return;
  char *s = kalloc(n + 1);
  memcpy(s, k, n);
  t->keys[t->nkeys++] = s;
}

static void add_keys(Target *t, const char *list) {
  for (const char *p = list; p && *p;) {
    size_t n = strcspn(p, ",");
    add_key(t, p, n);
    p += n + (p[n] == ',');
  }
}

/* The canonical string: the kind's name, the attributes in table order;
 * a CPU target's -mcpu is its class's level when none was given. */
static const char *canonical(const Target *t) {
  StrBuf sb = {0};
  sb_puts(&sb, t->kind->name);
  for (int a = 0; a < TA_COUNT; a++) {
    if (a == TA_MCPU && !t->attr[a] && target_has_key(t, "cpu")) {
      sb_printf(&sb, " -mcpu=%s", isa_info[t->isa].level);
      continue;
    }
    if (attr_is_int[a] && t->attr_int[a]) sb_printf(&sb, " -%s=%lld", attr_names[a], (long long)t->attr_int[a]);
    else if (!attr_is_int[a] && t->attr[a]) sb_printf(&sb, " -%s=%s", attr_names[a], t->attr[a]);
  }
  char *s = kstrdup(sb.data);
  sb_free(&sb);
  return s;
}

static Target *parse_one(const char *str) {
  if (!str) str = "llvm";
  const char *p = str;
  while (*p == ' ' || *p == '\t') p++;
  size_t kl = strcspn(p, " \t");
  const TargetKind *k = kind_named(p, kl);
  if (!k) return kiln_set_error("target '%s' is not supported (supported: %s)", str, target_kind_names()), NULL;
  Target *t = KNEW(Target);
  t->okind = TARGET_OBJ_TAG;
  t->kind = k;
  t->str = kstrdup(str);
  for (p += kl;;) {
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) break;
    size_t wl = strcspn(p, " \t");
    const char *word = kfmt("%.*s", (int)wl, p);
    p += wl;
    const char *eq = strchr(word, '=');
    if (word[0] != '-' || !eq || eq == word + 1)
      return kiln_set_error("target '%s': '%s' is not an attribute (write -name=value; %s takes %s)", str, word,
                            k->name, accepted(k)),
             NULL;
    const char *name = word + 1 + (word[1] == '-');
    size_t nl = (size_t)(eq - name);
    int a = 0;
    while (a < TA_COUNT && !(strlen(attr_names[a]) == nl && !strncmp(attr_names[a], name, nl))) a++;
    if (a == TA_COUNT || !(k->attrs & TA_BIT(a)))
      return kiln_set_error("target '%s': %s takes no attribute -%.*s (it takes %s)", str, k->name, (int)nl, name,
                            accepted(k)),
             NULL;
    if (t->attr[a])
      return kiln_set_error("target '%s': -%s is given twice", str, attr_names[a]), NULL;
    t->attr[a] = kstrdup(eq + 1);
    if (attr_is_int[a]) {
      char *end;
      long long v = strtoll(eq + 1, &end, 10);
      if (!eq[1] || *end || v <= 0)
        return kiln_set_error("target '%s': -%s must be a positive integer, got '%s'", str, attr_names[a], eq + 1),
               NULL;
      t->attr_int[a] = v;
    }
  }
  add_keys(t, t->attr[TA_KEYS]);
  add_keys(t, k->keys);
  if (k->resolve(t)) return NULL;
  t->str = canonical(t);
  t->host = t;
  return t;
}

const Target *target_parse(const char *str, const char *host) {
  Target *t = parse_one(str);
  if (!t) return NULL;
  if (host || !target_has_key(t, "cpu")) {
    Target *h = parse_one(host);
    if (!h) return NULL;
    if (!target_has_key(h, "cpu"))
      return kiln_set_error("target host '%s' is not a CPU target (supported hosts: the CPU kinds)", h->str), NULL;
    t->host = h;
  }
  return t;
}

const Target *target_host(void) {
  const Target *t = target_parse("llvm", NULL);
  KASSERT(t); /* "llvm" without attributes always resolves */
  return t;
}

const Target *target_host_lanes(int lanes) {
  if (lanes <= 0) return target_host();
  Target *t = parse_one("llvm");
  KASSERT(t);
  host_class(t, lanes);
  t->str = canonical(t);
  return t;
}

bool target_is_gpu(const Target *t) { return t && t->kind->device_type != 1 /* kDLCPU */; }

void target_lower_options(const Target *t, LowerOptions *o) {
  LowerOptions zero = {0};
  *o = zero;
  if (!target_is_gpu(t)) return;
  o->device_type = t->kind->device_type;
  o->max_threads_per_block = t->max_threads_per_block;
  o->max_shared_bytes = t->max_shared_memory_per_block;
  o->gpu_arch = t->attr[TA_ARCH];
}

bool target_has_key(const Target *t, const char *k) {
  for (int i = 0; i < t->nkeys; i++)
    if (!strcmp(t->keys[i], k)) return true;
  return false;
}

/* A GPU kind's records are its own ("cuda.json": TopHub's CUDA logs); a
 * CPU kind's are its ISA class's. */
const char *target_records_stem(const Target *t) { return target_is_gpu(t) ? t->kind->name : isa_info[t->isa].stem; }

/* ===== which records apply ===== */

/* The value of option "-name=" in a target string (n = its length). */
static const char *option(const char *t, const char *name, size_t *n) {
  size_t nl = strlen(name);
  for (const char *p = t; (p = strstr(p, name)) != NULL; p += nl) {
    if (p != t && p[-1] != ' ') continue;
    const char *v = p + nl;
    size_t k = 0;
    while (v[k] && v[k] != ' ') k++;
    *n = k;
    return v;
  }
  return NULL;
}

bool target_matches_record(const Target *t, const char *rec) {
  if (!t || !rec) return false;
  while (*rec == ' ') rec++;
  const TargetKind *k = kind_named(rec, strcspn(rec, " \t"));
  if (!k) return false;
  /* a GPU record applies to any GPU target through their shared "gpu" key,
   * as in TVM's ApplyHistoryBest (TopHub's "cuda -model=unknown" records
   * serve opencl too) */
  bool gpu_kind = false;
  for (const char *p = k->keys; p && *p;) {
    size_t n = strcspn(p, ",");
    gpu_kind |= n == 3 && !strncmp(p, "gpu", 3);
    p += n + (p[n] == ',');
  }
  if (!target_has_key(t, "cpu")) return k == t->kind || (gpu_kind && target_has_key(t, "gpu"));
  bool cpu_kind = false;
  for (const char *p = k->keys; p && *p;) {
    size_t n = strcspn(p, ",");
    cpu_kind |= n == 3 && !strncmp(p, "cpu", 3);
    p += n + (p[n] == ',');
  }
  if (!cpu_kind) return false;
  size_t n;
  const char *dev = option(rec, "-device=", &n);
  if (dev && !(n == 3 && !strncmp(dev, "cpu", 3))) return false;
  const char *triple = option(rec, "-mtriple=", &n);
  if (triple && triple_is_x86(triple, n) != (t->isa != ISA_GENERIC)) return false;
  const char *cpu = option(rec, "-mcpu=", &n);
  if (!cpu) return true;
  return isa_of_cpu(cpu, n) == (int)t->isa;
}

KilnModule *target_build(const Target *t, LoweredFunc **funcs, int nfuncs, const CompileOptions *opt) {
  if (!t) t = target_host();
  return kiln_build_funcs_with(t->kind->codegen, t->kind->compile, funcs, nfuncs, 0, NULL, opt);
}
