/*
 * compiler.c - the C compiler driver.
 *
 * Sources are written to a private temporary directory and compiled to
 * objects in parallel (one process per unit, at most as many at once as
 * there are cores), then linked into one shared object together with an
 * assembler file that pulls each binary blob in with .incbin — so large
 * weights never pass through the C compiler as text — into a section of
 * its own (".kiln.<name>"); the linked file is then sealed with its
 * checksum (kiln_artifact_seal, docs/formats.md).
 *
 * The compiler is $KILN_CC, else $CC, else "cc"; flags are $KILN_CFLAGS or
 * the defaults below (split at spaces).  A failure reports the compiler's
 * exit status and the start of its output, and keeps the directory so the
 * user can look at the source.
 *
 * Compiled units are cached on disk, keyed by a 128-bit hash of the
 * compiler's name and version, the flags and the unit's source: building
 * the same model again, or a tuning candidate whose code was built
 * before, links a private copy of the cached object (a hard link or a
 * copy in the build folder) instead of compiling.  The cache is
 * $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln; set
 * KILN_CACHE_DIR=off to turn it off.  Entries are written under a
 * temporary name and renamed, so concurrent builds never see half an
 * object, and a build never links from the cache folder itself, so
 * clearing it while builds run is safe; nothing prunes the folder
 * (delete it to clear the cache).
 */
#define _GNU_SOURCE
#include "codegen.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char *kiln_default_cflags(void) {
  return "-O3 -march=native -fno-math-errno -fno-trapping-math -fPIC -std=gnu11";
}

static const char *pick_cc(const CompileOptions *opt) {
  if (opt && opt->cc && *opt->cc) return opt->cc;
  const char *e = getenv("KILN_CC");
  if (e && *e) return e;
  e = getenv("CC");
  if (e && *e) return e;
  return "cc";
}

static const char *pick_cflags(const CompileOptions *opt) {
  if (opt && opt->cflags) return opt->cflags;
  const char *e = getenv("KILN_CFLAGS");
  if (e && *e) return e;
  return kiln_default_cflags();
}

/* argv: cc, flags..., extra... (heap array of heap/arena strings) */
static char **make_argv(const char *cc, const char *flags, int nextra, const char **extra) {
  int cap = 8 + nextra;
  for (const char *p = flags; *p; p++) cap += *p == ' ';
  char **argv = xcalloc((size_t)cap + 1, sizeof(char *));
  int n = 0;
  argv[n++] = kstrdup(cc);
  const char *p = flags;
  while (*p) {
    while (*p == ' ') p++;
    const char *q = p;
    while (*q && *q != ' ') q++;
    if (q > p) argv[n++] = kstrndup(p, (size_t)(q - p));
    p = q;
  }
  for (int i = 0; i < nextra; i++) argv[n++] = (char *)extra[i];
  argv[n] = NULL;
  return argv;
}

typedef struct Job {
  pid_t pid;
  const char *log;
  const char *what;
} Job;

static pid_t spawn(char **argv, const char *log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    kiln_set_error("cannot run the C compiler '%s': %s (set CC or KILN_CC)", argv[0], strerror(rc));
    return -1;
  }
  return pid;
}

static int finish(Job *j, const char *cc, const char *dir) {
  int status;
  while (waitpid(j->pid, &status, 0) < 0)
    if (errno != EINTR) return kiln_set_error("waiting for the C compiler: %s", strerror(errno));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  char *out = kiln_read_file(j->log, NULL);
  StrBuf msg = {0};
  int lines = 0;
  for (const char *p = out ? out : ""; *p && lines < 25; p++) {
    sb_putc(&msg, *p);
    if (*p == '\n') lines++;
  }
  free(out);
  if (WIFEXITED(status))
    kiln_set_error("C compiler failed (%s exited with status %d) on %s; sources kept in %s:\n%s", cc,
                   WEXITSTATUS(status), j->what, dir, msg.data ? msg.data : "");
  else
    kiln_set_error("C compiler failed (%s killed by signal %d) on %s; sources kept in %s", cc,
                   WTERMSIG(status), j->what, dir);
  sb_free(&msg);
  return -1;
}

/* ---- the compiled-unit cache ---- */

/* The cache folder, created on first use; NULL when off or unusable. */
static const char *cache_dir(void) {
  const char *d = getenv("KILN_CACHE_DIR");
  if (d && !strcmp(d, "off")) return NULL;
  const char *path;
  if (d && *d) {
    path = kfmt("%s", d);
  } else {
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    if (x && *x) path = kfmt("%s/kiln", x);
    else if (h && *h) path = kfmt("%s/.cache/kiln", h);
    else return NULL;
  }
  /* create it and its parents */
  char *p = kstrdup(path);
  for (char *q = p + 1; *q; q++)
    if (*q == '/') {
      *q = 0;
      mkdir(p, 0755);
      *q = '/';
    }
  if (mkdir(p, 0755) != 0 && errno != EEXIST) return NULL;
  struct stat st;
  if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode) || access(p, W_OK) != 0) return NULL;
  return p;
}

/* `cc -dumpfullversion -dumpversion` (the first line), so that objects of
 * another compiler version are never reused; "" if it cannot be run.
 * Asked once per compiler name in a process (a tuning run builds many). */
static const char *cc_version(const char *cc, const char *dir) {
  static _Thread_local char last_cc[256], last_version[128];
  if (last_cc[0] && !strcmp(last_cc, cc)) return last_version;
  const char *extra[2] = {"-dumpfullversion", "-dumpversion"};
  char **argv = make_argv(cc, "", 2, extra);
  const char *log = kfmt("%s/version.log", dir);
  pid_t pid = spawn(argv, log);
  free(argv);
  int status;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
    kiln_clear_error();
    return "";
  }
  char *v = kiln_read_file(log, NULL);
  size_t n = v ? strcspn(v, "\n") : 0;
  if (n >= sizeof last_version) n = sizeof last_version - 1;
  memcpy(last_version, v ? v : "", n);
  last_version[n] = 0;
  free(v);
  snprintf(last_cc, sizeof last_cc, "%s", cc);
  return last_version;
}

static void fnv(uint64_t *h, const char *s, uint64_t prime) {
  for (; *s; s++) *h = (*h ^ (unsigned char)*s) * prime;
  *h = (*h ^ 0xff) * prime; /* a separator, so fields cannot run together */
}

/* "<32 hex digits>": two 64-bit FNV-1a hashes (different offsets and
 * primes) of the compiler, its version, the flags and the source. */
static const char *cache_key(const char *cc, const char *version, const char *flags, const char *src) {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  const uint64_t pa = 0x100000001b3ull, pb = 0x100000001b5ull;
  const char *fields[4] = {cc, version, flags, src};
  for (int i = 0; i < 4; i++) fnv(&a, fields[i], pa), fnv(&b, fields[i], pb);
  return kfmt("%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

static bool file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

/* Copy a compiled object into the cache (temporary name, then rename). */
static void cache_put(const char *obj, const char *entry) {
  size_t n;
  char *data = kiln_read_file(obj, &n);
  if (!data) {
    kiln_clear_error();
    return;
  }
  const char *tmp = kfmt("%s.%ld.tmp", entry, (long)getpid());
  if (kiln_write_file(tmp, data, n) == 0) {
    if (rename(tmp, entry) != 0) unlink(tmp);
  } else {
    kiln_clear_error();
  }
  free(data);
}

/* Copy a cached object into the build folder, so that the link reads a
 * file this build owns: another process may clear the cache (or replace
 * the entry) between this lookup and the link.  A hard link where the two
 * folders share a file system, else a copy; false (compile instead) if the
 * entry vanished meanwhile. */
static bool cache_get(const char *entry, const char *obj) {
  if (link(entry, obj) == 0) return true;
  size_t n;
  char *data = kiln_read_file(entry, &n);
  if (!data || n == 0) {
    free(data);
    kiln_clear_error();
    return false;
  }
  bool ok = kiln_write_file(obj, data, n) == 0;
  if (!ok) kiln_clear_error();
  free(data);
  return ok;
}

/* Blobs of this many bytes or more are assembled beside the units and
 * linked with LLVM's lld where the compiler can use it. */
#define BIG_BLOBS (16u << 20)

/* Link objs into so_path.  With lld (big: a module of large blobs, where
 * GNU ld took 1.2-1.7 s to copy ResNet-50's 144 MB of parameters and lld
 * 0.3 s) when `cc -fuse-ld=lld` works, else the compiler's own linker;
 * whether lld works is learned once per process. */
static int link_so(const char *cc, const char *flags, int nobj, const char **objs, const char *so_path,
                   const char *dir, bool big) {
  static _Thread_local int lld_works = -1; /* unknown, no, yes */
  bool lld = big && lld_works != 0;
  for (;;) {
    const char **extra = KNEWN(const char *, nobj + 6);
    int ne = 0;
    extra[ne++] = "-shared";
    if (lld) extra[ne++] = "-fuse-ld=lld";
    for (int i = 0; i < nobj; i++) extra[ne++] = objs[i];
    extra[ne++] = "-o";
    extra[ne++] = so_path;
    extra[ne++] = "-lm";
    char **argv = make_argv(cc, flags, ne, extra);
    Job link = {0, kfmt("%s/link.log", dir), "the link step"};
    link.pid = spawn(argv, link.log);
    free(argv);
    int rc = link.pid < 0 ? -1 : finish(&link, cc, dir);
    if (lld && lld_works < 0) {
      lld_works = rc == 0;
      if (rc) { /* no lld here (or a compiler without -fuse-ld): the default linker */
        kiln_clear_error();
        lld = false;
        continue;
      }
    }
    return rc;
  }
}

int kiln_compile_c(int nunits, const char **sources, int nblobs, const KBlob *blobs,
                   const char *so_path, const CompileOptions *opt) {
  const char *cc = pick_cc(opt), *flags = pick_cflags(opt);
  char *dir = kiln_mkdtemp("kiln-cc-");
  if (!dir) return -1;
  int rc = 0;
  const char **objs = KNEWN(const char *, nunits + 2);
  const char *cdir = cache_dir();
  const char *version = cdir ? cc_version(cc, dir) : "";
  const char **entry = KNEWN(const char *, nunits > 0 ? nunits : 1); /* cache file to fill, or NULL */
  bool *cached = KNEWN(bool, nunits > 0 ? nunits : 1);
  for (int i = 0; i < nunits && !rc; i++) {
    const char *c = kfmt("%s/unit%d.c", dir, i);
    rc = kiln_write_file(c, sources[i], strlen(sources[i]));
    objs[i] = kfmt("%s/unit%d.o", dir, i);
    if (cdir) {
      const char *e = kfmt("%s/%s.o", cdir, cache_key(cc, version, flags, sources[i]));
      if (file_exists(e) && cache_get(e, objs[i])) {
        cached[i] = true; /* link a private copy of the cached object */
      } else {
        entry[i] = e;
      }
    }
  }
  int nobj = nunits;
  if (!rc) {
    /* each blob in a section of its own, ".kiln.<name>" (read-only, 64-byte
     * aligned: the params data is used in place), then the checksum section
     * that kiln_artifact_seal fills after the link (docs/formats.md) */
    StrBuf s = {0};
    for (int b = 0; b < nblobs && !rc; b++) {
      const char *bin = kfmt("%s/blob%d.bin", dir, b);
      rc = kiln_write_file(bin, blobs[b].data ? blobs[b].data : "", blobs[b].size);
      sb_printf(&s, "  .section .kiln.%s,\"a\",@progbits\n  .balign 64\n  .globl __kiln_blob_%d\n"
                    "  .type __kiln_blob_%d, @object\n__kiln_blob_%d:\n  .incbin \"%s\"\n  .byte 0\n",
                blobs[b].name, b, b, b, bin);
    }
    sb_puts(&s, "  .section .kiln.checksum,\"\",@progbits\n  .zero 32\n");
    sb_puts(&s, "  .section .note.GNU-stack,\"\",@progbits\n");
    const char *asmf = kfmt("%s/blobs.S", dir);
    if (!rc) rc = kiln_write_file(asmf, s.data, s.len);
    sb_free(&s);
    objs[nobj++] = asmf;
  }
  /* Large blobs (a model's parameters) are assembled into an object of
   * their own while the units compile: the assembler mostly waits on the
   * file system, and the link then only copies. */
  uint64_t blob_bytes = 0;
  for (int b = 0; b < nblobs; b++) blob_bytes += blobs[b].size;
  bool big = blob_bytes >= BIG_BLOBS;
  Job asm_job = {-1, NULL, "blobs.S"};
  if (!rc && big) {
    const char *o = kfmt("%s/blobs.o", dir);
    const char *extra[4] = {"-c", objs[nobj - 1], "-o", o};
    char **argv = make_argv(cc, flags, 4, extra);
    asm_job.log = kfmt("%s/blobs.log", dir);
    asm_job.pid = spawn(argv, asm_job.log);
    free(argv);
    if (asm_job.pid < 0) rc = -1;
    objs[nobj - 1] = o;
  }
  /* compile the units the cache does not have, in parallel */
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1) ncpu = 1;
  Job *jobs = KNEWN(Job, nunits > 0 ? nunits : 1);
  int *todo = KNEWN(int, nunits > 0 ? nunits : 1), ntodo = 0;
  for (int i = 0; i < nunits; i++)
    if (!cached[i]) todo[ntodo++] = i;
  int next = 0, done = 0, running = 0;
  while (!rc && done < ntodo) {
    while (next < ntodo && running < ncpu) {
      int u = todo[next];
      const char *cfile = kfmt("%s/unit%d.c", dir, u);
      const char *extra[4] = {"-c", cfile, "-o", objs[u]};
      char **argv = make_argv(cc, flags, 4, extra);
      jobs[u].log = kfmt("%s/unit%d.log", dir, u);
      jobs[u].what = kfmt("unit%d.c", u);
      jobs[u].pid = spawn(argv, jobs[u].log);
      free(argv);
      if (jobs[u].pid < 0) {
        rc = -1;
        break;
      }
      next++;
      running++;
    }
    if (rc) break;
    int u = todo[done];
    rc = finish(&jobs[u], cc, dir);
    if (!rc && entry[u]) cache_put(objs[u], entry[u]);
    done++;
    running--;
  }
  for (; done < next; done++) { /* reap what is still running after a failure */
    int st;
    waitpid(jobs[todo[done]].pid, &st, 0);
  }
  if (asm_job.pid > 0) {
    int arc = finish(&asm_job, cc, dir);
    if (!rc) rc = arc;
  }
  if (!rc) rc = link_so(cc, flags, nobj, objs, so_path, dir, big);
  if (!rc) rc = kiln_artifact_seal(so_path);
  if (opt && opt->keep_dir) {
    mkdir(opt->keep_dir, 0755);
    for (int i = 0; i < nunits; i++) {
      const char *dst = kfmt("%s/unit%d.c", opt->keep_dir, i);
      kiln_write_file(dst, sources[i], strlen(sources[i]));
    }
  }
  if (!rc) kiln_rmtree(dir);
  free(dir);
  return rc;
}
