/*
 * export_c_files.c - the files around an exported model's C: its weights,
 * the Makefile, a CMake snippet, the example main.c and metadata.json.
 *
 * Weights embedded in C are string literals, one union per weight (its
 * bytes, and its elements as the kernels read them): a compiler reads a
 * string of octal escapes five to ten times faster than the same bytes as
 * a list of numbers (4 MB of floats: gcc 1.0 s vs 6.6 s, clang 0.5 s vs
 * 3.8 s here), and a union read through its other member is C99's way to
 * reinterpret bytes.  The literals are split into files of at most
 * CHUNK_BYTES that a parallel make compiles at once.  The bytes are
 * little-endian; the files refuse to compile on a big-endian target.
 *
 * With --weights separate they go to NAME.bin instead: a 64-byte header
 * ("KILNWTS1", the payload size, the payload's FNV-1a 64, the export's
 * checksum) and every weight at its 64-byte aligned offset.
 */
#include "export_c.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES (16 << 20)

uint64_t cexport_fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

const void *cexport_weight_data(const CExport *x, int i) { return x->weight_nodes[i]->value->data; }

const char *cexport_ctype(DType t) {
  if (dt_is_bool(t)) return "int8_t";
  switch (t.code) {
  case kDLFloat:
    return t.bits == 64 ? "double" : "float";
  case kDLInt:
    return t.bits == 8 ? "int8_t" : t.bits == 16 ? "int16_t" : t.bits == 32 ? "int32_t" : "int64_t";
  default:
    return t.bits == 8 ? "uint8_t" : t.bits == 16 ? "uint16_t" : t.bits == 32 ? "uint32_t" : "uint64_t";
  }
}

const char *cexport_npy_descr(DType t) {
  if (dt_is_bool(t)) return "|b1";
  char c = t.code == kDLFloat ? 'f' : t.code == kDLInt ? 'i' : 'u';
  return kfmt("%c%c%d", t.bits == 8 ? '|' : '<', c, t.bits / 8);
}

static const char *little_endian_guard =
    "#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__\n"
    "#error \"the embedded weights are little-endian: export with --weights separate and swap NAME.bin\"\n"
    "#endif\n"
    "#if defined(__GNUC__) || defined(__clang__)\n#define KILN_ALIGN64 __attribute__((aligned(64)))\n"
    "/* C99 promises strings of 4095 characters; GCC and Clang take any length */\n"
    "#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n"
    "#else\n#define KILN_ALIGN64\n#endif\n\n";

/* Bytes as a C string literal, about 96 source columns a line: printable
 * characters as themselves, the others as the shortest octal escape unless
 * an octal digit follows.  (A weight is tens of megabytes: no printf per
 * byte.) */
static void string_literal(StrBuf *sb, const unsigned char *p, int64_t n) {
  char line[128];
  int len = 0;
  sb_putc(sb, '"');
  for (int64_t i = 0; i < n; i++) {
    unsigned ch = p[i];
    if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\' && ch != '?') {
      line[len++] = (char)ch;
    } else {
      bool digit_next = i + 1 < n && p[i + 1] >= '0' && p[i + 1] <= '7';
      line[len++] = '\\';
      if (digit_next || ch >= 64) line[len++] = (char)('0' + (ch >> 6));
      if (digit_next || ch >= 8) line[len++] = (char)('0' + ((ch >> 3) & 7));
      line[len++] = (char)('0' + (ch & 7));
    }
    if (len >= 96 && i + 1 < n) {
      line[len++] = '"';
      line[len++] = '\n';
      line[len++] = '"';
      sb_putn(sb, line, (size_t)len);
      len = 0;
    }
  }
  sb_putn(sb, line, (size_t)len);
  sb_putc(sb, '"');
}

int cexport_write_weights(CExport *x, AVec *files) {
  /* the checksum runs over the payload as NAME.bin holds it */
  static const unsigned char zeros[CEXPORT_ALIGN];
  uint64_t payload = CEXPORT_FNV_INIT;
  for (int i = 0; i < x->nweights; i++) {
    int64_t b = x->weights[i].bytes, pad = (b + CEXPORT_ALIGN - 1) / CEXPORT_ALIGN * CEXPORT_ALIGN - b;
    x->checksum = cexport_fnv(x->checksum, cexport_weight_data(x, i), (size_t)b);
    x->checksum = cexport_fnv(x->checksum, zeros, (size_t)pad);
    payload = cexport_fnv(payload, cexport_weight_data(x, i), (size_t)b);
    payload = cexport_fnv(payload, zeros, (size_t)pad);
  }
  if (x->opt->separate_weights) {
    const char *path = kfmt("%s/%s.bin", x->dir, x->prefix);
    FILE *f = fopen(path, "wb");
    if (!f) return kiln_set_error("cannot write %s", path);
    unsigned char head[CEXPORT_BIN_HEADER];
    memset(head, 0, sizeof head);
    memcpy(head, "KILNWTS1", 8);
    for (int b = 0; b < 8; b++) {
      head[8 + b] = (unsigned char)((uint64_t)x->weights_bytes >> (8 * b));
      head[16 + b] = (unsigned char)(payload >> (8 * b));
      head[24 + b] = (unsigned char)(x->checksum >> (8 * b));
    }
    snprintf((char *)head + 32, 32, "%s", x->prefix);
    bool ok = fwrite(head, 1, sizeof head, f) == sizeof head;
    for (int i = 0; i < x->nweights && ok; i++) {
      int64_t b = x->weights[i].bytes, pad = (b + CEXPORT_ALIGN - 1) / CEXPORT_ALIGN * CEXPORT_ALIGN - b;
      ok = fwrite(cexport_weight_data(x, i), 1, (size_t)b, f) == (size_t)b && fwrite(zeros, 1, (size_t)pad, f) == (size_t)pad;
    }
    if (fclose(f) || !ok) return kiln_set_error("cannot write %s (disk full?)", path);
    return 0;
  }
  int chunk = 0;
  for (int i = 0; i < x->nweights;) {
    StrBuf sb = {0};
    const char *fname = kfmt("%s_weights%d.c", x->prefix, chunk);
    sb_printf(&sb, "/* %s - weights of %s (Kiln %s), %s */\n#include <stdint.h>\n\n", fname, x->prefix, KILN_VERSION_STRING,
              "little-endian, read through each union's second member");
    sb_puts(&sb, little_endian_guard);
    int64_t in_chunk = 0;
    for (; i < x->nweights && (in_chunk == 0 || in_chunk + x->weights[i].bytes <= CHUNK_BYTES); i++) {
      CTensor *w = &x->weights[i];
      int64_t n = ttype_numel(&w->type);
      sb_printf(&sb, "/* %s: %s */\n", w->name, dt_str(w->type.dtype));
      sb_printf(&sb, "const union %s_w%d { unsigned char b[%lld]; %s v[%lld]; } %s_w%d KILN_ALIGN64 = {\n", x->prefix, i,
                (long long)w->bytes, cexport_ctype(w->type.dtype), (long long)n, x->prefix, i);
      string_literal(&sb, cexport_weight_data(x, i), w->bytes);
      sb_puts(&sb, "};\n\n");
      in_chunk += w->bytes;
    }
    int rc = kiln_write_file(kfmt("%s/%s", x->dir, fname), sb.data, sb.len);
    sb_free(&sb);
    if (rc) return rc;
    av_push(files, (void *)fname);
    chunk++;
  }
  return 0;
}

/* ---- Makefile, CMakeLists.txt ---- */

const char *cexport_isa_flags(int isa) {
  switch ((CExportIsa)isa) {
  case CEXPORT_ISA_NATIVE:
    return "-march=native";
  case CEXPORT_ISA_AVX2:
    return "-mavx2 -mfma";
  case CEXPORT_ISA_AVX512:
    return "-mavx512f -mavx512vl -mavx512bw -mavx512dq -mfma";
  case CEXPORT_ISA_GENERIC:
    break;
  }
  return "";
}

static const char *thread_flags(CThreads t) {
  return t == CTHREADS_PTHREADS ? "-pthread" : t == CTHREADS_OPENMP ? "-fopenmp" : "";
}

static int write_makefile(CExport *x, AVec *srcs) {
  StrBuf sb = {0};
  const CExportOptions *o = x->opt;
  const char *P = x->prefix;
  sb_printf(&sb,
            "# Makefile - build lib%s.a and the example program from the exported C (GNU make).\n"
            "#   make                  # ./example IN.npy ... OUT.npy ...\n"
            "#   make CC=clang         # any C99 compiler%s\n\n",
            P, o->isa == CEXPORT_ISA_GENERIC ? "" : " that knows GCC vector extensions (gcc, clang)");
  sb_puts(&sb, "CC ?= cc\nAR ?= ar\nCFLAGS ?= -O3 -std=c99 -fno-math-errno -fno-trapping-math\n");
  sb_printf(&sb, "# flags the generated code needs: its instruction set, its threads, and fused\n"
                 "# multiply-adds (GCC's ISO modes such as -std=c99 leave them off; the shared\n"
                 "# library's -std=gnu11 has them on); -Wno-psabi: GCC notes how wide vectors pass\n"
                 "# between functions, which here are static\n");
  sb_printf(&sb, "KILN_FLAGS = %s %s -ffp-contract=fast%s\n", x->isa_flags, thread_flags(o->threads),
            o->isa == CEXPORT_ISA_GENERIC ? "" : " -Wno-psabi");
  sb_printf(&sb, "# the model itself: %s\n",
            o->freestanding ? "freestanding (no C library at all)" : "the C library's math.h and string.h");
  sb_printf(&sb, "MODEL_FLAGS = %s\n", o->freestanding ? "-ffreestanding" : "");
  sb_printf(&sb, "LDLIBS ?= %s\n\n", o->freestanding ? "" : "-lm");
  sb_puts(&sb, "MODEL_SRCS =");
  for (int i = 0; i < srcs->len; i++) sb_printf(&sb, " %s", (const char *)srcs->data[i]);
  sb_puts(&sb, "\nMODEL_OBJS = $(MODEL_SRCS:.c=.o)\n\n");
  sb_printf(&sb, "all: example\n\nexample: main.o lib%s.a\n\t$(CC) $(CFLAGS) $(KILN_FLAGS) $(LDFLAGS) -o $@ main.o lib%s.a $(LDLIBS)\n\n", P, P);
  sb_printf(&sb, "lib%s.a: $(MODEL_OBJS)\n\t$(AR) rcs $@ $(MODEL_OBJS)\n\n", P);
  sb_printf(&sb, "main.o: main.c %s.h\n\t$(CC) $(CFLAGS) -c -o $@ main.c\n\n", P);
  sb_printf(&sb, "%%.o: %%.c %s.h\n\t$(CC) $(CFLAGS) $(KILN_FLAGS) $(MODEL_FLAGS) -c -o $@ $<\n\n", P);
  sb_printf(&sb, "clean:\n\trm -f example main.o lib%s.a $(MODEL_OBJS)\n\n.PHONY: all clean\n", P);
  int rc = kiln_write_file(kfmt("%s/Makefile", x->dir), sb.data, sb.len);
  sb_free(&sb);
  return rc;
}

static int write_cmake(CExport *x, AVec *srcs) {
  StrBuf sb = {0};
  const CExportOptions *o = x->opt;
  const char *P = x->prefix;
  sb_printf(&sb,
            "# CMakeLists.txt - %s as a static library (and its example): add_subdirectory() it\n"
            "# from a project and link %s, or build it on its own.\n"
            "cmake_minimum_required(VERSION 3.13)\nproject(%s C)\n\n",
            P, P, P);
  sb_printf(&sb, "add_library(%s STATIC", P);
  for (int i = 0; i < srcs->len; i++) sb_printf(&sb, " %s", (const char *)srcs->data[i]);
  sb_printf(&sb, ")\ntarget_include_directories(%s PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})\n", P);
  sb_printf(&sb, "set_target_properties(%s PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON)\n", P);
  const char *flags = kfmt("%s%s%s%s", x->isa_flags, o->freestanding ? " -ffreestanding" : "",
                           " -O3 -fno-math-errno -fno-trapping-math -ffp-contract=fast",
                           o->isa == CEXPORT_ISA_GENERIC ? "" : " -Wno-psabi");
  sb_printf(&sb, "if(CMAKE_C_COMPILER_ID MATCHES \"GNU|Clang\")\n  separate_arguments(KILN_%s_FLAGS UNIX_COMMAND \"%s\")\n"
                 "  target_compile_options(%s PRIVATE ${KILN_%s_FLAGS})\nendif()\n",
            x->upper, flags, P, x->upper);
  if (!o->freestanding) sb_printf(&sb, "if(UNIX)\n  target_link_libraries(%s PUBLIC m)\nendif()\n", P);
  if (o->threads == CTHREADS_PTHREADS)
    sb_printf(&sb, "find_package(Threads REQUIRED)\ntarget_link_libraries(%s PUBLIC Threads::Threads)\n", P);
  if (o->threads == CTHREADS_OPENMP)
    sb_printf(&sb, "find_package(OpenMP REQUIRED)\ntarget_link_libraries(%s PUBLIC OpenMP::OpenMP_C)\n", P);
  sb_printf(&sb, "\nadd_executable(%s_example main.c)\ntarget_link_libraries(%s_example PRIVATE %s)\n", P, P, P);
  int rc = kiln_write_file(kfmt("%s/CMakeLists.txt", x->dir), sb.data, sb.len);
  sb_free(&sb);
  return rc;
}

/* ---- main.c ---- */

static const char *main_npy_io =
    "/* A .npy file (format 1.0-3.0, C order) of the given dtype and shape into data. */\n"
    "static int read_npy(const char *path, const char *descr, int ndim, const long long *shape, void *data, size_t bytes) {\n"
    "  unsigned char pre[12];\n  char *head, *p;\n  size_t hlen, n;\n  int d, ok;\n"
    "  FILE *f = fopen(path, \"rb\");\n"
    "  if (!f) return fprintf(stderr, \"cannot open %s\\n\", path), -1;\n"
    "  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, \"\\223NUMPY\", 6)) {\n"
    "    fclose(f);\n    return fprintf(stderr, \"%s: not a .npy file\\n\", path), -1;\n  }\n"
    "  hlen = pre[8] | (size_t)pre[9] << 8;\n"
    "  if (pre[6] >= 2) {\n    if (fread(pre + 10, 1, 2, f) != 2) { fclose(f); return -1; }\n"
    "    hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;\n  }\n"
    "  head = (char *)malloc(hlen + 1);\n"
    "  if (!head || fread(head, 1, hlen, f) != hlen) { free(head); fclose(f); return fprintf(stderr, \"%s: truncated\\n\", path), -1; }\n"
    "  head[hlen] = 0;\n"
    "  ok = strstr(head, descr) != NULL && strstr(head, \"'fortran_order': False\") != NULL;\n"
    "  p = strstr(head, \"'shape': (\");\n"
    "  if (!ok || !p) { free(head); fclose(f); return fprintf(stderr, \"%s: expected dtype %s in C order\\n\", path, descr), -1; }\n"
    "  p += 10;\n"
    "  for (d = 0; d < ndim; d++) {\n    long long v = strtoll(p, &p, 10);\n"
    "    if (v != shape[d]) { free(head); fclose(f); return fprintf(stderr, \"%s: dimension %d is %lld, expected %lld\\n\", path, d, v, shape[d]), -1; }\n"
    "    while (*p == ',' || *p == ' ') p++;\n  }\n"
    "  if (*p != ')') { free(head); fclose(f); return fprintf(stderr, \"%s: expected %d dimensions\\n\", path, ndim), -1; }\n"
    "  free(head);\n  n = fread(data, 1, bytes, f);\n  fclose(f);\n"
    "  if (n != bytes) return fprintf(stderr, \"%s: truncated data\\n\", path), -1;\n  return 0;\n}\n\n"
    "static int write_npy(const char *path, const char *descr, int ndim, const long long *shape, const void *data, size_t bytes) {\n"
    "  char head[256];\n  int d, n;\n  FILE *f;\n"
    "  n = sprintf(head, \"{'descr': '%s', 'fortran_order': False, 'shape': (\", descr);\n"
    "  for (d = 0; d < ndim; d++) n += sprintf(head + n, \"%lld%s\", shape[d], ndim == 1 ? \",\" : d + 1 < ndim ? \", \" : \"\");\n"
    "  n += sprintf(head + n, \"), }\");\n"
    "  while ((10 + n + 1) % 64) head[n++] = ' ';\n  head[n++] = '\\n';\n"
    "  f = fopen(path, \"wb\");\n  if (!f) return fprintf(stderr, \"cannot write %s\\n\", path), -1;\n"
    "  fwrite(\"\\223NUMPY\\001\\000\", 1, 8, f);\n  fputc(n & 255, f);\n  fputc(n >> 8, f);\n"
    "  fwrite(head, 1, (size_t)n, f);\n"
    "  if (fwrite(data, 1, bytes, f) != bytes) { fclose(f); return fprintf(stderr, \"cannot write %s\\n\", path), -1; }\n"
    "  return fclose(f) ? -1 : 0;\n}\n\n"
    "/* size bytes aligned to 64 (C99 has no aligned_alloc); *base is what to free */\n"
    "static void *alloc64(size_t size, void **base) {\n"
    "  *base = malloc(size + 64);\n  if (!*base) return NULL;\n"
    "  return (void *)(((uintptr_t)*base + 63) & ~(uintptr_t)63);\n}\n\n";

static int write_main(CExport *x) {
  StrBuf sb = {0};
  const CExportOptions *o = x->opt;
  const char *P = x->prefix, *U = x->upper;
  sb_printf(&sb,
            "/*\n * main.c - run %s on .npy files, the inputs in the model's order, then one\n"
            " * path per output:\n *   ./example", P);
  for (int i = 0; i < x->nin; i++) sb_printf(&sb, " %s.npy", x->in[i].cname);
  for (int i = 0; i < x->nout; i++) sb_printf(&sb, " %s.npy", x->out[i].cname);
  sb_printf(&sb, "\n");
  if (o->separate_weights) sb_printf(&sb, " * (-w FILE: the weights, default %s.bin)\n", P);
  sb_printf(&sb,
            " * An example of the API in %s.h: everything here but %s_run is the\n"
            " * example's own (file I/O, malloc); the model needs none of it.\n */\n",
            P, P);
  sb_printf(&sb, "#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n#include \"%s.h\"\n\n", P);
  sb_puts(&sb, main_npy_io);
  sb_puts(&sb, "int main(int argc, char **argv) {\n");
  int nt = x->nin + x->nout;
  sb_printf(&sb, "  static const char *const descr[] = {");
  for (int i = 0; i < nt; i++)
    sb_printf(&sb, "%s\"%s\"", i ? ", " : "", cexport_npy_descr(i < x->nin ? x->in[i].type.dtype : x->out[i - x->nin].type.dtype));
  sb_printf(&sb, "};\n  static const int ndim[] = {");
  for (int i = 0; i < nt; i++) sb_printf(&sb, "%s%d", i ? ", " : "", (i < x->nin ? x->in[i] : x->out[i - x->nin]).type.ndim);
  sb_printf(&sb, "};\n  static const size_t bytes[] = {");
  for (int i = 0; i < nt; i++)
    sb_printf(&sb, "%s%lld", i ? ", " : "", (long long)(i < x->nin ? x->in[i] : x->out[i - x->nin]).bytes);
  sb_printf(&sb, "};\n");
  for (int i = 0; i < nt; i++) {
    bool isin = i < x->nin;
    int k = isin ? i : i - x->nin;
    sb_printf(&sb, "  static const long long shape%d[] = %s_%s%d_SHAPE;\n", i, U, isin ? "INPUT" : "OUTPUT", k);
  }
  sb_printf(&sb, "  const long long *shape[] = {");
  for (int i = 0; i < nt; i++) sb_printf(&sb, "%sshape%d", i ? ", " : "", i);
  sb_printf(&sb, "};\n  void *buf[%d], *base[%d], *ws_base;\n  void *ws;\n  int i, rc, a = 1;\n", nt, nt);
  if (o->separate_weights) {
    sb_printf(&sb, "  const char *wpath = %s_WEIGHTS_FILE;\n  void *w, *w_base;\n  FILE *wf;\n", U);
    sb_printf(&sb, "  if (argc > 2 && !strcmp(argv[1], \"-w\")) {\n    wpath = argv[2];\n    a = 3;\n  }\n");
  }
  sb_printf(&sb, "  if (argc - a != %d) {\n    fprintf(stderr, \"usage: %%s%s", nt, o->separate_weights ? " [-w WEIGHTS]" : "");
  for (int i = 0; i < x->nin; i++) sb_printf(&sb, " %s.npy", x->in[i].cname);
  for (int i = 0; i < x->nout; i++) sb_printf(&sb, " %s.npy", x->out[i].cname);
  sb_printf(&sb, "\\n\", argv[0]);\n    return 2;\n  }\n");
  sb_printf(&sb, "  for (i = 0; i < %d; i++) {\n    buf[i] = alloc64(bytes[i] ? bytes[i] : 1, &base[i]);\n"
                 "    if (!buf[i]) return fprintf(stderr, \"out of memory\\n\"), 1;\n"
                 "    if (i < %d && read_npy(argv[a + i], descr[i], ndim[i], shape[i], buf[i], bytes[i])) return 1;\n  }\n",
            nt, x->nin);
  sb_printf(&sb, "  ws = alloc64(%s_WORKSPACE_BYTES, &ws_base);\n  if (!ws) return fprintf(stderr, \"out of memory\\n\"), 1;\n", U);
  if (o->separate_weights) {
    sb_printf(&sb, "  w = alloc64(%s_WEIGHTS_BYTES, &w_base);\n  wf = fopen(wpath, \"rb\");\n", U);
    sb_printf(&sb, "  if (!w || !wf || fread(w, 1, %s_WEIGHTS_BYTES, wf) != %s_WEIGHTS_BYTES || %s_weights_check(w, %s_WEIGHTS_BYTES)) {\n"
                   "    fprintf(stderr, \"%%s: not the weights of this export (%s.bin, %%d bytes)\\n\", wpath, %s_WEIGHTS_BYTES);\n"
                   "    return 1;\n  }\n  fclose(wf);\n",
              U, U, P, U, P, U);
  }
  sb_printf(&sb, "  rc = %s_run(", P);
  for (int i = 0; i < nt; i++)
    sb_printf(&sb, "(%s%s *)buf[%d], ", i < x->nin ? "const " : "", cexport_ctype((i < x->nin ? x->in[i] : x->out[i - x->nin]).type.dtype), i);
  sb_printf(&sb, "ws%s);\n", o->separate_weights ? ", w" : "");
  sb_printf(&sb, "  if (rc) return fprintf(stderr, \"%s_run failed: %%d\\n\", rc), 1;\n", P);
  sb_printf(&sb, "  for (i = %d; i < %d; i++)\n    if (write_npy(argv[a + i], descr[i], ndim[i], shape[i], buf[i], bytes[i])) return 1;\n",
            x->nin, nt);
  sb_printf(&sb, "  for (i = 0; i < %d; i++) free(base[i]);\n  free(ws_base);\n", nt);
  if (o->separate_weights) sb_printf(&sb, "  free(w_base);\n");
  sb_printf(&sb, "  return 0;\n}\n");
  int rc = kiln_write_file(kfmt("%s/main.c", x->dir), sb.data, sb.len);
  sb_free(&sb);
  return rc;
}

/* ---- metadata.json ---- */

static void tensor_json(StrBuf *sb, CTensor *t, bool last) {
  sb_printf(sb, "    {\"name\": \"");
  for (const char *p = t->name; *p; p++) {
    if (*p == '"' || *p == '\\') sb_putc(sb, '\\');
    sb_putc(sb, *p);
  }
  sb_printf(sb, "\", \"c_name\": \"%s\", \"dtype\": \"%s\", \"shape\": [", t->cname,
            dt_is_bool(t->type.dtype) ? "bool" : dt_str(t->type.dtype));
  for (int d = 0; d < t->type.ndim; d++) sb_printf(sb, "%s%lld", d ? ", " : "", (long long)t->type.shape[d]);
  sb_printf(sb, "], \"bytes\": %lld}%s\n", (long long)t->bytes, last ? "" : ",");
}

static int write_metadata(CExport *x, AVec *srcs) {
  StrBuf sb = {0};
  const CExportOptions *o = x->opt;
  sb_printf(&sb, "{\n  \"format\": \"%s\",\n  \"kiln_version\": \"%s\",\n", CEXPORT_FORMAT, KILN_VERSION_STRING);
  sb_printf(&sb, "  \"model\": \"");
  for (const char *p = o->model ? o->model : ""; *p; p++) {
    if (*p == '"' || *p == '\\') sb_putc(&sb, '\\');
    sb_putc(&sb, *p);
  }
  sb_printf(&sb, "\",\n  \"prefix\": \"%s\",\n  \"checksum\": \"%016llx\",\n", x->prefix, (unsigned long long)x->checksum);
  sb_printf(&sb, "  \"isa\": \"%s\",\n  \"threads\": \"%s\",\n  \"freestanding\": %s,\n  \"weights\": \"%s\",\n", x->isa_name,
            x->threads_name, o->freestanding ? "true" : "false", o->separate_weights ? "separate" : "embedded");
  sb_printf(&sb, "  \"workspace_bytes\": %lld,\n  \"weights_bytes\": %lld,\n  \"num_weights\": %d,\n",
            (long long)x->workspace_bytes, (long long)x->weights_bytes, x->nweights);
  /* for comparison: the graph executor's plan of the same tensors, and one
   * buffer per tensor (scratch areas not included) */
  sb_printf(&sb, "  \"graph_executor_plan_bytes\": %lld,\n  \"one_buffer_per_tensor_bytes\": %lld,\n",
            (long long)x->graph_plan_bytes, (long long)x->naive_bytes);
  sb_puts(&sb, "  \"inputs\": [\n");
  for (int i = 0; i < x->nin; i++) tensor_json(&sb, &x->in[i], i + 1 == x->nin);
  sb_puts(&sb, "  ],\n  \"outputs\": [\n");
  for (int i = 0; i < x->nout; i++) tensor_json(&sb, &x->out[i], i + 1 == x->nout);
  sb_puts(&sb, "  ],\n  \"files\": [");
  sb_printf(&sb, "\"%s.h\"", x->prefix);
  for (int i = 0; i < srcs->len; i++) sb_printf(&sb, ", \"%s\"", (const char *)srcs->data[i]);
  if (o->separate_weights) sb_printf(&sb, ", \"%s.bin\"", x->prefix);
  if (o->freestanding) sb_puts(&sb, ", \"kiln_math.h\"");
  sb_puts(&sb, ", \"main.c\", \"Makefile\", \"CMakeLists.txt\"],\n");
  /* each file's FNV-1a 64 as written, for kiln inspect to verify */
  sb_puts(&sb, "  \"file_checksums\": {");
  AVec all = {0};
  av_push(&all, kfmt("%s.h", x->prefix));
  for (int i = 0; i < srcs->len; i++) av_push(&all, srcs->data[i]);
  if (o->separate_weights) av_push(&all, kfmt("%s.bin", x->prefix));
  if (o->freestanding) av_push(&all, "kiln_math.h");
  av_push(&all, "main.c");
  for (int i = 0; i < all.len; i++) {
    size_t n;
    char *data = kiln_read_file(kfmt("%s/%s", x->dir, (const char *)all.data[i]), &n);
    if (!data) {
      sb_free(&sb);
      return -1;
    }
    sb_printf(&sb, "%s\"%s\": \"%016llx\"", i ? ", " : "", (const char *)all.data[i],
              (unsigned long long)cexport_fnv(CEXPORT_FNV_INIT, data, n));
    free(data);
  }
  sb_puts(&sb, "},\n");
  sb_printf(&sb, "  \"kernels\": [%s\n  ],\n", x->meta_kernels.data ? x->meta_kernels.data : "");
  sb_printf(&sb, "  \"memory_plan\": [%s\n  ]\n}\n", x->meta_plan.data ? x->meta_plan.data : "");
  int rc = kiln_write_file(kfmt("%s/metadata.json", x->dir), sb.data, sb.len);
  sb_free(&sb);
  return rc;
}

int cexport_write_build_files(CExport *x, AVec *csources) {
  if (write_makefile(x, csources) || write_cmake(x, csources) || write_main(x)) return -1;
  return write_metadata(x, csources);
}

/* ---- kiln inspect DIR ---- */

static const char *jstr(cJSON *o, const char *key) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "?";
}

static double jnum(cJSON *o, const char *key) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *ctype_of(const char *dtype) {
  static const char *const map[][2] = {{"float32", "float"}, {"float64", "double"}, {"bool", "int8_t"},   {"int8", "int8_t"},
                                       {"int16", "int16_t"}, {"int32", "int32_t"}, {"int64", "int64_t"}, {"uint8", "uint8_t"},
                                       {"uint16", "uint16_t"}, {"uint32", "uint32_t"}, {"uint64", "uint64_t"}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(dtype, map[i][0])) return map[i][1];
  return "void";
}

static void tensors_text(StrBuf *sb, cJSON *list, const char *what) {
  sb_printf(sb, "%s (%d):\n", what, cJSON_GetArraySize(list));
  cJSON *t;
  cJSON_ArrayForEach(t, list) {
    sb_printf(sb, "  %-24s %-10s (", jstr(t, "name"), jstr(t, "c_name"));
    cJSON *d;
    int k = 0;
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(t, "shape")) sb_printf(sb, "%s%lld", k++ ? ", " : "", (long long)d->valuedouble);
    sb_printf(sb, ") %s\n", jstr(t, "dtype"));
  }
}

int graph_export_c_describe(const char *dir, StrBuf *out) {
  size_t n;
  char *text = kiln_read_file(kfmt("%s/metadata.json", dir), &n);
  if (!text) return kiln_set_error("%s: no metadata.json: not a directory written by kiln compile --emit c", dir);
  cJSON *m = cJSON_Parse(text);
  free(text);
  if (!m || strcmp(jstr(m, "format"), CEXPORT_FORMAT)) {
    cJSON_Delete(m);
    return kiln_set_error("%s/metadata.json: not a standalone C export of format %s", dir, CEXPORT_FORMAT);
  }
  const char *P = jstr(m, "prefix");
  cJSON *ins = cJSON_GetObjectItemCaseSensitive(m, "inputs"), *outs = cJSON_GetObjectItemCaseSensitive(m, "outputs");
  sb_printf(out, "standalone C export %s (%s, Kiln %s)\nmodel: %s\n", dir, CEXPORT_FORMAT, jstr(m, "kiln_version"), jstr(m, "model"));
  sb_printf(out, "api: int %s_run(", P);
  cJSON *t;
  cJSON_ArrayForEach(t, ins) sb_printf(out, "const %s *%s, ", ctype_of(jstr(t, "dtype")), jstr(t, "c_name"));
  cJSON_ArrayForEach(t, outs) sb_printf(out, "%s *%s, ", ctype_of(jstr(t, "dtype")), jstr(t, "c_name"));
  bool sep = !strcmp(jstr(m, "weights"), "separate");
  sb_printf(out, "void *workspace%s)  [%s.h]\n", sep ? ", const void *weights" : "", P);
  cJSON *fs = cJSON_GetObjectItemCaseSensitive(m, "freestanding");
  sb_printf(out, "isa %s, threads %s, %s, weights %s (%d arrays, %.0f bytes)\n", jstr(m, "isa"), jstr(m, "threads"),
            cJSON_IsTrue(fs) ? "freestanding" : "hosted (math.h, string.h)", jstr(m, "weights"),
            (int)jnum(m, "num_weights"), jnum(m, "weights_bytes"));
  cJSON *plan = cJSON_GetObjectItemCaseSensitive(m, "memory_plan");
  sb_printf(out, "workspace: %.0f bytes (%d buffers placed by live range; the graph executor's plan of the same tensors: %.0f bytes)\n",
            jnum(m, "workspace_bytes"), cJSON_GetArraySize(plan), jnum(m, "graph_executor_plan_bytes"));
  tensors_text(out, ins, "inputs");
  tensors_text(out, outs, "outputs");
  cJSON *ks = cJSON_GetObjectItemCaseSensitive(m, "kernels");
  sb_printf(out, "kernels (%d):\n", cJSON_GetArraySize(ks));
  cJSON *k;
  cJSON_ArrayForEach(k, ks) {
    cJSON *task = cJSON_GetObjectItemCaseSensitive(k, "task");
    sb_printf(out, "  %s", jstr(k, "name"));
    if (cJSON_IsString(task)) sb_printf(out, "  %s (config: %s)", task->valuestring, jstr(k, "config"));
    sb_putc(out, '\n');
  }
  /* the files against the checksums written with them */
  cJSON *sums = cJSON_GetObjectItemCaseSensitive(m, "file_checksums"), *f;
  AVec bad = {0};
  sb_puts(out, "files:\n");
  cJSON_ArrayForEach(f, sums) {
    char *data = kiln_read_file(kfmt("%s/%s", dir, f->string), &n);
    bool ok = data && cJSON_IsString(f) &&
              !strcmp(kfmt("%016llx", (unsigned long long)cexport_fnv(CEXPORT_FNV_INIT, data, n)), f->valuestring);
    sb_printf(out, "  %-28s %10zu bytes  %s\n", f->string, data ? n : 0, !data ? "MISSING" : ok ? "ok" : "CHANGED");
    if (!ok) av_push(&bad, f->string);
    free(data);
  }
  kiln_clear_error();
  sb_printf(out, "checksum: %s %s", jstr(m, "checksum"), bad.len ? "MISMATCH (" : "ok\n");
  for (int i = 0; i < bad.len; i++) sb_printf(out, "%s%s", i ? ", " : "", (const char *)bad.data[i]);
  if (bad.len) sb_puts(out, " changed since the export)\n");
  cJSON_Delete(m);
  return 0;
}
