/*
 * Small JSON reader and writer shared by the mock libdcmi.so and the mock hccn_tool.
 * Strict RFC 8259 syntax, bounded nesting, duplicate object keys rejected, errors carry line and column.
 * Every symbol is hidden so that the mock library exports only the DCMI interface.
 */
#ifndef ASCEND_NPU_AGENT_MOCK_JSON_H
#define ASCEND_NPU_AGENT_MOCK_JSON_H

#include <stdarg.h>
#include <stddef.h>

#define MJ_API __attribute__((visibility("hidden")))

#define MJ_MAX_DEPTH 64
#define MJ_MAX_FILE (1024u * 1024u) /* scenario files */
#define MJ_MAX_LINE (64u * 1024u)   /* one line of a file or one control request */

typedef enum { MJ_NULL, MJ_BOOL, MJ_NUMBER, MJ_STRING, MJ_ARRAY, MJ_OBJECT } mj_type;

typedef struct mj_value mj_value;
struct mj_value {
  mj_type type;
  unsigned line, col;   /* where the value starts (1-based) */
  int boolean;          /* MJ_BOOL */
  int is_int;           /* MJ_NUMBER written without fraction/exponent and fits in long long */
  long long integer;    /* valid when is_int */
  double number;        /* MJ_NUMBER, always set */
  char *string;         /* MJ_STRING: NUL-terminated, never contains NUL */
  size_t length;        /* MJ_STRING: bytes without the terminator */
  size_t count;         /* MJ_ARRAY / MJ_OBJECT: number of elements or members */
  mj_value *items;      /* elements, or member values */
  char **keys;          /* MJ_OBJECT: member names, parallel to items */
};

/* Parses text[0..len). max_line > 0 rejects any line longer than that many bytes. On error returns -1, writes
 * "line L column C: <reason>" to err and leaves *out as MJ_NULL. */
MJ_API int mj_parse(const char *text, size_t len, size_t max_line, mj_value *out, char *err, size_t errlen);
MJ_API void mj_free(mj_value *v);
/* Member lookup; NULL if obj is not an object or has no such key. */
MJ_API const mj_value *mj_get(const mj_value *obj, const char *key);
MJ_API const char *mj_type_name(mj_type t);
/* Reads a whole file (at most max_size bytes) into a NUL-terminated malloc'd buffer. */
MJ_API int mj_read_file(const char *path, size_t max_size, char **text, size_t *len, char *err, size_t errlen);

/* Growable output buffer. On allocation failure it sets failed and ignores further appends. */
typedef struct {
  char *data;
  size_t len, cap;
  int failed;
} mj_buf;

MJ_API void mj_buf_init(mj_buf *b);
MJ_API void mj_buf_free(mj_buf *b);
MJ_API void mj_buf_append(mj_buf *b, const char *s, size_t n);
MJ_API void mj_buf_puts(mj_buf *b, const char *s);
MJ_API void mj_buf_printf(mj_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal (quotes included, escaped). */
MJ_API void mj_buf_string(mj_buf *b, const char *s);

#endif
