/* Typed field access for scenario files and control requests (see mock_fields.h). */
#define _GNU_SOURCE
#include "mock_fields.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int parse_code(const char *s, unsigned *out) {
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2;
  size_t n = strlen(s);
  if (n == 0 || n > 8) return -1;
  unsigned v = 0;
  for (size_t i = 0; i < n; i++) {
    int d = hex_digit(s[i]);
    if (d < 0) return -1;
    v = (v << 4) | (unsigned)d;
  }
  if (v == 0) return -1;
  *out = v;
  return 0;
}

int failf(char *msg, const char *path, const char *fmt, ...) {
  char reason[MSG_LEN / 2];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  if (path && path[0]) snprintf(msg, MSG_LEN, "%s: %s", path, reason);
  else snprintf(msg, MSG_LEN, "%s", reason);
  return -1;
}

/* Paths are short; out of line so the compiler does not warn about the theoretical truncation. */
__attribute__((noinline)) const char *join_path(char *buf, size_t n, const char *base, const char *key) {
  if (base && base[0]) snprintf(buf, n, "%s.%s", base, key);
  else snprintf(buf, n, "%s", key);
  return buf;
}

__attribute__((noinline)) const char *index_path(char *buf, size_t n, const char *base, size_t index) {
  snprintf(buf, n, "%s[%zu]", base, index);
  return buf;
}

const char *found(const mj_value *v) {
  switch (v->type) {
    case MJ_NULL: return "null";
    case MJ_BOOL: return "a boolean";
    case MJ_NUMBER: return v->is_int ? "an integer" : "a non-integer number";
    case MJ_STRING: return "a string";
    case MJ_ARRAY: return "an array";
    case MJ_OBJECT: return "an object";
  }
  return "?";
}

/* 1 = present (*v set), 0 = absent and optional, -1 = error. */
static int lookup(char *msg, const mj_value *obj, const char *base, const char *key, int required,
                  const mj_value **v, char *path, size_t pathn) {
  join_path(path, pathn, base, key);
  *v = mj_get(obj, key);
  if (*v) return 1;
  if (required) return failf(msg, path, "required field missing");
  return 0;
}

int check_fields(char *msg, const mj_value *obj, const char *base, const char *const *allowed) {
  for (size_t i = 0; i < obj->count; i++) {
    int ok = 0;
    for (const char *const *a = allowed; *a; a++)
      if (strcmp(*a, obj->keys[i]) == 0) ok = 1;
    if (!ok) {
      char path[256];
      char name[64];
      size_t j = 0;
      for (const char *k = obj->keys[i]; *k && j < sizeof name - 1; k++)
        name[j++] = (*k >= 0x20 && *k < 0x7f) ? *k : '?';
      name[j] = 0;
      return failf(msg, join_path(path, sizeof path, base, name), "unknown field");
    }
  }
  return 0;
}

int get_int(char *msg, const mj_value *obj, const char *base, const char *key, int required, long long min,
            long long max, long long *out) {
  const mj_value *v;
  char path[256];
  int r = lookup(msg, obj, base, key, required, &v, path, sizeof path);
  if (r <= 0) return r;
  if (v->type != MJ_NUMBER || !v->is_int) return failf(msg, path, "expected an integer, found %s", found(v));
  if (v->integer < min || v->integer > max)
    return failf(msg, path, "%lld is out of range %lld..%lld", v->integer, min, max);
  *out = v->integer;
  return 1;
}

int get_id32(char *msg, const mj_value *obj, const char *base, const char *key, int required, unsigned *out) {
  const mj_value *v;
  char path[256];
  int r = lookup(msg, obj, base, key, required, &v, path, sizeof path);
  if (r <= 0) return r;
  if (v->type == MJ_STRING) {
    const char *s = v->string;
    unsigned long long x = 0;
    if (!(s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) || !s[2] || strlen(s) > 10)
      return failf(msg, path, "expected an integer or a \"0x...\" hex string of at most 8 digits");
    for (s += 2; *s; s++) {
      int d = hex_digit(*s);
      if (d < 0) return failf(msg, path, "invalid hex digit in \"%s\"", v->string);
      x = (x << 4) | (unsigned)d;
    }
    *out = (unsigned)x;
    return 1;
  }
  if (v->type != MJ_NUMBER || !v->is_int) return failf(msg, path, "expected an integer, found %s", found(v));
  if (v->integer < 0 || v->integer > 0xFFFFFFFFLL)
    return failf(msg, path, "%lld is out of range 0..4294967295", v->integer);
  *out = (unsigned)v->integer;
  return 1;
}

int get_num(char *msg, const mj_value *obj, const char *base, const char *key, int required, double min,
            double max, double *out) {
  const mj_value *v;
  char path[256];
  int r = lookup(msg, obj, base, key, required, &v, path, sizeof path);
  if (r <= 0) return r;
  if (v->type != MJ_NUMBER) return failf(msg, path, "expected a number, found %s", found(v));
  if (!(v->number >= min && v->number <= max))
    return failf(msg, path, "%g is out of range %g..%g", v->number, min, max);
  *out = v->number;
  return 1;
}

int get_str(char *msg, const mj_value *obj, const char *base, const char *key, int required, size_t maxlen,
            char *out, size_t outn) {
  const mj_value *v;
  char path[256];
  int r = lookup(msg, obj, base, key, required, &v, path, sizeof path);
  if (r <= 0) return r;
  if (v->type != MJ_STRING) return failf(msg, path, "expected a string, found %s", found(v));
  if (v->length > maxlen) return failf(msg, path, "longer than %zu characters", maxlen);
  if (out) snprintf(out, outn, "%s", v->string);
  return 1;
}

int get_choice(char *msg, const mj_value *obj, const char *base, const char *key, int required,
               const char *const *names, int *out) {
  const mj_value *v;
  char path[256];
  int r = lookup(msg, obj, base, key, required, &v, path, sizeof path);
  if (r <= 0) return r;
  if (v->type == MJ_STRING)
    for (int i = 0; names[i]; i++)
      if (strcmp(names[i], v->string) == 0) {
        *out = i;
        return 1;
      }
  char list[128] = "";
  for (int i = 0; names[i]; i++) {
    strncat(list, i ? ", \"" : "\"", sizeof list - strlen(list) - 1);
    strncat(list, names[i], sizeof list - strlen(list) - 1);
    strncat(list, "\"", sizeof list - strlen(list) - 1);
  }
  return failf(msg, path, "expected one of %s", list);
}

int get_bool(char *msg, const mj_value *obj, const char *base, const char *key, int required, int *out) {
  const mj_value *v;
  char path[256];
  int r = lookup(msg, obj, base, key, required, &v, path, sizeof path);
  if (r <= 0) return r;
  if (v->type != MJ_BOOL) return failf(msg, path, "expected true or false, found %s", found(v));
  *out = v->boolean;
  return 1;
}
