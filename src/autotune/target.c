/*
 * target.c - Kiln's target string and which records apply to this machine.
 *
 * A config is good for a machine class, not for one chip: the x86
 * templates size their blocks by the SIMD width.  So Kiln names its CPU
 * target by the ISA level it generates code for, with LLVM's x86-64 level
 * names (the psABI microarchitecture levels):
 *
 *   AVX-512 (16 float lanes)  "llvm -mcpu=x86-64-v4"   records/x86_avx512.json
 *   AVX2 + FMA (8 lanes)      "llvm -mcpu=x86-64-v3"   records/x86_avx2.json
 *   other x86 (4 lanes)       "llvm -mcpu=x86-64-v2"   records/x86_sse.json
 *   other machines            "llvm -mcpu=generic"     records/generic.json
 *
 * (KILN_SIMD_WIDTH, which the templates obey, moves the class too.)
 *
 * The matching rule for a record's target string: its kind (first word)
 * must be a CPU target - "llvm", "c" or "cpu" - with no -device other than
 * cpu and no -mtriple for another architecture; and its -mcpu, when given,
 * must name a CPU of this machine's class: an x86-64 level, or a CPU name
 * LLVM knows (skylake-avx512, cascadelake, icelake-server, znver4, ... are
 * AVX-512; haswell, skylake, core-avx2, znver1-3, ... are AVX2).  A CPU
 * record without -mcpu ("llvm", as older AutoTVM logs write) applies to
 * every CPU, as it does in TVM; an unknown -mcpu applies to none.  TopHub's
 * "cuda -model=..." records never match a CPU.
 */
#include "autotune.h"

#include <string.h>

typedef enum IsaClass { ISA_GENERIC, ISA_X86_SSE, ISA_X86_AVX2, ISA_X86_AVX512, ISA_UNKNOWN } IsaClass;

static IsaClass machine_isa(void) {
#if defined(__x86_64__) || defined(__i386__)
  int lanes = autotune_simd_lanes();
  return lanes >= 16 ? ISA_X86_AVX512 : lanes >= 8 ? ISA_X86_AVX2 : ISA_X86_SSE;
#else
  return ISA_GENERIC;
#endif
}

const char *autotune_isa_name(void) {
  switch (machine_isa()) {
  case ISA_X86_AVX512:
    return "x86_avx512";
  case ISA_X86_AVX2:
    return "x86_avx2";
  case ISA_X86_SSE:
    return "x86_sse";
  case ISA_GENERIC:
  case ISA_UNKNOWN:
    break;
  }
  return "generic";
}

const char *autotune_target(void) {
  switch (machine_isa()) {
  case ISA_X86_AVX512:
    return "llvm -mcpu=x86-64-v4";
  case ISA_X86_AVX2:
    return "llvm -mcpu=x86-64-v3";
  case ISA_X86_SSE:
    return "llvm -mcpu=x86-64-v2";
  case ISA_GENERIC:
  case ISA_UNKNOWN:
    break;
  }
  return "llvm -mcpu=generic";
}

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

static bool in_list(const char *const *list, const char *s, size_t n) {
  for (int i = 0; list[i]; i++)
    if (strlen(list[i]) == n && !strncmp(list[i], s, n)) return true;
  return false;
}

static IsaClass isa_of_cpu(const char *s, size_t n) {
  if (in_list(avx512_cpus, s, n)) return ISA_X86_AVX512;
  if (in_list(avx2_cpus, s, n)) return ISA_X86_AVX2;
  if (in_list(sse_cpus, s, n)) return ISA_X86_SSE;
  if (n == 7 && !strncmp(s, "generic", 7)) return ISA_GENERIC;
  return ISA_UNKNOWN;
}

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

bool autotune_target_matches(const char *target) {
  if (!target) return false;
  while (*target == ' ') target++;
  size_t kl = 0;
  while (target[kl] && target[kl] != ' ') kl++;
  bool cpu_kind = (kl == 4 && !strncmp(target, "llvm", 4)) || (kl == 1 && target[0] == 'c') ||
                  (kl == 3 && !strncmp(target, "cpu", 3));
  if (!cpu_kind) return false;
  size_t n;
  const char *dev = option(target, "-device=", &n);
  if (dev && !(n == 3 && !strncmp(dev, "cpu", 3))) return false;
  IsaClass mine = machine_isa();
  const char *triple = option(target, "-mtriple=", &n);
  if (triple) {
    bool x86 = (n >= 6 && !strncmp(triple, "x86_64", 6)) || (n >= 4 && triple[0] == 'i' && !strncmp(triple + 2, "86", 2));
    if (x86 != (mine != ISA_GENERIC)) return false;
  }
  const char *cpu = option(target, "-mcpu=", &n);
  if (!cpu) return true;
  return isa_of_cpu(cpu, n) == mine;
}
