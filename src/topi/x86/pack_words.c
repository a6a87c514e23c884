/*
 * x86/pack_words.c - the kernel packer of the low-precision convolutions:
 * an OIHW kernel to words of g input channels (pack_words.h).
 */
#include "pack_words.h"

Tensor *x86_pack_kernel_words(Tensor *kernel, int64_t ic_bn, int64_t oc_bn, const X86WordPacking *p) {
  if (!kernel) return NULL;
  int64_t s[4], g = p->g;
  if (kernel->ndim != 4 || !te_shape_const(kernel, s) || !dt_eq(kernel->dtype, p->dtype))
    return kiln_set_error("pack a kernel to %s: expected %s OIHW kernel of constant shape", p->form, p->dtype_desc), NULL;
  if (ic_bn < g || ic_bn % g || oc_bn < 1 || s[0] % oc_bn || s[1] % ic_bn)
    return kiln_set_error("pack a kernel to %s: blocks %lld (input, %s) and %lld (output) must divide the kernel's %lld "
                          "input and %lld output channels",
                          p->form, (long long)ic_bn, p->block_desc, (long long)oc_bn, (long long)s[1], (long long)s[0]),
           NULL;
  Expr **v = te_axis_vars(6, (const char *[]){"oc", "ic", "kh", "kw", p->axis, "ocb"});
  Expr *o = ir_add(ir_mul(v[0], ir_i32(oc_bn)), v[5]);
  Expr *i = ir_add(ir_mul(v[1], ir_i32(ic_bn)), ir_mul(v[4], ir_i32(g)));
  Expr **vals = KNEWN(Expr *, (size_t)g);
  for (int64_t j = 0; j < g; j++) vals[j] = te_read4(kernel, o, j ? ir_add(i, ir_i32(j)) : i, v[2], v[3]);
  return te_compute(p->name, 6,
                    (Expr *[]){ir_i32(s[0] / oc_bn), ir_i32(s[1] / ic_bn), ir_i32(s[2]), ir_i32(s[3]), ir_i32(ic_bn / g),
                               ir_i32(oc_bn)},
                    v, p->word(vals, (int)g), "injective");
}
