/*
 * precision.c - what `--precision` may ask for (docs/bf16.md): fp32 (the
 * default) or bf16, whether this machine can run bf16 kernels, and the
 * errors that say how to get a build when it cannot.
 *
 * bf16 is opt-in and changes only the layers that have a bfloat16
 * template (dense layers with a constant weight, plain convolutions with
 * an even channel count; alter_layout):
 * their weights are stored as bfloat16 and they run on AVX512-BF16's
 * VDPBF16PS with float32 accumulation; every other op, and every tensor
 * between ops, stays float32.  Generated code is compiled for the machine
 * that compiles it (-march=native), so the compiling CPU must have
 * AVX512-BF16 (cpuid leaf 7 subleaf 1, EAX bit 5: /proc/cpuinfo's
 * avx512_bf16).  $KILN_CPU_NO_BF16=1 makes Kiln treat the CPU as one
 * without it (for the test of that error).
 */
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "../target/target.h"
#include "graph.h"

int graph_precision_parse(const char *s, GraphPrecision *out) {
  if (s && (!strcmp(s, "fp32") || !strcmp(s, "float32"))) {
    *out = GRAPH_PRECISION_FP32;
    return 0;
  }
  if (s && (!strcmp(s, "bf16") || !strcmp(s, "bfloat16"))) {
    *out = GRAPH_PRECISION_BF16;
    return 0;
  }
  return kiln_set_error("precision '%s': expected fp32 (the default) or bf16", s ? s : "(null)");
}

const char *graph_precision_name(GraphPrecision p) { return p == GRAPH_PRECISION_BF16 ? "bf16" : "fp32"; }

bool graph_cpu_has_bf16(void) {
  const char *no = getenv("KILN_CPU_NO_BF16");
  if (no && *no && strcmp(no, "0")) return false;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__builtin_cpu_supports("avx512f")) return false; /* also says the OS saves the zmm state */
  if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
  return (a >> 5) & 1u;
#else
  return false;
#endif
}

int graph_precision_check(GraphPrecision p, const Target *t, int opt_level) {
  if (p == GRAPH_PRECISION_FP32) return 0;
  if (t && target_is_gpu(t))
    return kiln_set_error("--precision bf16: the bfloat16 kernels are CPU kernels (AVX512-BF16); target '%s' is a GPU: "
                          "leave --precision out for it",
                          t->str);
  if (t && t->isa != ISA_X86_AVX512)
    return kiln_set_error("--precision bf16 needs an AVX-512 CPU target (the kernels use AVX512-BF16); target '%s' is "
                          "not one: use --target cpu or -mcpu=sapphirerapids",
                          t->str);
  if (!graph_cpu_has_bf16())
    return kiln_set_error("--precision bf16 needs a CPU with AVX512-BF16 (/proc/cpuinfo flag avx512_bf16: Cooper Lake, "
                          "Sapphire Rapids, Zen 4 or later), and this one lacks it; compile with --precision fp32 (the "
                          "default)");
  if (opt_level < 3)
    return kiln_set_error("--precision bf16 needs opt level 3 (the bfloat16 layers are chosen by alter_layout, which "
                          "runs from -O3); got -O%d",
                          opt_level);
  return 0;
}
