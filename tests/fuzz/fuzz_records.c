/* fuzz_records.c - libFuzzer target: tuning-record files (AutoTVM v0.1
 * and v0.2 JSON lines) through the reader kiln tune (resume), kiln
 * compile --tuning-records and kiln records use, and every record read
 * written back and read again. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autotune/autotune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char path[64];
  if (!path[0]) snprintf(path, sizeof path, "/tmp/kiln-fuzz-records-%d.json", (int)getpid());
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  fwrite(data, 1, size, f);
  fclose(f);
  KArena *a = kiln_arena_new();
  kiln_arena_push(a);
  kiln_clear_error();
  AVec recs = {0};
  long torn;
  int rc = records_load_resume(path, &recs, &torn);
  if (rc && !kiln_get_error()[0]) abort();
  if (!rc) {
    records_keep_latest(&recs);
    for (int i = 0; i < recs.len; i++) {
      TuneRecord *r = recs.data[i];
      (void)record_cost(r);
      if (!record_parse(record_json(r))) abort(); /* what Kiln writes, it reads */
      (void)record_json_v01(r);
    }
  }
  kiln_arena_pop();
  kiln_arena_free(a);
  return 0;
}
