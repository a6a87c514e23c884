/*
 * x86/pack_words.h - the kernel packer of the low-precision convolutions
 * (conv2d_NCHWc_bf16.x86, conv2d_NCHWc_int8.x86; pack_words.c).
 *
 * Both multiply a word of g consecutive input channels by 16 output
 * channels in one instruction (VDPBF16PS: g = 2 bfloat16, VPDPBUSD: g = 4
 * int8), so both pack an OIHW kernel of constant shape to
 *
 *     [OC/oc_bn, IC/ic_bn, KH, KW, ic_bn/g, oc_bn] uint32,
 *     word[oc, ic, kh, kw, q, ob] = word(kernel[oc oc_bn + ob, ic ic_bn + q g + j, kh, kw] for j < g)
 *
 * and differ only in g and in how the word is built from the g values.
 */
#ifndef KILN_TOPI_X86_PACK_WORDS_H
#define KILN_TOPI_X86_PACK_WORDS_H

#include "../topi.h"

/* The word of g values (vals[0] the lowest input channel) as a uint32 Expr. */
typedef Expr *(*X86WordBuilder)(Expr *const *vals, int g);

typedef struct X86WordPacking {
  int g;                 /* input channels per word */
  DType dtype;           /* the kernel's element type */
  const char *form;      /* in errors: "pack a kernel to FORM: ..." ("bfloat16", "int8x4") */
  const char *dtype_desc; /* in errors: "expected DTYPE_DESC OIHW kernel" ("a float32", "an int8") */
  const char *block_desc; /* in errors: "blocks N (input, BLOCK_DESC)" ("even", "a multiple of 4") */
  const char *name;       /* the compute's name ("kernel_bf16") */
  const char *axis;       /* the word axis' name ("icp") */
  X86WordBuilder word;
} X86WordPacking;

/* The packed kernel, or NULL + error (wrong rank, shape, dtype or blocks). */
Tensor *x86_pack_kernel_words(Tensor *kernel, int64_t ic_bn, int64_t oc_bn, const X86WordPacking *p);

#endif
