/*
 * test_topi_nn.c - convolution, dense and matrix products, pooling,
 * softmax and the norms, each against a direct-loop reference in double,
 * on random shapes with odd sizes, through the generic schedules (with
 * fused elementwise epilogues), plus their bad-input errors.
 */
#include "test_topi.h"

#include <math.h>

#define F(a, i) tget(a, i)

/* ---- conv2d ---- */

typedef struct ConvP {
  int64_t N, C, H, W, F, KH, KW, sh, sw, pt, pl, pb, pr, dh, dw, groups;
} ConvP;

static int64_t out_size(int64_t in, int64_t pb, int64_t pe, int64_t k, int64_t d, int64_t s) {
  return (in + pb + pe - d * (k - 1) - 1) / s + 1;
}

static void ref_conv(const ConvP *p, DLTensor *data, DLTensor *wt, DLTensor *bias, bool relu, DLTensor *out) {
  int64_t OH = out_size(p->H, p->pt, p->pb, p->KH, p->dh, p->sh), OW = out_size(p->W, p->pl, p->pr, p->KW, p->dw, p->sw);
  int64_t cg = p->C / p->groups, fg = p->F / p->groups;
  for (int64_t n = 0; n < p->N; n++)
    for (int64_t f = 0; f < p->F; f++)
      for (int64_t y = 0; y < OH; y++)
        for (int64_t x = 0; x < OW; x++) {
          double s = 0;
          int64_t g = f / fg;
          for (int64_t rc = 0; rc < cg; rc++)
            for (int64_t ry = 0; ry < p->KH; ry++)
              for (int64_t rx = 0; rx < p->KW; rx++) {
                int64_t iy = y * p->sh + ry * p->dh - p->pt, ix = x * p->sw + rx * p->dw - p->pl;
                if (iy < 0 || iy >= p->H || ix < 0 || ix >= p->W) continue;
                int64_t c = g * cg + rc;
                s += F(data, ((n * p->C + c) * p->H + iy) * p->W + ix) * F(wt, ((f * cg + rc) * p->KH + ry) * p->KW + rx);
              }
          if (bias) s += F(bias, f);
          if (relu && s < 0) s = 0;
          tset(out, ((n * p->F + f) * OH + y) * OW + x, s);
        }
}

static void conv_case(TBatch *b, ConvP p, bool epilogue, bool eval) {
  Tensor *data = ph("data", 4, (int64_t[]){p.N, p.C, p.H, p.W}, DT_F32);
  Tensor *wt = ph("weight", 4, (int64_t[]){p.F, p.C / p.groups, p.KH, p.KW}, DT_F32);
  Tensor *bias = ph("bias", 3, (int64_t[]){p.F, 1, 1}, DT_F32);
  Tensor *out = topi_conv2d_nchw(data, wt, (int64_t[]){p.sh, p.sw}, (int64_t[]){p.pt, p.pl, p.pb, p.pr},
                                 (int64_t[]){p.dh, p.dw}, (int)p.groups);
  if (epilogue) out = topi_unary(TOPI_relu, topi_binary(TOPI_add, out, bias));
  const char *label = kfmt("conv2d N%lld C%lld %lldx%lld F%lld k%lldx%lld s%lld,%lld p%lld,%lld,%lld,%lld d%lld,%lld g%lld%s",
                           (long long)p.N, (long long)p.C, (long long)p.H, (long long)p.W, (long long)p.F,
                           (long long)p.KH, (long long)p.KW, (long long)p.sh, (long long)p.sw, (long long)p.pt,
                           (long long)p.pl, (long long)p.pb, (long long)p.pr, (long long)p.dh, (long long)p.dw,
                           (long long)p.groups, epilogue ? " +bias+relu" : "");
  int64_t k = p.C / p.groups * p.KH * p.KW;
  TCase *c = tb_add(b, label, epilogue ? 3 : 2, (Tensor *[]){data, wt, bias}, out, k > 200 ? 1e-4 : 1e-5);
  if (!c) return;
  ref_conv(&p, c->a[0], c->a[1], epilogue ? c->a[2] : NULL, epilogue, c->ref);
  c->eval = eval;
}

static void test_conv2d(void) {
  TBatch b = {0};
  /* hand-picked: 1x1, 3x3 same, strided, asymmetric pads, dilation, groups */
  conv_case(&b, (ConvP){1, 3, 7, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, false, true);
  conv_case(&b, (ConvP){2, 4, 9, 16, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1}, true, false);
  conv_case(&b, (ConvP){1, 3, 13, 11, 4, 3, 5, 2, 3, 0, 2, 1, 0, 1, 1, 1}, false, false);
  conv_case(&b, (ConvP){1, 2, 12, 13, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1}, true, false);
  conv_case(&b, (ConvP){2, 6, 8, 8, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3}, true, false);
  conv_case(&b, (ConvP){1, 16, 14, 32, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, true, false);
  conv_case(&b, (ConvP){1, 4, 5, 5, 2, 5, 5, 1, 1, 0, 0, 0, 0, 1, 1, 1}, false, false);
  conv_case(&b, (ConvP){1, 8, 17, 17, 4, 3, 3, 2, 2, 0, 1, 1, 0, 1, 1, 2}, false, false);
  /* random ones */
  for (int t = 0; t < 6; t++) {
    ConvP p;
    p.N = rnd_range(1, 2);
    p.groups = rnd_range(1, 3);
    p.C = p.groups * rnd_range(1, 4);
    p.F = p.groups * rnd_range(1, 4);
    p.KH = rnd_range(1, 4);
    p.KW = rnd_range(1, 4);
    p.sh = rnd_range(1, 3);
    p.sw = rnd_range(1, 3);
    p.dh = rnd_range(1, 2);
    p.dw = rnd_range(1, 2);
    p.pt = rnd_range(0, 2);
    p.pl = rnd_range(0, 2);
    p.pb = rnd_range(0, 2);
    p.pr = rnd_range(0, 2);
    p.H = p.dh * (p.KH - 1) + rnd_range(1, 12);
    p.W = p.dw * (p.KW - 1) + rnd_range(1, 12);
    conv_case(&b, p, t % 2 == 0, false);
  }
  tb_run(&b);
}

static void test_depthwise(void) {
  TBatch b = {0};
  ConvP ps[] = {
      {1, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8},
      {2, 3, 12, 7, 6, 3, 3, 2, 2, 1, 0, 0, 1, 1, 1, 3}, /* multiplier 2 */
      {1, 16, 16, 16, 16, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 16},
      {1, 5, 11, 13, 5, 3, 3, 1, 2, 2, 2, 2, 2, 2, 2, 5},
  };
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) conv_case(&b, ps[i], i % 2 == 1, i == 0);
  /* the tag says what it is */
  Tensor *data = ph("data", 4, (int64_t[]){1, 4, 5, 5}, DT_F32), *w = ph("w", 4, (int64_t[]){4, 1, 3, 3}, DT_F32);
  Tensor *dw = topi_conv2d_nchw(data, w, (int64_t[]){1, 1}, (int64_t[]){0, 0, 0, 0}, (int64_t[]){1, 1}, 4);
  CHECK(dw && !strcmp(dw->tag, "depthwise_conv2d_nchw"));
  Tensor *w2 = ph("w2", 4, (int64_t[]){6, 2, 3, 3}, DT_F32);
  Tensor *gc = topi_conv2d_nchw(data, w2, (int64_t[]){1, 1}, (int64_t[]){0, 0, 0, 0}, (int64_t[]){1, 1}, 2);
  CHECK(gc && !strcmp(gc->tag, "group_conv2d_nchw"));
  tb_run(&b);
}

typedef struct TConvP {
  int64_t N, C, H, W, FG, KH, KW, sh, sw, pt, pl, pb, pr, oph, opw, dh, dw, groups;
} TConvP;

static void tconv_case(TBatch *b, TConvP p) {
  Tensor *data = ph("data", 4, (int64_t[]){p.N, p.C, p.H, p.W}, DT_F32);
  Tensor *wt = ph("weight", 4, (int64_t[]){p.C, p.FG, p.KH, p.KW}, DT_F32);
  Tensor *out = topi_conv2d_transpose_nchw(data, wt, (int64_t[]){p.sh, p.sw}, (int64_t[]){p.pt, p.pl, p.pb, p.pr},
                                           (int64_t[]){p.oph, p.opw}, (int64_t[]){p.dh, p.dw}, (int)p.groups);
  TCase *c = tb_add(b, kfmt("conv2d_transpose C%lld %lldx%lld k%lldx%lld s%lld,%lld g%lld", (long long)p.C,
                            (long long)p.H, (long long)p.W, (long long)p.KH, (long long)p.KW, (long long)p.sh,
                            (long long)p.sw, (long long)p.groups),
                    2, (Tensor *[]){data, wt}, out, 1e-5);
  if (!c) return;
  /* scatter form: every input element adds into the outputs it reaches */
  int64_t OH = c->ref->shape[2], OW = c->ref->shape[3], F = p.FG * p.groups, cg = p.C / p.groups;
  int64_t n_out = numel(c->ref);
  double *acc = calloc((size_t)n_out, sizeof(double));
  for (int64_t n = 0; n < p.N; n++)
    for (int64_t ci = 0; ci < p.C; ci++)
      for (int64_t y = 0; y < p.H; y++)
        for (int64_t x = 0; x < p.W; x++) {
          double v = F(c->a[0], ((n * p.C + ci) * p.H + y) * p.W + x);
          int64_t g = ci / cg;
          for (int64_t fo = 0; fo < p.FG; fo++)
            for (int64_t ky = 0; ky < p.KH; ky++)
              for (int64_t kx = 0; kx < p.KW; kx++) {
                int64_t oy = y * p.sh + ky * p.dh - p.pt, ox = x * p.sw + kx * p.dw - p.pl;
                if (oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
                int64_t f = g * p.FG + fo;
                acc[((n * F + f) * OH + oy) * OW + ox] += v * F(c->a[1], ((ci * p.FG + fo) * p.KH + ky) * p.KW + kx);
              }
        }
  CHECK_INT(OH, (p.H - 1) * p.sh - p.pt - p.pb + p.dh * (p.KH - 1) + p.oph + 1);
  for (int64_t i = 0; i < n_out; i++) tset(c->ref, i, acc[i]);
  free(acc);
}

static void test_conv2d_transpose(void) {
  TBatch b = {0};
  tconv_case(&b, (TConvP){1, 3, 5, 5, 4, 3, 3, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1});
  tconv_case(&b, (TConvP){2, 4, 7, 6, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  tconv_case(&b, (TConvP){1, 4, 6, 5, 2, 4, 2, 2, 3, 1, 0, 2, 1, 0, 2, 1, 1, 2});
  tconv_case(&b, (TConvP){1, 2, 5, 7, 3, 3, 3, 1, 2, 2, 1, 0, 1, 0, 1, 2, 2, 1});
  tconv_case(&b, (TConvP){1, 6, 4, 4, 1, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 1, 1, 6});
  tb_run(&b);
}

/* ---- dense, matmul, batch_matmul ---- */

static void dense_case(TBatch *b, int64_t M, int64_t N, int64_t K, bool bias, bool relu) {
  Tensor *data = ph("data", 2, (int64_t[]){M, K}, DT_F32), *wt = ph("weight", 2, (int64_t[]){N, K}, DT_F32);
  Tensor *bs = ph("bias", 1, (int64_t[]){N}, DT_F32);
  Tensor *out = topi_dense(data, wt, bias ? bs : NULL);
  if (relu) out = topi_unary(TOPI_relu, out);
  TCase *c = tb_add(b, kfmt("dense M%lld N%lld K%lld%s%s", (long long)M, (long long)N, (long long)K, bias ? " +bias" : "",
                            relu ? " +relu" : ""),
                    bias ? 3 : 2, (Tensor *[]){data, wt, bs}, out, K > 200 ? 1e-4 : 1e-5);
  if (!c) return;
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      double s = bias ? F(c->a[2], n) : 0;
      for (int64_t k = 0; k < K; k++) s += F(c->a[0], m * K + k) * F(c->a[1], n * K + k);
      tset(c->ref, m * N + n, relu && s < 0 ? 0 : s);
    }
}

static void test_dense(void) {
  TBatch b = {0};
  dense_case(&b, 1, 1, 1, false, false);
  dense_case(&b, 3, 7, 13, true, false);
  dense_case(&b, 1, 32, 64, true, true);
  dense_case(&b, 5, 48, 29, true, false);
  dense_case(&b, 13, 16, 7, false, true);
  dense_case(&b, 64, 64, 256, true, true);
  dense_case(&b, rnd_dim(), rnd_dim(), rnd_dim(), true, true);
  dense_case(&b, 2, 1000, 300, true, false);
  tb_run(&b);
}

/* sa, sb: the operands' logical shapes; a transposed operand (ta, tb) is
 * stored with its last two dimensions swapped, and read so. */
static void swap_last2(int r, int64_t *v, bool t) {
  if (!t) return;
  int64_t x = v[r - 1];
  v[r - 1] = v[r - 2];
  v[r - 2] = x;
}

static void matmul_case_t(TBatch *b, int ra, const int64_t *sa, int rb, const int64_t *sb, bool epilogue, bool ta,
                          bool tb) {
  int64_t sta[8], stb[8];
  memcpy(sta, sa, sizeof(int64_t) * (size_t)ra);
  memcpy(stb, sb, sizeof(int64_t) * (size_t)rb);
  swap_last2(ra, sta, ta);
  swap_last2(rb, stb, tb);
  Tensor *x = ph("a", ra, sta, DT_F32), *y = ph("b", rb, stb, DT_F32);
  Tensor *out = topi_matmul(x, y, ta, tb);
  if (epilogue) out = topi_unary(TOPI_tanh, out);
  TCase *c = tb_add(b, kfmt("matmul %s%s x %s%s", topi_shape_str(ra, x->shape), ta ? "^T" : "",
                            topi_shape_str(rb, y->shape), tb ? "^T" : ""), 2, (Tensor *[]){x, y}, out, 1e-5);
  if (!c) return;
  /* promote to >= 2-D, broadcast batch, contract */
  int64_t M = ra > 1 ? sa[ra - 2] : 1, K = sa[ra - 1], N = rb > 1 ? sb[rb - 1] : 1;
  int ob = c->ref->ndim - (ra > 1) - (rb > 1);
  int64_t nb = 1;
  for (int d = 0; d < ob; d++) nb *= c->ref->shape[d];
  int64_t bidx[8], ai[8], bi[8];
  for (int64_t bt = 0; bt < nb; bt++) {
    unravel(bt, ob, c->ref->shape, bidx);
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double s = 0;
        for (int64_t k = 0; k < K; k++) {
          int abat = ra > 2 ? ra - 2 : 0, bbat = rb > 2 ? rb - 2 : 0;
          for (int d = 0; d < abat; d++) ai[d] = sa[d] == 1 ? 0 : bidx[d + ob - abat];
          for (int d = 0; d < bbat; d++) bi[d] = sb[d] == 1 ? 0 : bidx[d + ob - bbat];
          if (ra > 1) ai[ra - 2] = m;
          ai[ra - 1] = k;
          if (rb > 1) {
            bi[rb - 2] = k;
            bi[rb - 1] = n;
          } else {
            bi[0] = k;
          }
          swap_last2(ra, ai, ta);
          swap_last2(rb, bi, tb);
          s += F(c->a[0], ravel(ra, sta, ai)) * F(c->a[1], ravel(rb, stb, bi));
        }
        tset(c->ref, (bt * M + m) * N + n, epilogue ? tanh(s) : s);
      }
  }
}

static void matmul_case(TBatch *b, int ra, const int64_t *sa, int rb, const int64_t *sb, bool epilogue) {
  matmul_case_t(b, ra, sa, rb, sb, epilogue, false, false);
}

static void test_matmul(void) {
  TBatch b = {0};
  matmul_case(&b, 2, (int64_t[]){7, 13}, 2, (int64_t[]){13, 5}, false);
  matmul_case(&b, 2, (int64_t[]){3, 8}, 2, (int64_t[]){8, 32}, true);
  matmul_case(&b, 3, (int64_t[]){2, 5, 7}, 2, (int64_t[]){7, 16}, false);
  matmul_case(&b, 4, (int64_t[]){2, 1, 3, 4}, 3, (int64_t[]){5, 4, 6}, true);
  matmul_case(&b, 1, (int64_t[]){9}, 2, (int64_t[]){9, 4}, false);
  matmul_case(&b, 2, (int64_t[]){6, 9}, 1, (int64_t[]){9}, false);
  matmul_case(&b, 1, (int64_t[]){11}, 1, (int64_t[]){11}, false);
  matmul_case(&b, 3, (int64_t[]){3, 4, 5}, 1, (int64_t[]){5}, true);
  matmul_case(&b, 1, (int64_t[]){5}, 3, (int64_t[]){2, 5, 16}, false);
  matmul_case(&b, 3, (int64_t[]){1, 16, 64}, 3, (int64_t[]){4, 64, 48}, true);
  /* transpose_a / transpose_b (nn.matmul's attributes) */
  matmul_case_t(&b, 2, (int64_t[]){7, 13}, 2, (int64_t[]){13, 5}, false, true, false);
  matmul_case_t(&b, 2, (int64_t[]){6, 9}, 2, (int64_t[]){9, 11}, true, false, true);
  matmul_case_t(&b, 3, (int64_t[]){2, 5, 7}, 3, (int64_t[]){2, 7, 4}, false, true, true);
  matmul_case_t(&b, 3, (int64_t[]){3, 4, 5}, 1, (int64_t[]){5}, false, true, false);
  tb_run(&b);
}

static void bmm_case(TBatch *b, int64_t Ba, int64_t Bb, int64_t M, int64_t N, int64_t K, bool ta, bool tb, bool epi) {
  Tensor *x = ph("a", 3, ta ? (int64_t[]){Ba, K, M} : (int64_t[]){Ba, M, K}, DT_F32);
  Tensor *y = ph("b", 3, tb ? (int64_t[]){Bb, N, K} : (int64_t[]){Bb, K, N}, DT_F32);
  Tensor *out = topi_batch_matmul(x, y, ta, tb);
  if (epi) out = topi_binary(TOPI_multiply, out, out);
  TCase *c = tb_add(b, kfmt("batch_matmul B%lld/%lld M%lld N%lld K%lld ta%d tb%d", (long long)Ba, (long long)Bb,
                            (long long)M, (long long)N, (long long)K, ta, tb),
                    2, (Tensor *[]){x, y}, out, 1e-5);
  if (!c) return;
  int64_t B = Ba > Bb ? Ba : Bb;
  for (int64_t bt = 0; bt < B; bt++)
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double s = 0;
        int64_t pa = Ba == 1 ? 0 : bt, pb = Bb == 1 ? 0 : bt;
        for (int64_t k = 0; k < K; k++)
          s += F(c->a[0], ta ? (pa * K + k) * M + m : (pa * M + m) * K + k) *
               F(c->a[1], tb ? (pb * N + n) * K + k : (pb * K + k) * N + n);
        tset(c->ref, (bt * M + m) * N + n, epi ? s * s : s);
      }
}

static void test_batch_matmul(void) {
  TBatch b = {0};
  bmm_case(&b, 2, 2, 3, 5, 7, false, true, false);
  bmm_case(&b, 3, 3, 4, 16, 9, false, false, true);
  bmm_case(&b, 1, 4, 5, 6, 3, true, false, false);
  bmm_case(&b, 3, 1, 7, 32, 8, true, true, true);
  bmm_case(&b, 2, 2, 1, 1, 13, false, true, false);
  tb_run(&b);
}

/* ---- pooling ---- */

typedef struct PoolP {
  int kind; /* 0 max, 1 avg */
  int64_t N, C, H, W, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
  bool ceil, include_pad;
  int block; /* 0: NCHW; else NCHW[block]c */
} PoolP;

static int64_t pool_out(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t d, int64_t s, bool ceil_mode) {
  int64_t num = in + p0 + p1 - d * (k - 1) - 1;
  int64_t o = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
  if (ceil_mode && (o - 1) * s >= in + p0) o--;
  return o;
}

static void pool_case(TBatch *b, PoolP p) {
  int64_t cb = p.block ? p.C / p.block : p.C;
  Tensor *data = p.block ? ph("data", 5, (int64_t[]){p.N, cb, p.H, p.W, p.block}, DT_F32)
                         : ph("data", 4, (int64_t[]){p.N, p.C, p.H, p.W}, DT_F32);
  const char *layout = p.block ? kfmt("NCHW%dc", p.block) : "NCHW";
  Tensor *out = topi_pool2d(data, p.kind ? TOPI_POOL_AVG : TOPI_POOL_MAX, (int64_t[]){p.kh, p.kw},
                            (int64_t[]){p.sh, p.sw}, (int64_t[]){p.dh, p.dw}, (int64_t[]){p.pt, p.pl, p.pb, p.pr},
                            p.ceil, p.include_pad, layout);
  TCase *c = tb_add(b, kfmt("%s_pool %s %lldx%lld k%lldx%lld s%lld,%lld d%lld,%lld p%lld,%lld,%lld,%lld%s%s",
                            p.kind ? "avg" : "max", layout, (long long)p.H, (long long)p.W, (long long)p.kh,
                            (long long)p.kw, (long long)p.sh, (long long)p.sw, (long long)p.dh, (long long)p.dw,
                            (long long)p.pt, (long long)p.pl, (long long)p.pb, (long long)p.pr, p.ceil ? " ceil" : "",
                            p.include_pad ? " include_pad" : ""),
                    1, &data, out, 1e-6);
  if (!c) return;
  int64_t OH = pool_out(p.H, p.pt, p.pb, p.kh, p.dh, p.sh, p.ceil), OW = pool_out(p.W, p.pl, p.pr, p.kw, p.dw, p.sw, p.ceil);
  CHECK_INT(c->ref->shape[2], OH);
  CHECK_INT(c->ref->shape[3], OW);
  for (int64_t n = 0; n < p.N; n++)
    for (int64_t ch = 0; ch < p.C; ch++)
      for (int64_t y = 0; y < OH; y++)
        for (int64_t x = 0; x < OW; x++) {
          double mx = -INFINITY, sum = 0;
          int64_t cnt = 0;
          for (int64_t ky = 0; ky < p.kh; ky++)
            for (int64_t kx = 0; kx < p.kw; kx++) {
              int64_t iy = y * p.sh + ky * p.dh - p.pt, ix = x * p.sw + kx * p.dw - p.pl;
              bool in_pad = iy >= -p.pt && iy < p.H + p.pb && ix >= -p.pl && ix < p.W + p.pr;
              bool in = iy >= 0 && iy < p.H && ix >= 0 && ix < p.W;
              if (p.include_pad ? in_pad : in) cnt++;
              if (!in) continue;
              double v = p.block ? F(c->a[0], (((n * cb + ch / p.block) * p.H + iy) * p.W + ix) * p.block + ch % p.block)
                                 : F(c->a[0], ((n * p.C + ch) * p.H + iy) * p.W + ix);
              if (v > mx) mx = v;
              sum += v;
            }
          double r = p.kind ? sum / (double)(cnt ? cnt : 1) : mx;
          int64_t oi = p.block ? (((n * cb + ch / p.block) * OH + y) * OW + x) * p.block + ch % p.block
                               : ((n * p.C + ch) * OH + y) * OW + x;
          tset(c->ref, oi, r);
        }
}

static void test_pool2d(void) {
  TBatch b = {0};
  pool_case(&b, (PoolP){0, 1, 3, 7, 7, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, false, false, 0});
  pool_case(&b, (PoolP){0, 2, 4, 9, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false, 0});
  pool_case(&b, (PoolP){0, 1, 2, 8, 8, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, true, false, 0});
  pool_case(&b, (PoolP){0, 1, 2, 13, 12, 3, 2, 1, 2, 2, 2, 1, 0, 2, 1, false, false, 0});
  pool_case(&b, (PoolP){1, 1, 3, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, 0});
  pool_case(&b, (PoolP){1, 1, 3, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, true, 0});
  pool_case(&b, (PoolP){1, 2, 2, 9, 10, 3, 3, 2, 2, 1, 1, 1, 0, 1, 0, true, true, 0});
  pool_case(&b, (PoolP){1, 1, 2, 10, 9, 2, 3, 3, 2, 1, 1, 1, 1, 0, 1, true, false, 0});
  pool_case(&b, (PoolP){1, 1, 3, 12, 12, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, false, false, 0});
  pool_case(&b, (PoolP){1, 1, 2, 11, 11, 3, 3, 2, 2, 2, 2, 2, 1, 0, 2, false, true, 0});
  pool_case(&b, (PoolP){0, 1, 32, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false, 16});
  pool_case(&b, (PoolP){1, 2, 16, 8, 7, 2, 2, 2, 2, 1, 1, 0, 0, 1, 1, true, false, 8});
  pool_case(&b, (PoolP){0, 1, 8, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false, 8});
  tb_run(&b);
}

static void adaptive_case(TBatch *b, int kind, int64_t N, int64_t C, int64_t H, int64_t W, int64_t OH, int64_t OW,
                          bool global, int block) {
  int64_t cb = block ? C / block : C;
  Tensor *data = block ? ph("data", 5, (int64_t[]){N, cb, H, W, block}, DT_F32) : ph("data", 4, (int64_t[]){N, C, H, W}, DT_F32);
  const char *layout = block ? kfmt("NCHW%dc", block) : "NCHW";
  TopiPoolKind k = kind ? TOPI_POOL_AVG : TOPI_POOL_MAX;
  Tensor *out = global ? topi_global_pool2d(data, k, layout) : topi_adaptive_pool2d(data, k, (int64_t[]){OH, OW}, layout);
  if (global) OH = OW = 1;
  TCase *c = tb_add(b, kfmt("%s %s %s %lldx%lld -> %lldx%lld", global ? "global" : "adaptive", kind ? "avg" : "max",
                            layout, (long long)H, (long long)W, (long long)OH, (long long)OW),
                    1, &data, out, H * W > 200 ? 1e-5 : 1e-6);
  if (!c) return;
  for (int64_t n = 0; n < N; n++)
    for (int64_t ch = 0; ch < C; ch++)
      for (int64_t y = 0; y < OH; y++)
        for (int64_t x = 0; x < OW; x++) {
          int64_t y0 = y * H / OH, y1 = ((y + 1) * H + OH - 1) / OH, x0 = x * W / OW, x1 = ((x + 1) * W + OW - 1) / OW;
          double mx = -INFINITY, s = 0;
          for (int64_t iy = y0; iy < y1; iy++)
            for (int64_t ix = x0; ix < x1; ix++) {
              double v = block ? F(c->a[0], (((n * cb + ch / block) * H + iy) * W + ix) * block + ch % block)
                               : F(c->a[0], ((n * C + ch) * H + iy) * W + ix);
              mx = v > mx ? v : mx;
              s += v;
            }
          double r = kind ? s / (double)((y1 - y0) * (x1 - x0)) : mx;
          tset(c->ref, block ? (((n * cb + ch / block) * OH + y) * OW + x) * block + ch % block : ((n * C + ch) * OH + y) * OW + x,
               r);
        }
}

static void test_adaptive_pool(void) {
  TBatch b = {0};
  adaptive_case(&b, 1, 2, 3, 7, 7, 1, 1, true, 0);
  adaptive_case(&b, 0, 1, 5, 13, 9, 1, 1, true, 0);
  adaptive_case(&b, 1, 1, 32, 7, 7, 1, 1, true, 16);
  adaptive_case(&b, 1, 1, 3, 10, 9, 3, 4, false, 0);
  adaptive_case(&b, 0, 2, 2, 8, 8, 4, 2, false, 0);
  adaptive_case(&b, 1, 1, 2, 5, 7, 7, 3, false, 0);
  adaptive_case(&b, 0, 1, 16, 9, 6, 2, 5, false, 8);
  tb_run(&b);
}

/* ---- softmax and norms ---- */

static void softmax_case(TBatch *b, int nd, const int64_t *shape, int axis, bool is_log, bool epilogue) {
  Tensor *x = ph("x", nd, shape, DT_F32);
  Tensor *out = is_log ? topi_log_softmax(x, axis) : topi_softmax(x, axis);
  if (epilogue) out = topi_binary(TOPI_multiply, out, x);
  TCase *c = tb_add(b, kfmt("%s %s axis %d%s", is_log ? "log_softmax" : "softmax", topi_shape_str(nd, x->shape), axis,
                            epilogue ? " *x" : ""),
                    1, &x, out, 1e-5);
  if (!c) return;
  fill_uniform(c->a[0], -5, 5);
  int a = axis < 0 ? axis + nd : axis;
  int64_t L = shape[a], idx[8];
  for (int64_t i = 0; i < numel(c->ref); i++) {
    unravel(i, nd, shape, idx);
    int64_t at = idx[a];
    double mx = -INFINITY, s = 0;
    for (int64_t k = 0; k < L; k++) {
      idx[a] = k;
      mx = fmax(mx, F(c->a[0], ravel(nd, shape, idx)));
    }
    for (int64_t k = 0; k < L; k++) {
      idx[a] = k;
      s += exp(F(c->a[0], ravel(nd, shape, idx)) - mx);
    }
    double xv = F(c->a[0], i);
    double r = is_log ? xv - mx - log(s) : exp(xv - mx) / s;
    (void)at;
    tset(c->ref, i, epilogue ? r * xv : r);
  }
}

static void test_softmax(void) {
  TBatch b = {0};
  softmax_case(&b, 2, (int64_t[]){7, 13}, 1, false, false);
  softmax_case(&b, 2, (int64_t[]){7, 13}, -1, true, false);
  softmax_case(&b, 4, (int64_t[]){2, 5, 3, 4}, 1, false, false);
  softmax_case(&b, 3, (int64_t[]){3, 4, 64}, 2, false, true);
  softmax_case(&b, 3, (int64_t[]){6, 1, 5}, 0, true, true);
  softmax_case(&b, 1, (int64_t[]){17}, 0, false, false);
  softmax_case(&b, 3, (int64_t[]){64, 8, 100}, -1, false, false);
  softmax_case(&b, 4, (int64_t[]){2, 3, 7, 5}, 2, true, false);
  /* rows of 32 or more not a multiple of 8: 16 partial lanes and a tail */
  softmax_case(&b, 3, (int64_t[]){2, 5, 197}, -1, false, false);
  softmax_case(&b, 2, (int64_t[]){3, 47}, 1, true, true);
  softmax_case(&b, 2, (int64_t[]){4, 33}, 1, false, true);
  /* a multiple of 8 but not of 16: 8 partial lanes, folded once */
  softmax_case(&b, 2, (int64_t[]){5, 40}, 1, false, false);
  softmax_case(&b, 2, (int64_t[]){5, 40}, 1, true, false);
  /* rows of 49 paired across the heads (the axis before is odd) */
  softmax_case(&b, 4, (int64_t[]){2, 4, 7, 49}, -1, false, true);
  tb_run(&b);
}

/* A row reduction of 32 or more (softmax's max and sum, a norm's sums)
 * folds its partial lanes in halves down to 4 (32 -> 16 -> 8 -> 4, 16 ->
 * 8 -> 4, or 8 -> 4) inside the row loop, so the row's last, serial
 * reduction is over 4 lanes (and a tail), not 16.  A row that is a
 * multiple of 32 (64 and more) accumulates into two vectors of partial
 * lanes, two independent chains.  With an even number of rows (6) the
 * row loop takes two rows at a time, the partial lanes of both in one
 * buffer, and their chains interleave; with an odd number (5), or rows
 * of 1 KiB or more, one. */
static void test_row_fold(void) {
  static const int64_t rows[4] = {64, 40, 197, 96};
  static const int folds[4] = {3, 1, 2, 3}, lanes[4] = {32, 8, 16, 32};
  for (int i = 0; i < 8; i++) {
    int k = i % 4, nrows = i < 4 ? 6 : 5;
    Tensor *x = ph("x", 2, (int64_t[]){nrows, rows[k]}, DT_F32);
    bool norm = k % 2 == 1;
    Tensor *out = norm ? topi_layer_norm(x, NULL, NULL, -1, 1e-5) : topi_softmax(x, 1);
    CHECK_NN(out);
    if (!out) continue;
    const char *txt = tt_generic_lowered(x, out), *sum = norm ? "T_layer_norm_sum" : "T_softmax_expsum";
    if (!txt) continue;
    CHECK_MSG(strstr(txt, kfmt("%s_fold%d", sum, folds[k] - 1)) != NULL, "row %lld: no fold %d of %s in\n%s",
              (long long)rows[k], folds[k] - 1, sum, txt);
    CHECK_MSG(strstr(txt, kfmt("%s_fold%d", sum, folds[k])) == NULL, "row %lld: %s folded past 4 lanes",
              (long long)rows[k], sum);
    CHECK_MSG(strstr(txt, rows[k] == 197 ? "for (j, 0, 9)" : "for (j, 0, 4)") != NULL,
              "row %lld: the last reduction is not over 4 lanes%s:\n%s", (long long)rows[k],
              rows[k] == 197 ? " and a tail of 5" : "", txt);
    /* the partial lanes of one row or two */
    int per = nrows % 2 ? 1 : 2;
    CHECK_MSG(strstr(txt, kfmt("allocate %s_partial[float32 * %d]", sum, per * lanes[k])) != NULL,
              "%d rows of %lld: not %d partial lanes for each of %d rows:\n%s", nrows, (long long)rows[k], lanes[k],
              per, txt);
    /* two vectors of partial lanes: the second one's accumulation */
    bool two = strstr(txt, kfmt("%s_partial[ramp(16, 1, 16)] = (%s_partial[ramp(16, 1, 16)] + x[", sum, sum)) != NULL;
    if (!norm) two = strstr(txt, kfmt("%s_partial[ramp(16, 1, 16)] = (%s_partial[ramp(16, 1, 16)] + T_softmax_exp[ramp(((ko*32) + 16)", sum, sum)) != NULL;
    CHECK_MSG(two == (folds[k] == 3), "row %lld: %s vectors of partial lanes:\n%s", (long long)rows[k],
              two ? "two" : "one", txt);
  }
  /* an odd number of rows of 96 per head, 4 heads: the heads are paired */
  {
    Tensor *x = ph("x", 3, (int64_t[]){4, 5, 96}, DT_F32), *out = topi_layer_norm(x, NULL, NULL, -1, 1e-5);
    const char *txt = out ? tt_generic_lowered(x, out) : NULL;
    CHECK_MSG(txt && strstr(txt, "allocate T_layer_norm_sum_partial[float32 * 64]"), "4 x 5 rows of 96: not paired:\n%s",
              txt ? txt : "(none)");
  }
  /* rows of 1 KiB and more are not paired: 6 rows of 256 */
  Tensor *x = ph("x", 2, (int64_t[]){6, 256}, DT_F32), *out = topi_layer_norm(x, NULL, NULL, -1, 1e-5);
  const char *txt = out ? tt_generic_lowered(x, out) : NULL;
  CHECK_MSG(txt && strstr(txt, "allocate T_layer_norm_sum_partial[float32 * 32]"), "6 rows of 256: paired:\n%s",
            txt ? txt : "(none)");
}

static void test_batch_norm(void) {
  TBatch b = {0};
  for (int t = 0; t < 3; t++) {
    int64_t shape[4] = {rnd_range(1, 2), rnd_dim(), rnd_dim(), t == 2 ? 32 : rnd_dim()};
    int axis = t == 1 ? 3 : 1;
    int64_t C = shape[axis];
    Tensor *x = ph("x", 4, shape, DT_F32);
    Tensor *g = ph("gamma", 1, &C, DT_F32), *be = ph("beta", 1, &C, DT_F32), *m = ph("mean", 1, &C, DT_F32),
           *v = ph("var", 1, &C, DT_F32);
    Tensor *out = topi_batch_norm(x, g, be, m, v, axis, 1e-5);
    if (t == 2) out = topi_unary(TOPI_relu, out);
    TCase *c = tb_add(&b, kfmt("batch_norm axis %d", axis), 5, (Tensor *[]){x, g, be, m, v}, out, 1e-5);
    if (!c) continue;
    fill_uniform(c->a[4], 0.1, 2);
    int64_t idx[4];
    for (int64_t i = 0; i < numel(c->ref); i++) {
      unravel(i, 4, shape, idx);
      int64_t ch = idx[axis];
      double r = (F(c->a[0], i) - F(c->a[3], ch)) / sqrt(F(c->a[4], ch) + 1e-5) * F(c->a[1], ch) + F(c->a[2], ch);
      tset(c->ref, i, t == 2 && r < 0 ? 0 : r);
    }
    c->eval = t == 0;
  }
  tb_run(&b);
}

/* normalize over dims [axis, nd) of a; scale/bias broadcast over them (or
 * per channel dim 1 when per_channel) */
static void ref_norm(TCase *c, int nd, const int64_t *shape, int axis, double eps, DLTensor *scale, DLTensor *bias,
                     bool per_channel) {
  int64_t inner = 1, outer = 1;
  for (int d = 0; d < nd; d++) *(d < axis ? &outer : &inner) *= shape[d];
  for (int64_t o = 0; o < outer; o++) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < inner; i++) mean += F(c->a[0], o * inner + i);
    mean /= (double)inner;
    for (int64_t i = 0; i < inner; i++) {
      double d = F(c->a[0], o * inner + i) - mean;
      var += d * d;
    }
    var /= (double)inner;
    for (int64_t i = 0; i < inner; i++) {
      int64_t e = o * inner + i, idx[8];
      double r = (F(c->a[0], e) - mean) / sqrt(var + eps);
      unravel(e, nd, shape, idx);
      int64_t si = per_channel ? idx[1] : 0;
      if (!per_channel && scale) { /* broadcast over the trailing dims */
        int64_t sidx[8];
        for (int d = 0; d < scale->ndim; d++) {
          int od = d + nd - scale->ndim;
          sidx[d] = scale->shape[d] == 1 ? 0 : idx[od];
        }
        si = ravel(scale->ndim, scale->shape, sidx);
      }
      if (scale) r *= F(scale, si);
      if (bias) r += F(bias, si);
      tset(c->ref, e, r);
    }
  }
}

static void test_layer_norm(void) {
  TBatch b = {0};
  {
    int64_t shape[3] = {3, 7, 32};
    Tensor *x = ph("x", 3, shape, DT_F32), *s = ph("scale", 1, (int64_t[]){32}, DT_F32), *bi = ph("bias", 1, (int64_t[]){32}, DT_F32);
    TCase *c = tb_add(&b, "layer_norm last axis", 3, (Tensor *[]){x, s, bi}, topi_layer_norm(x, s, bi, -1, 1e-5), 1e-5);
    if (c) ref_norm(c, 3, shape, 2, 1e-5, c->a[1], c->a[2], false);
  }
  {
    int64_t shape[3] = {5, 3, 13};
    Tensor *x = ph("x", 3, shape, DT_F32), *s = ph("scale", 2, (int64_t[]){3, 13}, DT_F32), *bi = ph("bias", 2, (int64_t[]){3, 13}, DT_F32);
    TCase *c = tb_add(&b, "layer_norm two axes", 3, (Tensor *[]){x, s, bi}, topi_layer_norm(x, s, bi, 1, 1e-3), 1e-5);
    if (c) ref_norm(c, 3, shape, 1, 1e-3, c->a[1], c->a[2], false);
  }
  {
    int64_t shape[2] = {4, 40}; /* 8 partial lanes, folded to 4 */
    Tensor *x = ph("x", 2, shape, DT_F32);
    TCase *c = tb_add(&b, "layer_norm row of 40", 1, &x, topi_layer_norm(x, NULL, NULL, -1, 1e-5), 1e-5);
    if (c) ref_norm(c, 2, shape, 1, 1e-5, NULL, NULL, false);
  }
  {
    int64_t shape[3] = {2, 6, 197}; /* 16 partial lanes and a tail of 5 */
    Tensor *x = ph("x", 3, shape, DT_F32), *s = ph("scale", 1, (int64_t[]){197}, DT_F32), *bi = ph("bias", 1, (int64_t[]){197}, DT_F32);
    TCase *c = tb_add(&b, "layer_norm row of 197", 3, (Tensor *[]){x, s, bi}, topi_layer_norm(x, s, bi, -1, 1e-5), 1e-5);
    if (c) ref_norm(c, 3, shape, 2, 1e-5, c->a[1], c->a[2], false);
  }
  {
    int64_t shape[3] = {1, 10, 96}; /* two rows at a time, two vectors of partial lanes each */
    Tensor *x = ph("x", 3, shape, DT_F32), *s = ph("scale", 1, (int64_t[]){96}, DT_F32), *bi = ph("bias", 1, (int64_t[]){96}, DT_F32);
    TCase *c = tb_add(&b, "layer_norm row of 96, row pairs", 3, (Tensor *[]){x, s, bi}, topi_layer_norm(x, s, bi, -1, 1e-5), 1e-5);
    if (c) ref_norm(c, 3, shape, 2, 1e-5, c->a[1], c->a[2], false);
  }
  {
    int64_t shape[3] = {4, 5, 96}; /* odd rows per head: pairs of heads */
    Tensor *x = ph("x", 3, shape, DT_F32), *s = ph("scale", 1, (int64_t[]){96}, DT_F32), *bi = ph("bias", 1, (int64_t[]){96}, DT_F32);
    TCase *c = tb_add(&b, "layer_norm row of 96, head pairs", 3, (Tensor *[]){x, s, bi}, topi_layer_norm(x, s, bi, -1, 1e-5), 1e-5);
    if (c) ref_norm(c, 3, shape, 2, 1e-5, c->a[1], c->a[2], false);
  }
  for (int k = 0; k < 2; k++) {
    int64_t shape[2] = {k ? 6 : 4, k ? 197 : 64}; /* row pairs into an epilogue */
    Tensor *x = ph("x", 2, shape, DT_F32);
    Tensor *out = topi_unary(TOPI_gelu, topi_layer_norm(x, NULL, NULL, 1, 1e-5));
    TCase *c = tb_add(&b, kfmt("layer_norm row of %lld, row pairs, gelu", (long long)shape[1]), 1, &x, out, 1e-5);
    if (c) {
      ref_norm(c, 2, shape, 1, 1e-5, NULL, NULL, false);
      for (int64_t i = 0; i < numel(c->ref); i++) {
        double v = tget(c->ref, i);
        tset(c->ref, i, 0.5 * v * (1 + erf(v / sqrt(2.0))));
      }
    }
  }
  {
    int64_t shape[2] = {9, 11};
    Tensor *x = ph("x", 2, shape, DT_F32);
    Tensor *out = topi_unary(TOPI_gelu, topi_layer_norm(x, NULL, NULL, 1, 1e-5));
    TCase *c = tb_add(&b, "layer_norm no affine, gelu", 1, &x, out, 1e-5);
    if (c) {
      ref_norm(c, 2, shape, 1, 1e-5, NULL, NULL, false);
      for (int64_t i = 0; i < numel(c->ref); i++) {
        double v = tget(c->ref, i);
        tset(c->ref, i, 0.5 * v * (1 + erf(v / sqrt(2.0))));
      }
    }
  }
  {
    int64_t shape[4] = {2, 3, 5, 7};
    Tensor *x = ph("x", 4, shape, DT_F32), *s = ph("scale", 1, (int64_t[]){3}, DT_F32), *bi = ph("bias", 1, (int64_t[]){3}, DT_F32);
    TCase *c = tb_add(&b, "instance_norm", 3, (Tensor *[]){x, s, bi}, topi_instance_norm(x, s, bi, 1e-5), 1e-5);
    if (c) {
      ref_norm(c, 4, shape, 2, 1e-5, c->a[1], c->a[2], true);
      c->eval = true;
    }
  }
  {
    int64_t shape[3] = {4, 16, 64};
    Tensor *x = ph("x", 3, shape, DT_F32), *s = ph("scale", 1, (int64_t[]){16}, DT_F32), *bi = ph("bias", 1, (int64_t[]){16}, DT_F32);
    TCase *c = tb_add(&b, "instance_norm 1-D", 3, (Tensor *[]){x, s, bi}, topi_instance_norm(x, s, bi, 1e-5), 1e-5);
    if (c) ref_norm(c, 3, shape, 2, 1e-5, c->a[1], c->a[2], true);
  }
  tb_run(&b);
}

static void test_lrn(void) {
  TBatch b = {0};
  int sizes[] = {3, 4, 5};
  for (int t = 0; t < 3; t++) {
    int64_t shape[4] = {rnd_range(1, 2), rnd_range(3, 9), rnd_dim(), rnd_dim()};
    Tensor *x = ph("x", 4, shape, DT_F32);
    int size = sizes[t];
    double alpha = 1e-3 * (t + 1), beta = 0.75, bias = t == 2 ? 2 : 1;
    TCase *c = tb_add(&b, kfmt("lrn size %d", size), 1, &x, topi_lrn(x, size, alpha, beta, bias), 1e-5);
    if (!c) continue;
    fill_uniform(c->a[0], -5, 5);
    int64_t idx[4];
    for (int64_t i = 0; i < numel(c->ref); i++) {
      unravel(i, 4, shape, idx);
      int64_t ch = idx[1];
      double sq = 0;
      for (int64_t k = ch - (size - 1) / 2; k <= ch + size / 2; k++) {
        if (k < 0 || k >= shape[1]) continue;
        idx[1] = k;
        double v = F(c->a[0], ravel(4, shape, idx));
        sq += v * v;
      }
      tset(c->ref, i, F(c->a[0], i) / pow(bias + alpha / size * sq, beta));
    }
  }
  tb_run(&b);
}

/* ---- errors ---- */

static void test_nn_errors(void) {
  Tensor *d4 = ph("data", 4, (int64_t[]){1, 3, 8, 8}, DT_F32), *d3 = ph("data3", 3, (int64_t[]){3, 8, 8}, DT_F32);
  Tensor *w = ph("w", 4, (int64_t[]){4, 3, 3, 3}, DT_F32), *w3 = ph("w3", 3, (int64_t[]){4, 3, 3}, DT_F32);
  int64_t s1[2] = {1, 1}, p0[4] = {0, 0, 0, 0}, d1[2] = {1, 1};
  CHECK(topi_conv2d_nchw(d3, w, s1, p0, d1, 1) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "conv2d: data has 3 dimensions, expected 4 (NCHW)");
  CHECK(topi_conv2d_nchw(d4, w3, s1, p0, d1, 1) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "conv2d: weight has 3 dimensions, expected 4 (OIHW)");
  CHECK(topi_conv2d_nchw(d4, w, (int64_t[]){0, 1}, p0, d1, 1) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "conv2d: stride[0] = 0, expected a positive value");
  CHECK(topi_conv2d_nchw(d4, w, (int64_t[]){1, -2}, p0, d1, 1) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "stride[1] = -2");
  CHECK(topi_conv2d_nchw(d4, w, s1, (int64_t[]){0, -1, 0, 0}, d1, 1) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "padding[1] = -1 is negative");
  CHECK(topi_conv2d_nchw(d4, w, s1, p0, (int64_t[]){1, 0}, 1) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "dilation[1] = 0");
  CHECK(topi_conv2d_nchw(d4, w, s1, p0, d1, 2) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "groups = 2 does not divide the 3 input and 4 output channels");
  Tensor *w2 = ph("w2", 4, (int64_t[]){4, 2, 3, 3}, DT_F32);
  CHECK(topi_conv2d_nchw(d4, w2, s1, p0, d1, 1) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "weight has 2 input channels per group, expected 3");
  Tensor *big = ph("big", 4, (int64_t[]){4, 3, 9, 9}, DT_F32);
  CHECK(topi_conv2d_nchw(d4, big, s1, p0, d1, 1) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "does not fit the padded input 8x8");
  Tensor *wi = ph("wi", 4, (int64_t[]){4, 3, 3, 3}, DT_I32);
  CHECK(topi_conv2d_nchw(d4, wi, s1, p0, d1, 1) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "conv2d: 'data' is float32 but 'wi' is int32");
  CHECK(topi_conv2d_transpose_nchw(d4, w, (int64_t[]){2, 2}, p0, (int64_t[]){2, 0}, d1, 1) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "output_padding[0] = 2");
  Tensor *a = ph("a", 2, (int64_t[]){3, 5}, DT_F32), *bw = ph("bw", 2, (int64_t[]){4, 6}, DT_F32);
  CHECK(topi_dense(a, bw, NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "dense: data [3, 5] and weight [4, 6] disagree on K");
  CHECK(topi_dense(d4, bw, NULL) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "dense: data has 4 dimensions, expected 2");
  CHECK(topi_matmul(a, bw, false, false) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "matmul: shapes [3, 5] and [4, 6] do not agree on the contracted dimension");
  Tensor *b3a = ph("x", 3, (int64_t[]){2, 3, 4}, DT_F32), *b3b = ph("y", 3, (int64_t[]){3, 4, 5}, DT_F32);
  CHECK(topi_matmul(b3a, b3b, false, false) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "matmul: cannot broadcast shapes");
  CHECK(topi_batch_matmul(b3a, b3b, false, false) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "batch_matmul: batch sizes 2 and 3 differ");
  int64_t k2[2] = {2, 2}, s2[2] = {2, 2};
  CHECK(topi_pool2d(d4, TOPI_POOL_MAX, k2, s2, d1, p0, false, false, "NCW") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "data has 4 dimensions but layout 'NCW' has 3");
  CHECK(topi_pool2d(d4, TOPI_POOL_MAX, k2, s2, d1, p0, false, false, "NCHX") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "layout 'NCHX' has no H or W axis");
  CHECK(topi_pool2d(d4, TOPI_POOL_MAX, k2, s2, d1, p0, false, false, "NCH4w") == NULL);
  CHECK(topi_pool2d(d4, TOPI_POOL_AVG, (int64_t[]){0, 2}, s2, d1, p0, false, false, "NCHW") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "avg_pool2d: kernel[0] = 0");
  CHECK(topi_pool2d(d4, TOPI_POOL_MAX, (int64_t[]){9, 2}, s2, d1, p0, false, false, "NCHW") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "max_pool2d: the H window 9 is larger than the padded input 8");
  CHECK(topi_pool2d(d4, TOPI_POOL_MAX, k2, s2, d1, p0, false, false, "NC16HW") == NULL);
  CHECK_CONTAINS(kiln_get_error(), "primal axis 'H' cannot have a factor");
  CHECK(topi_softmax(d4, 4) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "softmax: axis 4 is out of range for a tensor of rank 4");
  Tensor *ii = ph("ii", 2, (int64_t[]){2, 3}, DT_I32);
  CHECK(topi_softmax(ii, 1) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "softmax: expected a float tensor, got int32");
  Tensor *g = ph("g", 1, (int64_t[]){4}, DT_F32);
  CHECK(topi_batch_norm(d4, g, g, g, g, 1, 1e-5) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "batch_norm: gamma has 4 elements, expected 3");
  Tensor *sc = ph("scale", 1, (int64_t[]){5}, DT_F32);
  CHECK(topi_layer_norm(d4, sc, NULL, -1, 1e-5) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "layer_norm: scale shape [5] does not broadcast to the normalized shape [8]");
  CHECK(topi_lrn(d4, 0, 1, 1, 1) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "lrn: size = 0");
  CHECK(topi_pad(d4, (int64_t[]){0, 0, 8, 0, 0, 0, 0, 0}, TOPI_PAD_REFLECT, 0) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "pad: reflect padding of dimension 2 (size 8) by 8, 0");
  CHECK(topi_pad(d4, (int64_t[]){0, 0, -5, 0, 0, 0, -4, 0}, TOPI_PAD_CONSTANT, 0) == NULL);
  CHECK_CONTAINS(kiln_get_error(), "crop dimension 2 (size 8) below zero");
  /* a symbolic batch is fine */
  Expr *n = ir_var("n", DT_I32);
  Tensor *ds = te_placeholder("ds", 4, (Expr *[]){n, ir_i32(3), ir_i32(8), ir_i32(8)}, DT_F32);
  Tensor *cs = topi_conv2d_nchw(ds, w, s1, p0, d1, 1);
  CHECK_NN(cs);
  if (cs) CHECK(cs->shape[0] == n);
  Tensor *hs = te_placeholder("hs", 4, (Expr *[]){ir_i32(1), ir_i32(3), n, ir_i32(8)}, DT_F32);
  /* and so is a symbolic height: the output's is an expression of it */
  Tensor *hc = topi_conv2d_nchw(hs, w, s1, p0, d1, 1);
  CHECK_NN(hc);
  if (hc) CHECK_STR(ir_expr_str(hc->shape[2]), "(n - 2)"); /* 3x3, no padding */
}

/* The fused conv + epilogue computes the conv one output row at a time. */
static void test_conv_fused_schedule(void) {
  Tensor *data = ph("data", 4, (int64_t[]){1, 16, 14, 32}, DT_F32), *w = ph("w", 4, (int64_t[]){32, 16, 3, 3}, DT_F32);
  Tensor *bias = ph("bias", 3, (int64_t[]){32, 1, 1}, DT_F32);
  Tensor *conv = topi_conv2d_nchw(data, w, (int64_t[]){1, 1}, (int64_t[]){1, 1, 1, 1}, (int64_t[]){1, 1}, 1);
  Tensor *out = topi_unary(TOPI_relu, topi_binary(TOPI_add, conv, bias));
  Schedule *s = te_create_schedule(1, &out);
  CHECK_OK(topi_schedule_generic(s, 1, &out));
  LoweredFunc *f = kiln_lower(s, 4, (Tensor *[]){data, w, bias, out}, "f", NULL);
  CHECK_NN(f);
  if (!f) return;
  const char *txt = kiln_lowered_str(f);
  CHECK_CONTAINS(txt, "parallel (");
  CHECK_CONTAINS(txt, "produce pad_data");
  CHECK_CONTAINS(txt, "ramp(");
  Stage *cs = sch_stage(s, conv);
  CHECK(cs && cs->attach == ATTACH_SCOPE);
}

/* An average pool over NCHW16c takes pool_blocked as a max pool does:
 * (c, h) is the parallel loop and the row a loop of blocks of 7 columns
 * (the largest count up to 8 that divides 28), whose sums are a local
 * block of 7 x 16 floats divided as they are stored; no read divides by
 * the row length (a 3x3 pool over 28x28 rows ran 1.7x slower that way);
 * the window's columns are unrolled (neighbouring columns' taps read the
 * same input vectors), its rows a loop. */
static void test_pool_schedule(void) {
  Tensor *data = ph("data", 5, (int64_t[]){1, 3, 28, 28, 16}, DT_F32);
  Tensor *out = topi_pool2d(data, TOPI_POOL_AVG, (int64_t[]){3, 3}, (int64_t[]){1, 1}, (int64_t[]){1, 1},
                            (int64_t[]){1, 1, 1, 1}, false, false, "NCHW16c");
  Schedule *s = te_create_schedule(1, &out);
  CHECK_OK(topi_schedule_generic(s, 1, &out));
  LoweredFunc *f = kiln_lower(s, 2, (Tensor *[]){data, out}, "f", NULL);
  CHECK_NN(f);
  if (!f) return;
  const char *txt = kiln_lowered_str(f);
  CHECK_CONTAINS(txt, "parallel (i.j.fused.k.fused, 0, 84) {");
  CHECK_CONTAINS(txt, "for (l.outer, 0, 4) {");
  CHECK_CONTAINS(txt, "allocate T_pool_sum[float32 * 112]");
  CHECK(!strstr(txt, " / 28") && !strstr(txt, " % 28)) * 16"));
  CHECK_CONTAINS(txt, "for (rv0, 0, 3)");
  CHECK_MSG(!strstr(txt, "for (rv1"), "the window's columns are a loop:\n%s", txt);
}

/* Fused groups as the graph layer makes them: an anchor, injective
 * producers inlined into it, an elementwise chain after it.  The
 * reference is topi_eval of the same graph (each op has its own direct
 * reference above). */
static void test_fused_groups(void) {
  TBatch b = {0};
  int64_t s1[2] = {1, 1}, p1[4] = {1, 1, 1, 1}, p0[4] = {0, 0, 0, 0};
  {
    Tensor *x = ph("x", 4, (int64_t[]){1, 8, 10, 16}, DT_F32), *w = ph("w", 4, (int64_t[]){16, 8, 3, 3}, DT_F32);
    Tensor *sc = ph("scale", 3, (int64_t[]){16, 1, 1}, DT_F32), *res = ph("res", 4, (int64_t[]){1, 16, 10, 16}, DT_F32);
    Tensor *c = topi_conv2d_nchw(topi_unary(TOPI_relu, x), w, s1, p1, s1, 1);
    Tensor *o = topi_unary(TOPI_relu, topi_binary(TOPI_add, topi_binary(TOPI_multiply, c, sc), res));
    TCase *k = tb_add(&b, "relu -> conv -> scale -> +residual -> relu", 4, (Tensor *[]){x, w, sc, res}, o, 1e-5);
    tb_ref_eval(k);
  }
  {
    Tensor *x = ph("x", 4, (int64_t[]){2, 6, 9, 9}, DT_F32), *w = ph("w", 4, (int64_t[]){6, 1, 3, 3}, DT_F32);
    Tensor *o = topi_clip(topi_conv2d_nchw(x, w, (int64_t[]){2, 2}, p1, s1, 6), 0, 6);
    TCase *k = tb_add(&b, "depthwise -> relu6", 2, (Tensor *[]){x, w}, o, 1e-5);
    tb_ref_eval(k);
  }
  {
    Tensor *x = ph("x", 4, (int64_t[]){1, 4, 12, 12}, DT_F32);
    Tensor *o = topi_pool2d(topi_unary(TOPI_relu, x), TOPI_POOL_MAX, (int64_t[]){3, 3}, (int64_t[]){2, 2}, s1, p1,
                            false, false, "NCHW");
    TCase *k = tb_add(&b, "relu -> max_pool", 1, &x, o, 1e-6);
    tb_ref_eval(k);
  }
  {
    Tensor *x = ph("x", 2, (int64_t[]){5, 64}, DT_F32), *w = ph("w", 2, (int64_t[]){32, 64}, DT_F32);
    Tensor *bi = ph("bias", 1, (int64_t[]){32}, DT_F32);
    Tensor *o = topi_unary(TOPI_gelu, topi_dense(x, w, bi));
    TCase *k = tb_add(&b, "dense -> bias -> gelu", 3, (Tensor *[]){x, w, bi}, o, 1e-5);
    tb_ref_eval(k);
  }
  {
    Tensor *q = ph("q", 3, (int64_t[]){4, 7, 32}, DT_F32), *kk = ph("k", 3, (int64_t[]){4, 9, 32}, DT_F32);
    Tensor *scl = ph("s", 0, NULL, DT_F32);
    Tensor *o = topi_binary(TOPI_divide, topi_batch_matmul(q, kk, false, true), scl);
    TCase *k = tb_add(&b, "attention scores / sqrt(d)", 3, (Tensor *[]){q, kk, scl}, o, 1e-5);
    if (k) fill_uniform(k->a[2], 2, 3);
    tb_ref_eval(k);
  }
  {
    Tensor *x = ph("x", 3, (int64_t[]){3, 5, 16}, DT_F32), *m = ph("m", 1, (int64_t[]){16}, DT_F32);
    Tensor *d = topi_binary(TOPI_subtract, x, m);
    Tensor *o = topi_reduce(TOPI_REDUCE_mean, topi_binary(TOPI_multiply, d, d), 1, (int64_t[]){-1}, true);
    TCase *k = tb_add(&b, "(x - m)^2 -> mean", 2, (Tensor *[]){x, m}, o, 1e-5);
    tb_ref_eval(k);
  }
  {
    Tensor *x = ph("x", 4, (int64_t[]){2, 3, 4, 5}, DT_F32);
    Tensor *o = topi_binary(TOPI_add, topi_reshape(topi_transpose(x, (int64_t[]){0, 2, 1, 3}), 3, (int64_t[]){2, 4, 15}),
                            topi_unary(TOPI_exp, topi_reshape(x, 3, (int64_t[]){2, 4, 15})));
    TCase *k = tb_add(&b, "transpose -> reshape -> add", 1, &x, o, 1e-6);
    tb_ref_eval(k);
  }
  {
    Tensor *x = ph("x", 2, (int64_t[]){6, 40}, DT_F32), *w = ph("w", 2, (int64_t[]){40, 24}, DT_F32);
    Tensor *o = topi_softmax(topi_matmul(x, w, false, false), -1);
    TCase *k = tb_add(&b, "matmul, then softmax (separate groups in a graph; one here)", 2, (Tensor *[]){x, w}, o, 1e-5);
    tb_ref_eval(k);
  }
  {
    Tensor *x = ph("x", 4, (int64_t[]){1, 2, 7, 7}, DT_F32), *w = ph("w", 4, (int64_t[]){2, 3, 3, 3}, DT_F32);
    Tensor *o = topi_unary(TOPI_sigmoid, topi_conv2d_transpose_nchw(x, w, (int64_t[]){2, 2}, p1, (int64_t[]){1, 1}, s1, 1));
    TCase *k = tb_add(&b, "conv2d_transpose -> sigmoid", 2, (Tensor *[]){x, w}, o, 1e-5);
    tb_ref_eval(k);
  }
  {
    Tensor *x = ph("x", 4, (int64_t[]){1, 32, 6, 6}, DT_F32);
    Tensor *o = topi_layout_transform(topi_unary(TOPI_tanh, topi_layout_transform(x, "NCHW", "NCHW16c")), "NCHW16c", "NCHW");
    TCase *k = tb_add(&b, "layout -> tanh -> layout", 1, &x, o, 1e-6);
    tb_ref_eval(k);
  }
  {
    Tensor *x = ph("x", 3, (int64_t[]){2, 9, 20}, DT_F32);
    Tensor *o = topi_binary(TOPI_multiply, topi_layer_norm(x, NULL, NULL, -1, 1e-5), topi_unary(TOPI_sigmoid, x));
    TCase *k = tb_add(&b, "layer_norm -> * sigmoid(x)", 1, &x, o, 1e-5);
    tb_ref_eval(k);
  }
  {
    Tensor *x = ph("x", 4, (int64_t[]){1, 3, 8, 8}, DT_F32), *w = ph("w", 4, (int64_t[]){4, 3, 1, 1}, DT_F32);
    Tensor *o = topi_flatten(topi_global_pool2d(topi_conv2d_nchw(x, w, s1, p0, s1, 1), TOPI_POOL_AVG, "NCHW"), 1);
    TCase *k = tb_add(&b, "conv (own group) -> global avg -> flatten", 2, (Tensor *[]){x, w}, o, 1e-5);
    tb_ref_eval(k);
  }
  tb_run(&b);
}

/* ---- random fused groups ---- */

typedef struct Grp {
  int nin;
  Tensor *in[8];
} Grp;

static Tensor *grp_in(Grp *g, const char *name, int nd, const int64_t *shape) {
  Tensor *t = ph(kfmt("%s%d", name, g->nin), nd, shape, DT_F32);
  KASSERT(g->nin < 8);
  g->in[g->nin++] = t;
  return t;
}

/* A random bounded elementwise op on x (maybe with a new broadcast input). */
static Tensor *rnd_elemwise(Grp *g, Tensor *x) {
  static const TopiUnary un[] = {TOPI_relu, TOPI_sigmoid, TOPI_tanh, TOPI_negative, TOPI_abs, TOPI_softsign};
  int64_t shape[8];
  switch (test_rand() % 6) {
  case 0:
  case 1: return topi_unary(un[test_rand() % 6], x);
  case 2: return topi_clip(x, -0.5, 0.7);
  case 3: return topi_binary(TOPI_multiply, x, x);
  case 4: { /* a bias over a trailing part of the shape */
    int keep = x->ndim ? (int)(test_rand() % (unsigned)x->ndim) + 1 : 0;
    for (int d = 0; d < keep; d++) {
      int64_t v = te_dim(x, x->ndim - keep + d);
      shape[d] = test_rand() % 3 == 0 ? 1 : v;
    }
    return topi_binary(TOPI_add, x, grp_in(g, "b", keep, shape));
  }
  default: {
    for (int d = 0; d < x->ndim; d++) shape[d] = te_dim(x, d);
    return topi_binary(TOPI_subtract, grp_in(g, "r", x->ndim, shape), x);
  }
  }
}

static Tensor *rnd_anchor(Grp *g, const char **what) {
  int64_t s1[2] = {1, 1};
  int k = (int)(test_rand() % 12);
  int64_t N = rnd_range(1, 2), C = rnd_range(1, 6), H = rnd_range(3, 10), W = test_rand() % 3 == 0 ? 16 : rnd_range(3, 10);
  switch (k) {
  case 0: case 1: {
    int64_t F = rnd_range(1, 8), K = rnd_range(1, 3), st = rnd_range(1, 2), p = rnd_range(0, 1);
    Tensor *x = grp_in(g, "x", 4, (int64_t[]){N, C, H, W});
    if (test_rand() % 2) x = rnd_elemwise(g, x);
    *what = "conv2d";
    return topi_conv2d_nchw(x, grp_in(g, "w", 4, (int64_t[]){F, C, K, K}), (int64_t[]){st, st}, (int64_t[]){p, p, p, p}, s1, 1);
  }
  case 2: {
    Tensor *x = grp_in(g, "x", 4, (int64_t[]){N, C, H, W});
    *what = "depthwise";
    return topi_conv2d_nchw(x, grp_in(g, "w", 4, (int64_t[]){C, 1, 3, 3}), s1, (int64_t[]){1, 1, 1, 1}, s1, (int)C);
  }
  case 3: {
    int64_t M = rnd_dim(), Nn = rnd_dim(), K = test_rand() % 2 ? 32 : rnd_dim();
    Tensor *x = grp_in(g, "x", 2, (int64_t[]){M, K});
    if (test_rand() % 2) x = rnd_elemwise(g, x);
    *what = "dense";
    return topi_dense(x, grp_in(g, "w", 2, (int64_t[]){Nn, K}), NULL);
  }
  case 4: {
    int64_t M = rnd_dim(), Nn = rnd_dim(), K = rnd_dim();
    *what = "matmul";
    return topi_matmul(grp_in(g, "x", 3, (int64_t[]){2, M, K}), grp_in(g, "y", 2, (int64_t[]){K, Nn}), false, false);
  }
  case 5: {
    int64_t M = rnd_dim(), Nn = rnd_dim(), K = test_rand() % 2 ? 16 * rnd_range(2, 3) : rnd_dim();
    *what = "batch_matmul";
    return topi_batch_matmul(grp_in(g, "x", 3, (int64_t[]){2, M, K}), grp_in(g, "y", 3, (int64_t[]){2, Nn, K}), false, true);
  }
  case 6: {
    Tensor *x = grp_in(g, "x", 4, (int64_t[]){N, C, H, W});
    if (test_rand() % 2) x = rnd_elemwise(g, x);
    *what = "pool";
    return topi_pool2d(x, test_rand() % 2 ? TOPI_POOL_MAX : TOPI_POOL_AVG, (int64_t[]){2, 3}, (int64_t[]){2, 1}, s1,
                       (int64_t[]){1, 1, 0, 1}, test_rand() % 2, test_rand() % 2, "NCHW");
  }
  case 7: {
    Tensor *x = grp_in(g, "x", 5, (int64_t[]){N, 2, H, W, 8});
    *what = "pool NCHW8c";
    return topi_global_pool2d(x, TOPI_POOL_AVG, "NCHW8c");
  }
  case 8: {
    Tensor *x = grp_in(g, "x", 3, (int64_t[]){N, C, W});
    *what = "softmax";
    return test_rand() % 2 ? topi_softmax(x, (int)(test_rand() % 3)) : topi_log_softmax(x, -1);
  }
  case 9: {
    Tensor *x = grp_in(g, "x", 3, (int64_t[]){N, C, W});
    *what = "layer_norm";
    return topi_layer_norm(x, NULL, NULL, (int)rnd_range(1, 2), 1e-5);
  }
  case 10: {
    Tensor *x = grp_in(g, "x", 3, (int64_t[]){N, C, W});
    if (test_rand() % 2) x = rnd_elemwise(g, x);
    int64_t ax = (int64_t)(test_rand() % 3);
    *what = "reduce";
    return topi_reduce((TopiReduce)(test_rand() % 2 ? TOPI_REDUCE_sum : TOPI_REDUCE_mean), x, 1, &ax, test_rand() % 2);
  }
  default: {
    Tensor *x = grp_in(g, "x", 3, (int64_t[]){N, C, W});
    *what = "injective";
    Tensor *t = topi_transpose(rnd_elemwise(g, x), (int64_t[]){2, 0, 1});
    return topi_pad(t, (int64_t[]){1, 0, 0, 0, 1, 2}, TOPI_PAD_CONSTANT, 0.5);
  }
  }
}

static void test_fused_random(void) {
  TBatch b = {0};
  int ntests = getenv("TOPI_FUZZ") ? atoi(getenv("TOPI_FUZZ")) : 40;
  for (int t = 0; t < ntests; t++) {
    Grp g = {0, {NULL}};
    const char *what = "?";
    Tensor *o = rnd_anchor(&g, &what);
    int nsuffix = (int)(test_rand() % 4);
    StrBuf lbl = {0};
    sb_printf(&lbl, "random group %d: %s", t, what);
    for (int i = 0; i < nsuffix && o; i++) {
      o = rnd_elemwise(&g, o);
      if (o) sb_printf(&lbl, " -> %s", o->name);
    }
    TCase *c = tb_add(&b, kstrdup(lbl.data), g.nin, g.in, o, 1e-5);
    sb_free(&lbl);
    tb_ref_eval(c);
    if (b.n == 20) tb_run(&b);
  }
  tb_run(&b);
}

const TestCase topi_nn_tests[] = {
    {"conv2d", test_conv2d},
    {"depthwise", test_depthwise},
    {"conv2d_transpose", test_conv2d_transpose},
    {"dense", test_dense},
    {"matmul", test_matmul},
    {"batch_matmul", test_batch_matmul},
    {"pool2d", test_pool2d},
    {"pool_schedule", test_pool_schedule},
    {"adaptive_pool", test_adaptive_pool},
    {"softmax", test_softmax},
    {"row_fold", test_row_fold},
    {"batch_norm", test_batch_norm},
    {"layer_norm", test_layer_norm},
    {"lrn", test_lrn},
    {"errors", test_nn_errors},
    {"conv_fused_schedule", test_conv_fused_schedule},
    {"fused_groups", test_fused_groups},
    {"fused_random", test_fused_random},
    {NULL, NULL},
};
