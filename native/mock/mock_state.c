/*
 * The mock's chip state file (see mock_state.h): one JSON object,
 *   {"version":1,"bootId":"<kernel boot id>","chips":[{"logicId":0,"phyId":0,"health":0,"errorCodes":["80E01801"],
 *    "link":"UP","processes":0,"dropped":false,"resets":1,"resetAttempts":1,"resetResult":"ok","bootSeconds":5,
 *    "callSeconds":0,"hung":false,"bootUntilNs":123456789}]}
 * with every chip of the scenario, in scenario order. bootUntilNs is a CLOCK_BOOTTIME deadline (0 = not booting).
 */
#define _GNU_SOURCE
#include "mock_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mock_json.h"
#include "mock_model.h"

#define STATE_VERSION 1
#define BOOT_ID_LEN 64

unsigned long long boot_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* The kernel's boot id (a UUID), "" when it cannot be read. */
static void boot_id(char *out, size_t n) {
  out[0] = 0;
  int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t r = read(fd, out, n - 1);
  close(fd);
  if (r <= 0) {
    out[0] = 0;
    return;
  }
  out[r] = 0;
  out[strcspn(out, "\n")] = 0;
  for (char *p = out; *p; p++)
    if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) *p = '?'; /* written into JSON as is */
}

/* ------------------------------------------------------------------------------------------- restore */

static const char *const top_fields[] = {"version", "bootId", "chips", NULL};
static const char *const chip_fields[] = {"logicId",     "phyId",       "health",      "errorCodes", "link",
                                          "processes",   "dropped",     "resets",      "resetAttempts",
                                          "resetResult", "bootSeconds", "callSeconds", "hung",       "bootUntilNs",
                                          NULL};

static int restore_chip(char *msg, struct scenario *sc, const mj_value *o, const char *path, int same_boot,
                        unsigned char *seen) {
  long long v;
  char fp[256];
  if (o->type != MJ_OBJECT) return failf(msg, path, "expected an object, found %s", found(o));
  if (check_fields(msg, o, path, chip_fields)) return -1;
  if (get_int(msg, o, path, "logicId", 1, 0, MAX_ID, &v) < 0) return -1;
  struct chip *c = chip_by_logic(sc, v);
  if (!c) return failf(msg, join_path(fp, sizeof fp, path, "logicId"), "%lld is not a chip of the scenario", v);
  if (seen[c->logic_id]) return failf(msg, join_path(fp, sizeof fp, path, "logicId"), "%lld listed twice", v);
  seen[c->logic_id] = 1;
  if (get_int(msg, o, path, "phyId", 1, 0, MAX_ID, &v) < 0) return -1;
  if ((unsigned)v != c->phy_id)
    return failf(msg, join_path(fp, sizeof fp, path, "phyId"), "%lld, but the scenario's chip logicId %u has phyId %u",
                 v, c->logic_id, c->phy_id);
  if (get_int(msg, o, path, "health", 1, 0, 0xFFFFFFFFLL, &v) < 0) return -1;
  c->health = (unsigned)v;
  const mj_value *codes = mj_get(o, "errorCodes");
  join_path(fp, sizeof fp, path, "errorCodes");
  if (!codes) return failf(msg, fp, "required field missing");
  if (codes->type != MJ_ARRAY) return failf(msg, fp, "expected an array, found %s", found(codes));
  if (codes->count > DCMI_MAX_ERROR_CODES) return failf(msg, fp, "more than %d codes", DCMI_MAX_ERROR_CODES);
  c->ncodes = 0;
  for (size_t i = 0; i < codes->count; i++) {
    char ip[280];
    unsigned code;
    index_path(ip, sizeof ip, fp, i);
    if (codes->items[i].type != MJ_STRING || parse_code(codes->items[i].string, &code) != 0)
      return failf(msg, ip, "expected a non-zero hex code string of 1-8 digits, e.g. \"80E01801\"");
    for (int j = 0; j < c->ncodes; j++)
      if (c->codes[j] == code) return failf(msg, ip, "code %08X listed twice", code);
    c->codes[c->ncodes++] = code;
  }
  if (get_choice(msg, o, path, "link", 1, link_names, &c->link_up) < 0) return -1;
  if (get_int(msg, o, path, "processes", 1, 0, DCMI_MAX_PROC_NUM, &v) < 0) return -1;
  c->processes = (int)v;
  if (get_bool(msg, o, path, "dropped", 1, &c->dropped) < 0) return -1;
  if (get_int(msg, o, path, "resets", 1, 0, 0x7FFFFFFFFFFFFFFFLL, &v) < 0) return -1;
  c->resets = (unsigned long long)v;
  if (get_int(msg, o, path, "resetAttempts", 1, 0, 0x7FFFFFFFFFFFFFFFLL, &v) < 0) return -1;
  c->reset_attempts = (unsigned long long)v;
  if (get_choice(msg, o, path, "resetResult", 1, reset_names, &c->reset_mode) < 0) return -1;
  if (get_num(msg, o, path, "bootSeconds", 1, 0, 86400, &c->boot_seconds) < 0) return -1;
  if (get_num(msg, o, path, "callSeconds", 1, 0, 86400, &c->call_seconds) < 0) return -1;
  if (get_bool(msg, o, path, "hung", 1, &c->hung) < 0) return -1;
  if (get_int(msg, o, path, "bootUntilNs", 1, 0, 0x7FFFFFFFFFFFFFFFLL, &v) < 0) return -1;
  /* mock_state.h: a deadline of another boot of the machine is over (the chip booted with the machine) */
  c->boot_until_ns = same_boot ? (unsigned long long)v : 0;
  return 0;
}

int state_restore(struct scenario *sc, const char *path, char *msg) {
  char err[MSG_LEN];
  char *text;
  size_t len;
  if (access(path, F_OK) != 0 && errno == ENOENT) return 1;
  if (mj_read_file(path, MJ_MAX_FILE, &text, &len, err, sizeof err) != 0) return failf(msg, "", "%s", err);
  mj_value root;
  int rc = mj_parse(text, len, 0, &root, err, sizeof err);
  free(text);
  if (rc != 0) return failf(msg, "", "%s", err);
  rc = -1;
  long long version;
  char id[BOOT_ID_LEN], now_id[BOOT_ID_LEN];
  const mj_value *chips;
  unsigned char seen[MAX_ID + 1] = {0};
  if (root.type != MJ_OBJECT) {
    failf(msg, "top level", "expected an object, found %s", found(&root));
    goto done;
  }
  if (check_fields(msg, &root, "", top_fields) || get_int(msg, &root, "", "version", 1, 1, 1000, &version) < 0)
    goto done;
  if (version != STATE_VERSION) {
    failf(msg, "version", "%lld is not supported (this mock writes %d)", version, STATE_VERSION);
    goto done;
  }
  if (get_str(msg, &root, "", "bootId", 1, BOOT_ID_LEN - 1, id, sizeof id) < 0) goto done;
  boot_id(now_id, sizeof now_id);
  chips = mj_get(&root, "chips");
  if (!chips) {
    failf(msg, "chips", "required field missing");
    goto done;
  }
  if (chips->type != MJ_ARRAY) {
    failf(msg, "chips", "expected an array, found %s", found(chips));
    goto done;
  }
  for (size_t i = 0; i < chips->count; i++) {
    char cp[64];
    index_path(cp, sizeof cp, "chips", i);
    if (restore_chip(msg, sc, &chips->items[i], cp, id[0] && !strcmp(id, now_id), seen)) goto done;
  }
  for (int i = 0; i < sc->nchips; i++) {
    if (!seen[sc->chips[i].logic_id]) {
      failf(msg, "chips", "no entry for the scenario's chip logicId %u (a state file of another scenario?)",
            sc->chips[i].logic_id);
      goto done;
    }
  }
  rc = 0;
done:
  mj_free(&root);
  return rc;
}

/* ---------------------------------------------------------------------------------------------- save */

static void put_chip(mj_buf *b, const struct chip *c) {
  mj_buf_printf(b, "{\"logicId\":%u,\"phyId\":%u,\"health\":%u,\"errorCodes\":[", c->logic_id, c->phy_id, c->health);
  for (int i = 0; i < c->ncodes; i++) mj_buf_printf(b, "%s\"%08X\"", i ? "," : "", c->codes[i]);
  mj_buf_printf(b,
                "],\"link\":\"%s\",\"processes\":%d,\"dropped\":%s,\"resets\":%llu,\"resetAttempts\":%llu,"
                "\"resetResult\":\"%s\",\"bootSeconds\":%.17g,\"callSeconds\":%.17g,\"hung\":%s,\"bootUntilNs\":%llu}",
                link_names[c->link_up ? 1 : 0], c->processes, c->dropped ? "true" : "false", c->resets,
                c->reset_attempts, reset_names[c->reset_mode], c->boot_seconds, c->call_seconds,
                c->hung ? "true" : "false", c->boot_until_ns);
}

/* Writes all of data to a new file next to path, then renames it over path. 0 or an errno. */
static int write_atomically(const char *path, const char *data, size_t len) {
  char tmp[4200];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) return ENAMETOOLONG;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return errno;
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = w < 0 ? errno : EIO;
      close(fd);
      unlink(tmp);
      return e;
    }
    off += (size_t)w;
  }
  if (close(fd) != 0 || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return e;
  }
  return 0;
}

void state_save(struct mock_model *m) {
  if (!m->state_path || !m->sc) return;
  char id[BOOT_ID_LEN];
  boot_id(id, sizeof id);
  mj_buf b;
  mj_buf_init(&b);
  mj_buf_printf(&b, "{\"version\":%d,\"bootId\":\"%s\",\"chips\":[", STATE_VERSION, id);
  for (int i = 0; i < m->sc->nchips; i++) {
    if (i) mj_buf_puts(&b, ",");
    put_chip(&b, &m->sc->chips[i]);
  }
  mj_buf_puts(&b, "]}\n");
  int e = b.failed ? ENOMEM : write_atomically(m->state_path, b.data, b.len);
  mj_buf_free(&b);
  if (e && !m->state_write_failed) {
    char reason[128];
    snprintf(reason, sizeof reason, "cannot write the chip state: %s (reported once; every change tries again)",
             strerror(e));
    report_load_error(m->state_path, reason);
  }
  m->state_write_failed = e != 0;
}
