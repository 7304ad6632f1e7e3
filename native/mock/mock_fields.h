/*
 * Typed field access over a parsed JSON object (mock_json.h), shared by the scenario loader (mock_model.c) and the
 * control requests (mock_control.c), so that both name a bad field the same way: msg receives
 * "<json path>: <reason>", e.g. "cards[3].chips[1].logicId: duplicate logic id 2" (scenarios/README.md).
 * Getters return 1 = present (*out set), 0 = absent and optional (*out untouched), -1 = error (msg set).
 * Every symbol is hidden so that the mock library exports only the DCMI interface.
 */
#ifndef ASCEND_NPU_AGENT_MOCK_FIELDS_H
#define ASCEND_NPU_AGENT_MOCK_FIELDS_H

#include <stddef.h>

#include "mock_json.h"

/* Hidden: internal to the mock library (the mock's own files use it for every cross-file symbol). */
#define MOCK_API __attribute__((visibility("hidden")))

#define MSG_LEN 512 /* size of every msg buffer */

/* Writes "<path>: <reason>" (or the reason alone when path is empty) to msg; returns -1. */
MOCK_API int failf(char *msg, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "base.key" (or "key" at the top level) and "base[index]"; return buf. */
MOCK_API const char *join_path(char *buf, size_t n, const char *base, const char *key);
MOCK_API const char *index_path(char *buf, size_t n, const char *base, size_t index);
/* "an integer", "a string", ... for "expected X, found Y" messages. */
MOCK_API const char *found(const mj_value *v);
/* "80E01801", "0x80e01801": 1..8 hex digits, non-zero. 0 = ok. */
MOCK_API int parse_code(const char *s, unsigned *out);

/* -1 (msg: "<base>.<name>: unknown field") if obj has a member not in the NULL-terminated allowed list. */
MOCK_API int check_fields(char *msg, const mj_value *obj, const char *base, const char *const *allowed);
MOCK_API int get_int(char *msg, const mj_value *obj, const char *base, const char *key, int required, long long min,
                     long long max, long long *out);
/* Board-style 32-bit ids: an integer 0..4294967295 or a "0x..." hex string. */
MOCK_API int get_id32(char *msg, const mj_value *obj, const char *base, const char *key, int required,
                      unsigned *out);
MOCK_API int get_num(char *msg, const mj_value *obj, const char *base, const char *key, int required, double min,
                     double max, double *out);
/* A string of at most maxlen bytes, copied to out (when out is not NULL). */
MOCK_API int get_str(char *msg, const mj_value *obj, const char *base, const char *key, int required, size_t maxlen,
                     char *out, size_t outn);
/* One of the NULL-terminated names; *out = its index. */
MOCK_API int get_choice(char *msg, const mj_value *obj, const char *base, const char *key, int required,
                        const char *const *names, int *out);
MOCK_API int get_bool(char *msg, const mj_value *obj, const char *base, const char *key, int required, int *out);

#endif
