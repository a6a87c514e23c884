/*
 * artifact.c - a compiled module read as a file: its ELF sections, its
 * checksum, and its metadata, without loading or running any of its code.
 *
 * Kiln links each embedded blob into a section of its own,
 * ".kiln.<blob name>" (allocated, read-only, 64-byte aligned; the graph
 * JSON, the params index, the params data, the lowered IR), the kernel
 * names into ".kiln.kernels" (NUL-separated), and reserves a non-allocated
 * section ".kiln.checksum" that kiln_artifact_seal fills once the link is
 * done (docs/formats.md has the byte layout):
 *
 *   magic "KILNSUM1" | u64 file hash | u64 params hash | u64 reserved
 *
 * The file hash is XXH64 over every byte of the file except the contents
 * of ".kiln.checksum" itself and of ".kiln.param_data" (the weights): the
 * ELF headers, the code, the graph JSON, the params index (names, shapes,
 * offsets and the hash of every 1 MiB chunk of the weights) all count.
 * kiln_module_load checks it before dlopen, so a flipped byte anywhere but
 * in the weights is an error naming the file, never a crash in the dynamic
 * loader or a kernel.  Hashing the weights too would cost more than the
 * whole in-place load (they are mapped, not read), so their chunk hashes
 * are checked once per module, in parallel, before the first run of any
 * executor (kiln_module_check_params); the params hash here covers the
 * chunk table for tools that check a file whole (`kiln inspect --verify`).
 *
 * A module with no ".kiln." section at all (one written by hand against the
 * ABI in include/kiln/runtime.h) has nothing to check and loads as before;
 * one that has ".kiln." sections but no valid checksum is refused.
 *
 * Exports: kiln_artifact_open, _info, _get_blob, _verify_params, _free,
 * kiln_artifact_seal; internally kiln_xxh64_*, kiln_artifact_check_file.
 */
#include "runtime_internal.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- XXH64 (Yann Collet's xxHash, 64-bit; the reference algorithm) ---- */

#define P1 UINT64_C(0x9E3779B185EBCA87)
#define P2 UINT64_C(0xC2B2AE3D27D4EB4F)
#define P3 UINT64_C(0x165667B19E3779F9)
#define P4 UINT64_C(0x85EBCA77C2B2AE63)
#define P5 UINT64_C(0x27D4EB2F165667C5)

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* Little-endian loads (one instruction on a little-endian host). */
static inline uint64_t rd64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

static inline uint32_t rd32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}

static inline uint64_t xround(uint64_t acc, uint64_t in) {
  acc += in * P2;
  acc = rotl64(acc, 31);
  return acc * P1;
}

static inline uint64_t xmerge(uint64_t acc, uint64_t v) {
  acc ^= xround(0, v);
  return acc * P1 + P4;
}

void kiln_xxh64_init(KilnXXH64 *s, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->v[0] = seed + P1 + P2;
  s->v[1] = seed + P2;
  s->v[2] = seed;
  s->v[3] = seed - P1;
  s->seed = seed;
}

/* 32-byte stripes straight from p; returns the bytes consumed. */
static size_t stripes(KilnXXH64 *s, const unsigned char *p, size_t n) {
  uint64_t v0 = s->v[0], v1 = s->v[1], v2 = s->v[2], v3 = s->v[3];
  size_t done = 0;
  for (; done + 32 <= n; done += 32, p += 32) {
    v0 = xround(v0, rd64(p));
    v1 = xround(v1, rd64(p + 8));
    v2 = xround(v2, rd64(p + 16));
    v3 = xround(v3, rd64(p + 24));
  }
  s->v[0] = v0, s->v[1] = v1, s->v[2] = v2, s->v[3] = v3;
  return done;
}

void kiln_xxh64_update(KilnXXH64 *s, const void *data, size_t n) {
  const unsigned char *p = data;
  s->total += n;
  if (s->nbuf) {
    size_t take = 32 - s->nbuf < n ? 32 - s->nbuf : n;
    memcpy(s->buf + s->nbuf, p, take);
    s->nbuf += (unsigned)take;
    p += take;
    n -= take;
    if (s->nbuf < 32) return;
    stripes(s, s->buf, 32);
    s->nbuf = 0;
  }
  size_t used = stripes(s, p, n);
  memcpy(s->buf, p + used, n - used);
  s->nbuf = (unsigned)(n - used);
}

uint64_t kiln_xxh64_digest(const KilnXXH64 *s) {
  uint64_t h;
  if (s->total >= 32) {
    h = rotl64(s->v[0], 1) + rotl64(s->v[1], 7) + rotl64(s->v[2], 12) + rotl64(s->v[3], 18);
    for (int i = 0; i < 4; i++) h = xmerge(h, s->v[i]);
  } else {
    h = s->seed + P5;
  }
  h += s->total;
  const unsigned char *p = s->buf, *end = s->buf + s->nbuf;
  for (; p + 8 <= end; p += 8) h = rotl64(h ^ xround(0, rd64(p)), 27) * P1 + P4;
  if (p + 4 <= end) {
    h = rotl64(h ^ (uint64_t)rd32(p) * P1, 23) * P2 + P3;
    p += 4;
  }
  for (; p < end; p++) h = rotl64(h ^ *p * P5, 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

uint64_t kiln_xxh64(const void *data, size_t n, uint64_t seed) {
  KilnXXH64 s;
  kiln_xxh64_init(&s, seed);
  kiln_xxh64_update(&s, data, n);
  return kiln_xxh64_digest(&s);
}

/* ---- the file and its sections ---- */

#define SUM_MAGIC "KILNSUM1"
#define SUM_SECTION ".kiln.checksum"
#define DATA_SECTION ".kiln.param_data"
#define SUM_BYTES 32

typedef struct Section {
  const char *name;  /* in the mapped section-name table */
  uint64_t offset;   /* in the file (0 for SHT_NOBITS) */
  uint64_t size;     /* bytes in the file (0 for SHT_NOBITS) */
} Section;

struct KilnArtifact {
  char *path;
  const unsigned char *map;  /* the whole file, mapped read-only */
  size_t size;
  int num_sections;
  Section *sections;
  int kiln_sections;         /* how many are called ".kiln.*" */
  KilnArtifactInfo info;     /* filled lazily by kiln_artifact_info */
  KArena *arena;             /* the info's strings and arrays */
  int have_info;
};

static int bad(const KilnArtifact *a, const char *fmt, ...) KILN_PRINTF(2, 3);
static int bad(const KilnArtifact *a, const char *fmt, ...) {
  StrBuf sb = {0};
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&sb, fmt, ap);
  va_end(ap);
  kiln_set_error("'%s' is corrupt: %s; rebuild it (kiln compile) or copy it again", a->path,
                 sb.data);
  sb_free(&sb);
  return -1;
}

/* Parse the section table of the mapped file, every offset checked. */
static int read_sections(KilnArtifact *a) {
  const unsigned char *m = a->map;
  if (a->size < sizeof(Elf64_Ehdr) || memcmp(m, ELFMAG, SELFMAG))
    return kiln_set_error("'%s' is not a shared object (no ELF header)", a->path);
  Elf64_Ehdr eh;
  memcpy(&eh, m, sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return kiln_set_error("'%s' is not a 64-bit little-endian ELF file", a->path);
  if (eh.e_shnum == 0) return 0; /* no section table: nothing of Kiln's to find */
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > a->size ||
      (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > a->size - eh.e_shoff)
    return bad(a, "its section table (%u entries at offset %llu) does not fit in its %zu bytes",
               eh.e_shnum, (unsigned long long)eh.e_shoff, a->size);
  if (eh.e_shstrndx >= eh.e_shnum)
    return bad(a, "its section-name table is section %u of %u", eh.e_shstrndx, eh.e_shnum);
  Elf64_Shdr *sh = xmalloc((size_t)eh.e_shnum * sizeof *sh);
  memcpy(sh, m + eh.e_shoff, (size_t)eh.e_shnum * sizeof *sh);
  const Elf64_Shdr *names = &sh[eh.e_shstrndx];
  int rc = 0;
  if (names->sh_type == SHT_NOBITS || names->sh_offset > a->size ||
      names->sh_size > a->size - names->sh_offset)
    rc = bad(a, "its section-name table lies outside the file");
  a->sections = xcalloc(eh.e_shnum, sizeof(Section));
  for (int i = 0; i < eh.e_shnum && !rc; i++) {
    Section *s = &a->sections[i];
    if (sh[i].sh_name >= names->sh_size ||
        !memchr(m + names->sh_offset + sh[i].sh_name, 0, names->sh_size - sh[i].sh_name)) {
      rc = bad(a, "section %d's name is outside the section-name table", i);
      break;
    }
    s->name = (const char *)m + names->sh_offset + sh[i].sh_name;
    if (sh[i].sh_type != SHT_NOBITS) {
      if (sh[i].sh_offset > a->size || sh[i].sh_size > a->size - sh[i].sh_offset) {
        rc = bad(a, "section %d ('%s') lies outside the file", i, s->name);
        break;
      }
      s->offset = sh[i].sh_offset;
      s->size = sh[i].sh_size;
    }
    if (!strncmp(s->name, ".kiln.", 6)) a->kiln_sections++;
    a->num_sections = i + 1;
  }
  free(sh);
  return rc;
}

static const Section *find_section(const KilnArtifact *a, const char *name) {
  for (int i = 0; i < a->num_sections; i++)
    if (!strcmp(a->sections[i].name, name)) return &a->sections[i];
  return NULL;
}

/* XXH64 of the file with the ranges of `skip` (up to two sections, NULLs
 * allowed) left out. */
static uint64_t hash_file(const KilnArtifact *a, const Section *s1, const Section *s2) {
  const Section *skip[2] = {s1, s2};
  if (s1 && s2 && s2->offset < s1->offset) skip[0] = s2, skip[1] = s1;
  KilnXXH64 h;
  kiln_xxh64_init(&h, 0);
  uint64_t at = 0;
  for (int i = 0; i < 2; i++) {
    if (!skip[i] || skip[i]->offset < at) continue; /* overlapping: hashed, so a mismatch */
    kiln_xxh64_update(&h, a->map + at, (size_t)(skip[i]->offset - at));
    at = skip[i]->offset + skip[i]->size;
  }
  kiln_xxh64_update(&h, a->map + at, a->size - (size_t)at);
  return kiln_xxh64_digest(&h);
}

static int map_file(const char *path, KilnArtifact *a) {
  a->path = xstrdup(path);
  int fd = open(path, O_RDONLY);
  if (fd < 0 && errno == ENOENT) return kiln_set_error("cannot open '%s': no such file", path);
  if (fd < 0) return kiln_set_error("cannot open '%s': %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return kiln_set_error("cannot read '%s': not a regular file", path);
  }
  a->size = (size_t)st.st_size;
  if (a->size) {
    void *p = mmap(NULL, a->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      close(fd);
      return kiln_set_error("cannot map '%s': %s", path, strerror(errno));
    }
    a->map = p;
  }
  close(fd);
  return read_sections(a);
}

static void unmap(KilnArtifact *a) {
  if (a->map) munmap((void *)a->map, a->size);
  free(a->sections);
  free(a->path);
  kiln_arena_free(a->arena);
}

/* The stored checksum fields, or -1 with an error. */
static int read_sum(const KilnArtifact *a, const Section *sum, uint64_t *file_hash,
                    uint64_t *params_hash) {
  if (!sum) return bad(a, "it has Kiln sections but no " SUM_SECTION " section");
  if (sum->size != SUM_BYTES) return bad(a, SUM_SECTION " is %llu bytes, not %d",
                                         (unsigned long long)sum->size, SUM_BYTES);
  const unsigned char *p = a->map + sum->offset;
  if (memcmp(p, SUM_MAGIC, 8))
    return bad(a, "its " SUM_SECTION " section does not start with \"" SUM_MAGIC "\" (was the "
                  "file sealed after linking?)");
  *file_hash = rd64(p + 8);
  *params_hash = rd64(p + 16);
  return 0;
}

/* Check the file hash of a mapped artifact. */
static int check_mapped(const KilnArtifact *a) {
  if (!a->kiln_sections) return 0;
  const Section *sum = find_section(a, SUM_SECTION);
  uint64_t want = 0, pw = 0;
  if (read_sum(a, sum, &want, &pw)) return -1;
  uint64_t got = hash_file(a, sum, find_section(a, DATA_SECTION));
  if (got != want)
    return bad(a, "its checksum does not match (stored %016llx, computed %016llx): some byte "
                  "outside the weights has changed", (unsigned long long)want,
               (unsigned long long)got);
  return 0;
}

int kiln_artifact_check_file(const char *path) {
  KilnArtifact a = {0};
  int rc = map_file(path, &a);
  if (!rc) rc = check_mapped(&a);
  unmap(&a);
  return rc;
}

/* The params hash: over the chunk table of the params index (each chunk's
 * hash is in it), i.e. the hash of the index section. */
static uint64_t params_hash(const KilnArtifact *a) {
  const Section *idx = find_section(a, ".kiln.param_index");
  return idx ? kiln_xxh64(a->map + idx->offset, (size_t)idx->size, 1) : 0;
}

int kiln_artifact_seal(const char *path) {
  if (!path) return kiln_set_error("artifact_seal: the path is NULL");
  KilnArtifact a = {0};
  int rc = map_file(path, &a);
  const Section *sum = rc ? NULL : find_section(&a, SUM_SECTION);
  if (!rc && (!sum || sum->size != SUM_BYTES))
    rc = kiln_set_error("artifact_seal: '%s' has no %d-byte " SUM_SECTION " section", path,
                        SUM_BYTES);
  if (!rc) {
    unsigned char p[SUM_BYTES] = {0};
    uint64_t fh = hash_file(&a, sum, find_section(&a, DATA_SECTION)), ph = params_hash(&a);
    memcpy(p, SUM_MAGIC, 8);
    for (int i = 0; i < 8; i++) {
      p[8 + i] = (unsigned char)(fh >> (8 * i));
      p[16 + i] = (unsigned char)(ph >> (8 * i));
    }
    int fd = open(path, O_WRONLY);
    if (fd < 0 || pwrite(fd, p, SUM_BYTES, (off_t)sum->offset) != SUM_BYTES)
      rc = kiln_set_error("artifact_seal: writing '%s': %s", path, strerror(errno));
    if (fd >= 0) close(fd);
  }
  unmap(&a);
  return rc;
}

/* ---- reading an artifact without running it ---- */

int kiln_artifact_open(const char *path, KilnArtifact **out) {
  if (!out) return kiln_set_error("artifact_open: out is NULL");
  *out = NULL;
  if (!path || !*path) return kiln_set_error("artifact_open: the path is empty");
  KilnArtifact *a = xcalloc(1, sizeof *a);
  if (map_file(path, a) || check_mapped(a)) {
    unmap(a);
    free(a);
    return -1;
  }
  if (!a->kiln_sections) {
    kiln_set_error("'%s' is not a Kiln artifact (it has no .kiln.* sections)", path);
    unmap(a);
    free(a);
    return -1;
  }
  a->arena = kiln_arena_new();
  *out = a;
  return 0;
}

int kiln_artifact_free(KilnArtifact *a) {
  if (!a) return 0;
  unmap(a);
  free(a);
  return 0;
}

int kiln_artifact_get_blob(KilnArtifact *a, const char *name, const void **data, size_t *size) {
  if (!a || !name || !data || !size) return kiln_set_error("artifact_get_blob: a NULL argument");
  *data = NULL;
  *size = 0;
  char sec[128];
  snprintf(sec, sizeof sec, ".kiln.%s", name);
  const Section *s = find_section(a, sec);
  if (s) {
    /* the blob is followed by one NUL that its size does not count
     * (compiler.c) */
    *data = a->map + s->offset;
    *size = s->size ? (size_t)s->size - 1 : 0;
  }
  return 0;
}

int kiln_artifact_verify_params(KilnArtifact *a) {
  if (!a) return kiln_set_error("artifact_verify_params: the artifact is NULL");
  const Section *sum = find_section(a, SUM_SECTION);
  uint64_t fh = 0, want = 0;
  if (read_sum(a, sum, &fh, &want)) return -1;
  if (params_hash(a) != want) return bad(a, "its params index does not match its checksum");
  const void *idx, *data;
  size_t isize, dsize;
  kiln_artifact_get_blob(a, "param_index", &idx, &isize);
  kiln_artifact_get_blob(a, "param_data", &data, &dsize);
  if (!idx) return 0;
  KilnParamIndex pi;
  KArena *arena = kiln_arena_new();
  int rc = kiln_param_index_parse(idx, isize, dsize, arena, &pi);
  if (!rc) rc = kiln_param_chunks_check(&pi, data, 0);
  kiln_arena_free(arena);
  if (rc) return kiln_error_context("'%s'", a->path);
  return 0;
}

/* ---- the summary kiln inspect prints ---- */

static void fill_tensor(KilnTensorInfo *t, const JsonGraph *g, int e, const char *name) {
  t->name = name;
  t->ndim = g->entry_ndim[e];
  t->shape = g->entry_shape[e];
  t->dtype = g->entry_dtype[e];
}

/* Inputs, outputs and the memory plan from the graph JSON, params
 * excluded from the plan as an executor excludes them (mapped in place). */
static int graph_info(KilnArtifact *a, const KilnParamIndex *pi) {
  const void *json;
  size_t len;
  kiln_artifact_get_blob(a, "graph_json", &json, &len);
  if (!json) return 0;
  KArena *ar = a->arena;
  JsonGraph g;
  if (kiln_graph_parse(json, len, ar, &g)) return kiln_error_context("'%s': its graph", a->path);
  uint8_t *is_param = kiln_arena_alloc(ar, (size_t)g.num_nodes + 1);
  PtrMap names = {.strkeys = 1};
  for (int i = 0; pi && i < pi->num; i++) pm_put(&names, pi->names[i], (void *)1);
  for (int i = 0; i < g.num_args; i++)
    if (pm_has(&names, g.nodes[g.arg_nodes[i]].name)) is_param[g.arg_nodes[i]] = 1;
  pm_free(&names);
  KilnArtifactInfo *info = &a->info;
  KilnTensorInfo *ins = kiln_arena_alloc(ar, (size_t)g.num_args * sizeof *ins + 1);
  for (int i = 0; i < g.num_args; i++) {
    int n = g.arg_nodes[i];
    if (!is_param[n]) fill_tensor(&ins[info->num_inputs++], &g, g.nodes[n].first_entry, g.nodes[n].name);
  }
  info->inputs = ins;
  KilnTensorInfo *outs = kiln_arena_alloc(ar, (size_t)g.num_heads * sizeof *outs + 1);
  for (int h = 0; h < g.num_heads; h++) {
    int e = g.heads[h], n = g.entry_node[e];
    const char *name = g.nodes[n].name;
    if (g.nodes[n].kiln_output_name && *g.nodes[n].kiln_output_name) {
      name = g.nodes[n].kiln_output_name; /* the model's name, as the executor reports it */
    } else if (g.nodes[n].num_outputs > 1) {
      size_t l = strlen(name) + 16;
      char *s = kiln_arena_alloc(ar, l);
      snprintf(s, l, "%s:%d", name, e - g.nodes[n].first_entry);
      name = s;
    }
    fill_tensor(&outs[h], &g, e, name);
  }
  info->num_outputs = g.num_heads;
  info->outputs = outs;
  /* storage as an executor sets it up: a storage id only params use is mapped */
  int32_t *sid = kiln_arena_alloc(ar, (size_t)g.num_entries * sizeof *sid + 1);
  uint64_t *off = kiln_arena_alloc(ar, (size_t)g.num_entries * sizeof *off + 1);
  int ns, planned;
  if (kiln_graph_storage_ids(&g, sid, off, &ns, &planned)) return kiln_error_context("'%s'", a->path);
  uint64_t *bytes = kiln_arena_alloc(ar, (size_t)ns * sizeof *bytes + 1);
  uint8_t *written = kiln_arena_alloc(ar, (size_t)ns + 1);
  for (int e = 0; e < g.num_entries; e++) {
    uint64_t b = kiln_graph_entry_bytes(&g, e), end = off[e] + b;
    const GraphNode *nd = &g.nodes[g.entry_node[e]];
    if (!is_param[g.entry_node[e]] && !(nd->is_op && !strcmp(nd->func_name, "__nop")))
      written[sid[e]] = 1;
    if (bytes[sid[e]] < end) bytes[sid[e]] = end;
    info->plan.naive_bytes += b;
  }
  info->plan.num_views = kiln_graph_view_inputs(&g, sid, kiln_arena_alloc(ar, (size_t)g.num_entries + 1));
  for (int s = 0; s < ns; s++)
    if (written[s]) {
      info->plan.num_storage++;
      info->plan.planned_bytes += bytes[s];
    }
  return 0;
}

int kiln_artifact_info(KilnArtifact *a, const KilnArtifactInfo **out) {
  if (!a || !out) return kiln_set_error("artifact_info: a NULL argument");
  *out = &a->info;
  if (a->have_info) return 0;
  KilnArtifactInfo *info = &a->info;
  memset(info, 0, sizeof *info);
  KArena *ar = a->arena;
  /* kernels: NUL-separated names */
  const Section *ks = find_section(a, ".kiln.kernels");
  const char *kp = ks ? (const char *)a->map + ks->offset : NULL, *kend = kp ? kp + ks->size : NULL;
  int nk = 0;
  for (const char *p = kp; p && p < kend && *p; p++) /* count the NUL-terminated names */
    if (!memchr(p, 0, (size_t)(kend - p))) break;
    else nk++, p += strlen(p);
  const char **kn = kiln_arena_alloc(ar, (size_t)nk * sizeof(char *) + 1);
  for (const char *p = kp; info->num_kernels < nk; p += strlen(p) + 1) kn[info->num_kernels++] = p;
  info->kernels = kn;
  /* blobs: the allocated .kiln.* sections but the kernel list */
  const char **bn = kiln_arena_alloc(ar, (size_t)a->num_sections * sizeof(char *) + 1);
  uint64_t *bs = kiln_arena_alloc(ar, (size_t)a->num_sections * sizeof(uint64_t) + 1);
  for (int i = 0; i < a->num_sections; i++) {
    const char *n = a->sections[i].name;
    if (strncmp(n, ".kiln.", 6) || !strcmp(n, ".kiln.kernels") || !strcmp(n, SUM_SECTION)) continue;
    const void *d;
    size_t sz;
    kiln_artifact_get_blob(a, n + 6, &d, &sz);
    bn[info->num_blobs] = n + 6;
    bs[info->num_blobs++] = sz;
  }
  info->blob_names = bn;
  info->blob_sizes = bs;
  /* params */
  const void *idx, *data;
  size_t isize, dsize;
  kiln_artifact_get_blob(a, "param_index", &idx, &isize);
  kiln_artifact_get_blob(a, "param_data", &data, &dsize);
  KilnParamIndex pi, *pip = NULL;
  if (idx) {
    if (kiln_param_index_parse(idx, isize, dsize, ar, &pi)) return kiln_error_context("'%s'", a->path);
    pip = &pi;
    info->num_params = pi.num;
    for (int i = 0; i < pi.num; i++) info->param_bytes += kiln_array_nbytes(&pi.tensors[i]);
  }
  if (graph_info(a, pip)) return -1;
  a->have_info = 1;
  return 0;
}
