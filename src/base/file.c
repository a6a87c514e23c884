/* file.c - whole-file I/O, temporary directories and the monotonic clock. */
#define _GNU_SOURCE
#include "base.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *kiln_read_file(const char *path, size_t *len_out) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    kiln_set_error("cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = xmalloc(cap);
  for (;;) {
    if (len + 1 >= cap) buf = xrealloc(buf, cap *= 2);
    size_t n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
    if (n == 0) break;
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    free(buf);
    kiln_set_error("cannot read '%s'", path);
    return NULL;
  }
  buf[len] = 0;
  if (len_out) *len_out = len;
  return buf;
}

int kiln_write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return kiln_set_error("cannot create '%s': %s", path, strerror(errno));
  size_t n = fwrite(data, 1, len, f);
  if (fclose(f) != 0 || n != len)
    return kiln_set_error("cannot write '%s': %s", path, strerror(errno));
  return 0;
}

char *kiln_mkdtemp(const char *prefix) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  size_t n = strlen(tmp) + strlen(prefix) + 16;
  char *p = xmalloc(n);
  snprintf(p, n, "%s/%sXXXXXX", tmp, prefix);
  if (!mkdtemp(p)) {
    kiln_set_error("cannot create a temporary directory under %s: %s", tmp, strerror(errno));
    free(p);
    return NULL;
  }
  return p;
}

int kiln_rmtree(const char *path) {
  DIR *d = opendir(path);
  if (!d) return unlink(path) == 0 ? 0 : -1;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    size_t n = strlen(path) + strlen(e->d_name) + 2;
    char *sub = xmalloc(n);
    snprintf(sub, n, "%s/%s", path, e->d_name);
    struct stat st;
    if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
      kiln_rmtree(sub);
    else
      unlink(sub);
    free(sub);
  }
  closedir(d);
  return rmdir(path) == 0 ? 0 : -1;
}

double kiln_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
