/* tags.c - what operator tags mean to schedules. */
#include <string.h>

#include "topi.h"

bool topi_tag_is_injective(const char *tag) {
  return tag && (!strcmp(tag, "elemwise") || !strcmp(tag, "broadcast") || !strcmp(tag, "injective"));
}
