/* JSON reader/writer for the mock DCMI library and the mock hccn_tool (see mock_json.h). */
#define _GNU_SOURCE
#include "mock_json.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
  const char *p, *end;
  const char *line_start;
  unsigned line;
  char *err;
  size_t errlen;
  int failed;
} parser;

static void fail_at(parser *ps, const char *where, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fail_at(parser *ps, const char *where, const char *fmt, ...) {
  if (ps->failed) return;
  ps->failed = 1;
  char reason[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  snprintf(ps->err, ps->errlen, "line %u column %u: %s", ps->line, (unsigned)(where - ps->line_start) + 1, reason);
}

static void describe(const parser *ps, char *out, size_t n) {
  if (ps->p >= ps->end) snprintf(out, n, "end of input");
  else {
    unsigned char c = (unsigned char)*ps->p;
    if (c >= 0x20 && c < 0x7f) snprintf(out, n, "'%c'", c);
    else snprintf(out, n, "byte 0x%02X", c);
  }
}

static void skip_ws(parser *ps) {
  while (ps->p < ps->end) {
    char c = *ps->p;
    if (c == '\n') {
      ps->line++;
      ps->line_start = ps->p + 1;
    } else if (c != ' ' && c != '\t' && c != '\r') {
      return;
    }
    ps->p++;
  }
}

static int hex4(const char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return -1;
  }
  *out = v;
  return 0;
}

static size_t utf8_put(char *dst, unsigned cp) {
  if (cp < 0x80) {
    dst[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    dst[0] = (char)(0xC0 | (cp >> 6));
    dst[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    dst[0] = (char)(0xE0 | (cp >> 12));
    dst[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    dst[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  dst[0] = (char)(0xF0 | (cp >> 18));
  dst[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  dst[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  dst[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* ps->p is at the opening quote. The decoded text is never longer than the source. */
static int parse_string(parser *ps, char **out, size_t *outlen) {
  const char *q = ps->p + 1;
  const char *close = q;
  while (close < ps->end && *close != '"') {
    if (*close == '\\' && close + 1 < ps->end) close++;
    close++;
  }
  if (close >= ps->end) {
    fail_at(ps, ps->p, "unterminated string");
    return -1;
  }
  char *buf = malloc((size_t)(close - q) + 1);
  if (!buf) {
    fail_at(ps, ps->p, "out of memory");
    return -1;
  }
  size_t n = 0;
  while (q < close) {
    unsigned char c = (unsigned char)*q;
    if (c < 0x20) {
      fail_at(ps, q, "control character 0x%02X in string (escape it)", c);
      goto bad;
    }
    if (c != '\\') {
      buf[n++] = (char)c;
      q++;
      continue;
    }
    char e = q[1];
    const char *esc = q;
    q += 2;
    switch (e) {
      case '"': buf[n++] = '"'; break;
      case '\\': buf[n++] = '\\'; break;
      case '/': buf[n++] = '/'; break;
      case 'b': buf[n++] = '\b'; break;
      case 'f': buf[n++] = '\f'; break;
      case 'n': buf[n++] = '\n'; break;
      case 'r': buf[n++] = '\r'; break;
      case 't': buf[n++] = '\t'; break;
      case 'u': {
        unsigned cp;
        if (close - q < 4 || hex4(q, &cp) != 0) {
          fail_at(ps, esc, "bad \\u escape (4 hex digits expected)");
          goto bad;
        }
        q += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          unsigned lo;
          if (close - q < 6 || q[0] != '\\' || q[1] != 'u' || hex4(q + 2, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF) {
            fail_at(ps, esc, "unpaired UTF-16 surrogate in \\u escape");
            goto bad;
          }
          q += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          fail_at(ps, esc, "unpaired UTF-16 surrogate in \\u escape");
          goto bad;
        } else if (cp == 0) {
          fail_at(ps, esc, "\\u0000 is not allowed in strings");
          goto bad;
        }
        n += utf8_put(buf + n, cp);
        break;
      }
      default:
        fail_at(ps, esc, "invalid escape sequence in string");
        goto bad;
    }
  }
  buf[n] = 0;
  ps->p = close + 1;
  *out = buf;
  *outlen = n;
  return 0;
bad:
  free(buf);
  return -1;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int parse_number(parser *ps, mj_value *v) {
  const char *s = ps->p, *q = s;
  int integral = 1;
  if (q < ps->end && *q == '-') q++;
  if (q >= ps->end || !is_digit(*q)) {
    fail_at(ps, s, "invalid number");
    return -1;
  }
  if (*q == '0') {
    q++;
    if (q < ps->end && is_digit(*q)) {
      fail_at(ps, s, "leading zeros are not allowed in numbers (write hex ids as strings)");
      return -1;
    }
  } else {
    while (q < ps->end && is_digit(*q)) q++;
  }
  if (q < ps->end && *q == '.') {
    integral = 0;
    q++;
    if (q >= ps->end || !is_digit(*q)) {
      fail_at(ps, s, "invalid number (digit expected after '.')");
      return -1;
    }
    while (q < ps->end && is_digit(*q)) q++;
  }
  if (q < ps->end && (*q == 'e' || *q == 'E')) {
    integral = 0;
    q++;
    if (q < ps->end && (*q == '+' || *q == '-')) q++;
    if (q >= ps->end || !is_digit(*q)) {
      fail_at(ps, s, "invalid number (digit expected in exponent)");
      return -1;
    }
    while (q < ps->end && is_digit(*q)) q++;
  }
  if (q < ps->end && (*q == 'x' || *q == 'X' || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'))) {
    fail_at(ps, s, "invalid number (hex values must be written as strings)");
    return -1;
  }
  char tmp[64];
  size_t n = (size_t)(q - s);
  if (n >= sizeof tmp) {
    fail_at(ps, s, "number too long");
    return -1;
  }
  memcpy(tmp, s, n);
  tmp[n] = 0;
  v->type = MJ_NUMBER;
  v->number = strtod(tmp, NULL);
  if (integral) {
    errno = 0;
    long long ll = strtoll(tmp, NULL, 10);
    if (errno == 0) {
      v->is_int = 1;
      v->integer = ll;
    }
  }
  ps->p = q;
  return 0;
}

static int literal(parser *ps, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return -1;
  const char *after = ps->p + n;
  if (after < ps->end && ((*after >= 'a' && *after <= 'z') || (*after >= 'A' && *after <= 'Z') || is_digit(*after)))
    return -1;
  ps->p = after;
  return 0;
}

static int parse_value(parser *ps, mj_value *v, int depth);

static int grow(void **arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap * 2 : 8;
  while (nc < need) nc *= 2;
  void *p = realloc(*arr, nc * elem);
  if (!p) return -1;
  *arr = p;
  *cap = nc;
  return 0;
}

static int parse_array(parser *ps, mj_value *v, int depth) {
  size_t cap = 0;
  v->type = MJ_ARRAY;
  ps->p++;
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == ']') {
    ps->p++;
    return 0;
  }
  for (;;) {
    if (grow((void **)&v->items, &cap, v->count + 1, sizeof(mj_value)) != 0) {
      fail_at(ps, ps->p, "out of memory");
      return -1;
    }
    mj_value *item = &v->items[v->count];
    memset(item, 0, sizeof *item);
    v->count++;
    if (parse_value(ps, item, depth + 1) != 0) return -1;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ps->p++;
      continue;
    }
    if (ps->p < ps->end && *ps->p == ']') {
      ps->p++;
      return 0;
    }
    char what[32];
    describe(ps, what, sizeof what);
    fail_at(ps, ps->p, "expected ',' or ']' in array, found %s", what);
    return -1;
  }
}

static int parse_object(parser *ps, mj_value *v, int depth) {
  size_t cap = 0, kcap = 0;
  v->type = MJ_OBJECT;
  ps->p++;
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == '}') {
    ps->p++;
    return 0;
  }
  for (;;) {
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '"') {
      char what[32];
      describe(ps, what, sizeof what);
      fail_at(ps, ps->p, "expected a member name in double quotes, found %s", what);
      return -1;
    }
    const char *key_at = ps->p;
    char *key;
    size_t klen;
    if (parse_string(ps, &key, &klen) != 0) return -1;
    for (size_t i = 0; i < v->count; i++) {
      if (strcmp(v->keys[i], key) == 0) {
        fail_at(ps, key_at, "duplicate member \"%.64s\"", key);
        free(key);
        return -1;
      }
    }
    if (grow((void **)&v->items, &cap, v->count + 1, sizeof(mj_value)) != 0 ||
        grow((void **)&v->keys, &kcap, v->count + 1, sizeof(char *)) != 0) {
      free(key);
      fail_at(ps, ps->p, "out of memory");
      return -1;
    }
    mj_value *item = &v->items[v->count];
    memset(item, 0, sizeof *item);
    v->keys[v->count] = key;
    v->count++;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') {
      char what[32];
      describe(ps, what, sizeof what);
      fail_at(ps, ps->p, "expected ':' after member name, found %s", what);
      return -1;
    }
    ps->p++;
    if (parse_value(ps, item, depth + 1) != 0) return -1;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ps->p++;
      continue;
    }
    if (ps->p < ps->end && *ps->p == '}') {
      ps->p++;
      return 0;
    }
    char what[32];
    describe(ps, what, sizeof what);
    fail_at(ps, ps->p, "expected ',' or '}' in object, found %s", what);
    return -1;
  }
}

static int parse_value(parser *ps, mj_value *v, int depth) {
  skip_ws(ps);
  v->line = ps->line;
  v->col = (unsigned)(ps->p - ps->line_start) + 1;
  if (depth > MJ_MAX_DEPTH) {
    fail_at(ps, ps->p, "nesting deeper than %d levels", MJ_MAX_DEPTH);
    return -1;
  }
  if (ps->p >= ps->end) {
    fail_at(ps, ps->p, "unexpected end of input (value expected)");
    return -1;
  }
  switch (*ps->p) {
    case '{': return parse_object(ps, v, depth);
    case '[': return parse_array(ps, v, depth);
    case '"':
      v->type = MJ_STRING;
      return parse_string(ps, &v->string, &v->length);
    case 't':
    case 'f':
    case 'n':
      if (literal(ps, "true") == 0) {
        v->type = MJ_BOOL;
        v->boolean = 1;
        return 0;
      }
      if (literal(ps, "false") == 0) {
        v->type = MJ_BOOL;
        return 0;
      }
      if (literal(ps, "null") == 0) {
        v->type = MJ_NULL;
        return 0;
      }
      break;
    default:
      if (*ps->p == '-' || is_digit(*ps->p)) return parse_number(ps, v);
      break;
  }
  char what[32];
  describe(ps, what, sizeof what);
  fail_at(ps, ps->p, "unexpected %s (a JSON value was expected)", what);
  return -1;
}

int mj_parse(const char *text, size_t len, size_t max_line, mj_value *out, char *err, size_t errlen) {
  parser ps = {text, text + len, text, 1, err, errlen, 0};
  memset(out, 0, sizeof *out);
  if (errlen) err[0] = 0;
  /* Line-length limit and embedded NUL bytes are checked before parsing. */
  const char *ls = text;
  unsigned line = 1;
  for (const char *q = text; q < text + len; q++) {
    if (*q == 0) {
      ps.line = line;
      ps.line_start = ls;
      fail_at(&ps, q, "NUL byte in input");
      return -1;
    }
    if (*q == '\n') {
      if (max_line && (size_t)(q - ls) > max_line) {
        snprintf(err, errlen, "line %u: longer than %zu bytes", line, max_line);
        return -1;
      }
      line++;
      ls = q + 1;
    }
  }
  if (max_line && (size_t)(text + len - ls) > max_line) {
    snprintf(err, errlen, "line %u: longer than %zu bytes", line, max_line);
    return -1;
  }
  skip_ws(&ps);
  if (ps.p >= ps.end) {
    fail_at(&ps, ps.p, "empty document");
    return -1;
  }
  if (parse_value(&ps, out, 0) != 0) {
    mj_free(out);
    return -1;
  }
  skip_ws(&ps);
  if (ps.p < ps.end) {
    char what[32];
    describe(&ps, what, sizeof what);
    fail_at(&ps, ps.p, "unexpected %s after the JSON value", what);
    mj_free(out);
    return -1;
  }
  return 0;
}

void mj_free(mj_value *v) {
  if (!v) return;
  if (v->type == MJ_STRING) free(v->string);
  if (v->type == MJ_ARRAY || v->type == MJ_OBJECT) {
    for (size_t i = 0; i < v->count; i++) {
      mj_free(&v->items[i]);
      if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
  }
  memset(v, 0, sizeof *v);
}

const mj_value *mj_get(const mj_value *obj, const char *key) {
  if (!obj || obj->type != MJ_OBJECT) return NULL;
  for (size_t i = 0; i < obj->count; i++)
    if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
  return NULL;
}

const char *mj_type_name(mj_type t) {
  switch (t) {
    case MJ_NULL: return "null";
    case MJ_BOOL: return "boolean";
    case MJ_NUMBER: return "number";
    case MJ_STRING: return "string";
    case MJ_ARRAY: return "array";
    case MJ_OBJECT: return "object";
  }
  return "?";
}

int mj_read_file(const char *path, size_t max_size, char **text, size_t *len, char *err, size_t errlen) {
  *text = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open: %s", strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "not a regular file");
    fclose(f);
    return -1;
  }
  if ((unsigned long long)st.st_size > max_size) {
    snprintf(err, errlen, "file is larger than %zu bytes", max_size);
    fclose(f);
    return -1;
  }
  char *buf = malloc(max_size + 1);
  if (!buf) {
    snprintf(err, errlen, "out of memory");
    fclose(f);
    return -1;
  }
  size_t n = fread(buf, 1, max_size + 1, f);
  int rerr = ferror(f);
  fclose(f);
  if (rerr) {
    snprintf(err, errlen, "read error");
    free(buf);
    return -1;
  }
  if (n > max_size) { /* grew while reading */
    snprintf(err, errlen, "file is larger than %zu bytes", max_size);
    free(buf);
    return -1;
  }
  buf[n] = 0;
  *text = buf;
  *len = n;
  return 0;
}

void mj_buf_init(mj_buf *b) { memset(b, 0, sizeof *b); }

void mj_buf_free(mj_buf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

void mj_buf_append(mj_buf *b, const char *s, size_t n) {
  if (b->failed) return;
  if (b->len + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + n + 1) nc *= 2;
    char *p = realloc(b->data, nc);
    if (!p) {
      b->failed = 1;
      return;
    }
    b->data = p;
    b->cap = nc;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void mj_buf_puts(mj_buf *b, const char *s) { mj_buf_append(b, s, strlen(s)); }

void mj_buf_printf(mj_buf *b, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->failed = 1;
    return;
  }
  if ((size_t)n < sizeof small) {
    mj_buf_append(b, small, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->failed = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  mj_buf_append(b, big, (size_t)n);
  free(big);
}

void mj_buf_string(mj_buf *b, const char *s) {
  mj_buf_append(b, "\"", 1);
  const char *run = s;
  for (const char *q = s; *q; q++) {
    unsigned char c = (unsigned char)*q;
    const char *rep = NULL;
    char tmp[8];
    if (c == '"') rep = "\\\"";
    else if (c == '\\') rep = "\\\\";
    else if (c == '\n') rep = "\\n";
    else if (c == '\r') rep = "\\r";
    else if (c == '\t') rep = "\\t";
    else if (c < 0x20 || c == 0x7f) {
      snprintf(tmp, sizeof tmp, "\\u%04x", c);
      rep = tmp;
    }
    if (rep) {
      mj_buf_append(b, run, (size_t)(q - run));
      mj_buf_puts(b, rep);
      run = q + 1;
    }
  }
  mj_buf_append(b, run, strlen(run));
  mj_buf_append(b, "\"", 1);
}
