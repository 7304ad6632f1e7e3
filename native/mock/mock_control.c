/*
 * The mock's control server (see mock_control.h): a Unix socket on which tests change the hardware model and fire
 * fault events, one JSON request per line and one reply line per request (scenarios/README.md "Control socket").
 *
 * Threads: one control thread (a poll loop over the wake eventfd, the listening socket and every client) plus one
 * short-lived thread per running "burst". Fault callbacks run only on those threads, never while the model lock is
 * held, and one at a time (model_deliver). control_stop joins every one of them.
 */
#define _GNU_SOURCE
#include "mock_control.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "mock_json.h"
#include "mock_model.h"
#include "mock_ports.h"
#include "mock_vdevice.h"

#define MAX_BURST 10000000L
#define MAX_CLIENT_OUT (64u * 1024u * 1024u)

static const char *const assertion_names[] = {"recover", "occur", "once", NULL};

/* -------------------------------------------------------------------------------------- connections */

struct client {
  int fd;
  char *in;
  size_t in_len, in_cap;
  int discarding; /* dropping the rest of an over-long line */
  int eof;        /* peer finished sending */
  int busy;       /* a burst owns the next reply */
  int dead;       /* connection gone; freed when no burst refers to it */
  mj_buf out;
  size_t out_off;
};

struct burst {
  struct mock_server *srv;
  struct client *cl;
  pthread_t tid;
  struct event_spec spec;
  long count;
  double rate;
  long fired;
  unsigned long long elapsed_ns;
  int finished; /* atomic */
  struct burst *next;
};

struct mock_server {
  struct mock_model *model;
  int listen_fd, wake_fd;
  char *path;
  dev_t dev;
  ino_t ino;
  pthread_t tid;
  int stop; /* atomic */
  struct client **clients;
  size_t nclients, cap;
  struct burst *bursts;
};

static void wake(struct mock_server *srv) {
  uint64_t one = 1;
  ssize_t w = write(srv->wake_fd, &one, sizeof one);
  (void)w;
}

static void reply_error(struct client *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void reply_error(struct client *cl, const char *fmt, ...) {
  char msg[MSG_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  mj_buf_puts(&cl->out, "{\"ok\":false,\"error\":");
  mj_buf_string(&cl->out, msg);
  mj_buf_puts(&cl->out, "}\n");
}

/* ------------------------------------------------------------------------------------------ replies */

static void put_codes(mj_buf *b, const struct chip *c) {
  mj_buf_puts(b, "[");
  for (int i = 0; i < c->ncodes; i++) mj_buf_printf(b, "%s\"%08X\"", i ? "," : "", c->codes[i]);
  mj_buf_puts(b, "]");
}

static void put_state(struct mock_model *m, mj_buf *b) {
  mj_buf_puts(b, "{\"ok\":true,\"chips\":[");
  for (int i = 0; i < m->sc->nchips; i++) {
    const struct chip *c = &m->sc->chips[i];
    mj_buf_printf(b,
                  "%s{\"logicId\":%u,\"phyId\":%u,\"cardId\":%d,\"deviceId\":%d,\"health\":%u,\"errorCodes\":",
                  i ? "," : "", c->logic_id, c->phy_id, c->card_id, c->device_id, c->health);
    put_codes(b, c);
    mj_buf_printf(b, ",\"link\":\"%s\",\"processes\":%d,\"dropped\":%s,\"resets\":%llu,\"resetAttempts\":%llu,"
                     "\"resetResult\":\"%s\",\"bootSeconds\":%g,\"bootStatus\":%d,",
                  c->link_up ? "UP" : "DOWN", c->processes, c->dropped ? "true" : "false", c->resets,
                  c->reset_attempts, reset_names[c->reset_mode], c->boot_seconds, chip_boot_status(c));
    mj_buf_printf(b, "\"callSeconds\":%g,", c->call_seconds);
    if (c->has_ip) mj_buf_printf(b, "\"ip\":\"%u.%u.%u.%u\"", c->ip[0], c->ip[1], c->ip[2], c->ip[3]);
    else mj_buf_puts(b, "\"ip\":null");
    mj_buf_printf(b, ",\"roceTx\":%llu,\"roceRx\":%llu,", c->tx, c->rx);
    vdev_put_state(b, m->sc, c);
    mj_buf_puts(b, "}");
  }
  mj_buf_puts(b, "],\"stateFile\":");
  if (m->state_path) mj_buf_string(b, m->state_path);
  else mj_buf_puts(b, "null");
  mj_buf_printf(b, ",\"counters\":{\"subscribeCalls\":%llu,\"subscribed\":%s,\"eventsFired\":%llu,\"callsByName\":{",
                __atomic_load_n(&m->subscribe_calls, __ATOMIC_RELAXED), m->sub.active ? "true" : "false",
                __atomic_load_n(&m->events_fired, __ATOMIC_RELAXED));
  int first = 1;
  for (int i = 0; i < FN_COUNT; i++) {
    unsigned long long n = __atomic_load_n(&m->calls[i], __ATOMIC_RELAXED);
    if (!n) continue;
    mj_buf_printf(b, "%s\"%s\":%llu", first ? "" : ",", fn_names[i], n);
    first = 0;
  }
  mj_buf_puts(b, "}}}\n");
}

/* ------------------------------------------------------------------------------------------- bursts */

/* Fires bu->count events at bu->rate (0 = as fast as possible) to the current subscriber, then wakes the server. */
static void *burst_main(void *arg) {
  struct burst *bu = arg;
  struct mock_model *m = bu->srv->model;
  model_mark_own_thread();
  struct subscription s;
  unsigned gen;
  pthread_mutex_lock(&m->mu);
  s = m->sub;
  gen = __atomic_load_n(&m->sub_gen, __ATOMIC_ACQUIRE);
  pthread_mutex_unlock(&m->mu);
  struct dcmi_event tmpl;
  event_template(&tmpl, &bu->spec);
  unsigned long long start = mono_ns();
  double step_ns = bu->rate > 0 ? 1e9 / bu->rate : 0;
  for (long i = 0; i < bu->count; i++) {
    if (__atomic_load_n(&bu->srv->stop, __ATOMIC_ACQUIRE)) break;
    if (step_ns > 0 && i > 0) {
      unsigned long long due = start + (unsigned long long)(step_ns * (double)i);
      for (;;) { /* absolute deadline, slept in slices so that unloading never waits long */
        if (__atomic_load_n(&bu->srv->stop, __ATOMIC_ACQUIRE)) break;
        unsigned long long now = mono_ns();
        if (now >= due) break;
        unsigned long long until = due - now > 50000000ULL ? now + 50000000ULL : due;
        struct timespec ts = {(time_t)(until / 1000000000ULL), (long)(until % 1000000000ULL)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
      }
      if (__atomic_load_n(&bu->srv->stop, __ATOMIC_ACQUIRE)) break;
    }
    if (__atomic_load_n(&m->sub_gen, __ATOMIC_ACQUIRE) != gen) {
      pthread_mutex_lock(&m->mu);
      s = m->sub;
      gen = __atomic_load_n(&m->sub_gen, __ATOMIC_ACQUIRE);
      pthread_mutex_unlock(&m->mu);
    }
    if (!sub_matches(&s, &bu->spec)) continue;
    model_deliver(m, s.handler, &tmpl, (int)(i + 1));
    bu->fired++;
  }
  bu->elapsed_ns = mono_ns() - start;
  __atomic_store_n(&bu->finished, 1, __ATOMIC_RELEASE);
  wake(bu->srv);
  return NULL;
}

/* ----------------------------------------------------------------------------------------- requests */
/* scenarios/README.md "Control socket": the fields each op allows. */

static const char *const base_fields[] = {"op", "t", NULL};
static const char *const fault_fields[] = {"op", "t", "logicId", "eventId", "assertion", "severity", NULL};
static const char *const burst_fields[] = {"op",       "t",     "logicId",    "eventId", "assertion",
                                           "severity", "count", "ratePerSec", NULL};
static const char *const health_fields[] = {"op", "t", "logicId", "value", NULL};
static const char *const link_fields[] = {"op", "t", "logicId", "status", NULL};
static const char *const logic_fields[] = {"op", "t", "logicId", NULL};
static const char *const processes_fields[] = {"op", "t", "logicId", "count", NULL};
static const char *const reset_fields[] = {"op", "t", "logicId", "result", "bootSeconds", "callSeconds", NULL};
static const char *const stat_fields[] = {"op", "t", "logicId", "tx", "rx", "growPerQuery", NULL};
static const char *const roce_fields[] = {"op", "t", "phyId", NULL};

/* logicId field -> chip (model lock held). */
static struct chip *req_chip(struct scenario *sc, char *msg, const mj_value *req) {
  long long logic;
  if (get_int(msg, req, "", "logicId", 1, 0, 0x7FFFFFFFLL, &logic) < 0) return NULL;
  struct chip *c = chip_by_logic(sc, logic);
  if (!c) failf(msg, "logicId", "unknown logicId %lld", logic);
  return c;
}

static int req_event(char *msg, const mj_value *req, int assertion_required, unsigned *code, int *assertion,
                     unsigned char *severity) {
  char text[16];
  if (get_str(msg, req, "", "eventId", 1, 10, text, sizeof text) < 0) return -1;
  if (parse_code(text, code) != 0)
    return failf(msg, "eventId", "expected 1-8 hex digits (0x prefix allowed, not zero), e.g. \"80E01801\"");
  if (get_choice(msg, req, "", "assertion", assertion_required, assertion_names, assertion) < 0) return -1;
  long long sev = 2;
  if (get_int(msg, req, "", "severity", 0, 0, 255, &sev) < 0) return -1;
  *severity = (unsigned char)sev;
  return 0;
}

/* One handler per op. Each runs with the model locked and a scenario loaded, and returns OP_OK (handle_line replies
 * {"ok":true,"logicId":N} for the request's chip), OP_BAD (handle_line replies the error in r->msg; failf returns
 * it), or OP_DONE: the handler released the lock itself and queued its reply (a burst's follows when it ends). */

enum { OP_BAD = -1, OP_OK = 0, OP_DONE = 1 };

struct request {
  struct mock_server *srv;
  struct client *cl;
  struct mock_model *m; /* locked while a handler runs */
  const mj_value *req;
  struct chip *c; /* the chip named by logicId (ops that take one) */
  char msg[MSG_LEN];
};

static int op_state(struct request *r) {
  put_state(r->m, &r->cl->out);
  pthread_mutex_unlock(&r->m->mu);
  return OP_DONE;
}

static int op_roce_stat(struct request *r) {
  long long phy;
  if (get_int(r->msg, r->req, "", "phyId", 1, 0, 0x7FFFFFFFLL, &phy) < 0) return OP_BAD;
  struct chip *c = chip_by_phy(r->m->sc, phy);
  if (!c) return failf(r->msg, "", "unknown phyId %lld", phy);
  if (c->dropped) return failf(r->msg, "", "phyId %lld: chip dropped (card drop)", phy);
  chip_roce_query(c);
  mj_buf_printf(&r->cl->out, "{\"ok\":true,\"logicId\":%u,\"phyId\":%u,\"link\":\"%s\",\"tx\":%llu,\"rx\":%llu}\n",
                c->logic_id, c->phy_id, c->link_up ? "UP" : "DOWN", c->tx, c->rx);
  pthread_mutex_unlock(&r->m->mu);
  return OP_DONE;
}

/* fault (notify = 1) and silentFault (notify = 0): change the code list, then call the subscriber (without the lock). */
static int fault(struct request *r, int notify) {
  struct chip *c = r->c;
  unsigned code;
  int assertion = 1;
  unsigned char sev;
  if (req_event(r->msg, r->req, 1, &code, &assertion, &sev) < 0) return OP_BAD;
  if (chip_apply_code(c, code, assertion) < 0)
    return failf(r->msg, "eventId", "error-code list of logicId %u is full (%d codes)", c->logic_id,
                 DCMI_MAX_ERROR_CODES);
  struct event_spec e = {c->card_id, c->device_id, c->logic_id, code, sev, (unsigned char)assertion};
  struct subscription s = r->m->sub;
  mj_buf reply;
  mj_buf_init(&reply);
  mj_buf_printf(&reply, "{\"ok\":true,\"logicId\":%u,\"eventId\":\"%08X\",\"assertion\":\"%s\",\"errorCodes\":",
                c->logic_id, code, assertion_names[assertion]);
  put_codes(&reply, c);
  int fire = notify && sub_matches(&s, &e);
  int serial = fire ? model_next_serial(r->m) : 0;
  model_changed(r->m);
  pthread_mutex_unlock(&r->m->mu);
  if (fire) {
    struct dcmi_event tmpl;
    event_template(&tmpl, &e);
    model_deliver(r->m, s.handler, &tmpl, serial);
  }
  mj_buf_printf(&reply, ",\"fired\":%s}\n", fire ? "true" : "false");
  mj_buf_append(&r->cl->out, reply.data ? reply.data : "", reply.len);
  mj_buf_free(&reply);
  return OP_DONE;
}

static int op_fault(struct request *r) { return fault(r, 1); }

static int op_silent_fault(struct request *r) { return fault(r, 0); }

/* Starts a burst thread; the client's next reply (and its next request) waits until the burst ends. */
static int op_burst(struct request *r) {
  struct chip *c = r->c;
  unsigned code;
  int assertion = 2;
  unsigned char sev;
  long long count;
  double rate = 0;
  if (req_event(r->msg, r->req, 0, &code, &assertion, &sev) < 0 ||
      get_int(r->msg, r->req, "", "count", 1, 1, MAX_BURST, &count) < 0 ||
      get_num(r->msg, r->req, "", "ratePerSec", 0, 0, 1e9, &rate) < 0)
    return OP_BAD;
  if (!r->m->sub.active) return failf(r->msg, "", "not subscribed: call dcmi_subscribe_fault_event first");
  if (chip_apply_code(c, code, assertion) < 0)
    return failf(r->msg, "eventId", "error-code list of logicId %u is full (%d codes)", c->logic_id,
                 DCMI_MAX_ERROR_CODES);
  struct burst *bu = calloc(1, sizeof *bu);
  if (!bu) return failf(r->msg, "", "out of memory");
  struct event_spec e = {c->card_id, c->device_id, c->logic_id, code, sev, (unsigned char)assertion};
  bu->srv = r->srv;
  bu->cl = r->cl;
  bu->spec = e;
  bu->count = (long)count;
  bu->rate = rate;
  model_changed(r->m);
  pthread_mutex_unlock(&r->m->mu);
  if (pthread_create(&bu->tid, NULL, burst_main, bu) != 0) {
    free(bu);
    reply_error(r->cl, "cannot start burst thread");
    return OP_DONE;
  }
  bu->next = r->srv->bursts;
  r->srv->bursts = bu;
  r->cl->busy = 1;
  return OP_DONE;
}

static int op_health(struct request *r) {
  long long v;
  if (get_int(r->msg, r->req, "", "value", 1, 0, 0xFFFFFFFFLL, &v) < 0) return OP_BAD;
  r->c->health = (unsigned)v;
  return OP_OK;
}

static int op_link(struct request *r) {
  int up;
  if (get_choice(r->msg, r->req, "", "status", 1, link_names, &up) < 0) return OP_BAD;
  r->c->link_up = up;
  return OP_OK;
}

static int op_drop(struct request *r) {
  r->c->dropped = 1;
  return OP_OK;
}

static int op_restore(struct request *r) {
  r->c->dropped = 0;
  return OP_OK;
}

static int op_processes(struct request *r) {
  long long v;
  if (get_int(r->msg, r->req, "", "count", 1, 0, DCMI_MAX_PROC_NUM, &v) < 0) return OP_BAD;
  r->c->processes = (int)v;
  return OP_OK;
}

static int op_reset_result(struct request *r) {
  int mode;
  double boot = 0, call = 0;
  if (get_choice(r->msg, r->req, "", "result", 1, reset_names, &mode) < 0 ||
      get_num(r->msg, r->req, "", "bootSeconds", 0, 0, 86400, &boot) < 0 ||
      get_num(r->msg, r->req, "", "callSeconds", 0, 0, 86400, &call) < 0)
    return OP_BAD;
  r->c->reset_mode = mode;
  r->c->boot_seconds = boot;
  r->c->call_seconds = call;
  return OP_OK;
}

static int op_stat(struct request *r) {
  struct chip *c = r->c;
  long long tx = (long long)c->tx, rx = (long long)c->rx, grow = 0;
  if (get_int(r->msg, r->req, "", "tx", 0, 0, 0x7FFFFFFFFFFFFFFFLL, &tx) < 0 ||
      get_int(r->msg, r->req, "", "rx", 0, 0, 0x7FFFFFFFFFFFFFFFLL, &rx) < 0 ||
      get_int(r->msg, r->req, "", "growPerQuery", 0, 0, 1LL << 40, &grow) < 0)
    return OP_BAD;
  c->tx = (unsigned long long)tx;
  c->rx = (unsigned long long)rx;
  c->growth = (unsigned long long)grow;
  return OP_OK;
}

/* switchFault: change the switch model's current faults, then call the switch subscriber (without the lock) unless
 * "notify" is false (then only lq_dcmi_get_fault_info sees it). */
static const char *const switch_fault_fields[] = {"op",     "alarmId",  "faultId",   "peer",   "peerPortId", "chipId",
                                                  "portId", "severity", "assertion", "timeMs", "notify",     "t",        NULL};

static int op_switch_fault(struct request *r) {
  struct switch_model *sw = &r->m->sc->sw;
  if (!sw->present) return failf(r->msg, "", "the scenario has no \"switch\" object (no switch chips)");
  struct LqDcmiEvent ev;
  if (switch_event_of(r->msg, r->req, "", sw, &ev) < 0) return OP_BAD;
  int notify = 1;
  if (get_bool(r->msg, r->req, "", "notify", 0, &notify) < 0) return OP_BAD;
  if (switch_apply(sw, &ev) < 0) return failf(r->msg, "", "switch fault list is full (%d faults)", MAX_SWITCH_FAULTS);
  struct switch_sub sub = r->m->lq_sub;
  int n = sw->nfaults;
  pthread_mutex_unlock(&r->m->mu);
  int fire = notify && sub.active;
  if (fire) switch_deliver(r->m, sub.handler, &ev);
  char code[64];
  mj_buf_puts(&r->cl->out, "{\"ok\":true,\"code\":");
  mj_buf_string(&r->cl->out, switch_code(code, sizeof code, &ev));
  mj_buf_printf(&r->cl->out, ",\"faults\":%d,\"fired\":%s}\n", n, fire ? "true" : "false");
  return OP_DONE;
}

static int op_switch_state(struct request *r) {
  struct mock_model *m = r->m;
  mj_buf_puts(&r->cl->out, "{\"ok\":true,\"switch\":");
  switch_put_state(&r->cl->out, &m->sc->sw, m->lq_sub.active);
  mj_buf_printf(&r->cl->out, ",\"counters\":{\"init\":%llu,\"subscribe\":%llu,\"query\":%llu,\"eventsFired\":%llu}}\n",
                __atomic_load_n(&m->lq_calls[0], __ATOMIC_RELAXED), __atomic_load_n(&m->lq_calls[1], __ATOMIC_RELAXED),
                __atomic_load_n(&m->lq_calls[2], __ATOMIC_RELAXED),
                __atomic_load_n(&m->lq_events_fired, __ATOMIC_RELAXED));
  pthread_mutex_unlock(&m->mu);
  return OP_DONE;
}

static const struct op {
  const char *name;
  const char *const *fields; /* allowed request fields */
  int by_logic;              /* names its chip by logicId */
  int (*run)(struct request *r);
} ops[] = {
    {"fault", fault_fields, 1, op_fault},
    {"silentFault", fault_fields, 1, op_silent_fault},
    {"burst", burst_fields, 1, op_burst},
    {"health", health_fields, 1, op_health},
    {"link", link_fields, 1, op_link},
    {"drop", logic_fields, 1, op_drop},
    {"restore", logic_fields, 1, op_restore},
    {"processes", processes_fields, 1, op_processes},
    {"resetResult", reset_fields, 1, op_reset_result},
    {"stat", stat_fields, 1, op_stat},
    {"roceStat", roce_fields, 0, op_roce_stat},
    {"state", base_fields, 0, op_state},
    {"switchFault", switch_fault_fields, 0, op_switch_fault},
    {"switchState", base_fields, 0, op_switch_state},
};

static void run_request(struct request *r) {
  char op[32];
  if (r->req->type != MJ_OBJECT) {
    reply_error(r->cl, "request must be a JSON object");
    return;
  }
  if (get_str(r->msg, r->req, "", "op", 1, sizeof op - 1, op, sizeof op) < 0) {
    reply_error(r->cl, "%s", r->msg);
    return;
  }
  const struct op *o = NULL;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0] && !o; i++)
    if (!strcmp(ops[i].name, op)) o = &ops[i];
  if (!o) { /* the vNPU ops (mock_vdevice.c) */
    pthread_mutex_lock(&r->m->mu);
    int vr = r->m->sc ? ports_control(r->m->sc, op, r->req, &r->cl->out, r->msg) : -1;
    if (vr == PORTS_NOT_MINE) vr = vdev_control(r->m->sc, op, r->req, &r->cl->out, r->msg);
    if (!r->m->sc) failf(r->msg, "", "mock not loaded");
    pthread_mutex_unlock(&r->m->mu);
    if (vr == 0) return;
    if (vr == -1) {
      reply_error(r->cl, "%s", r->msg);
      return;
    }
    reply_error(r->cl, "unknown op \"%s\" (fault, silentFault, health, link, drop, restore, processes, resetResult, "
                       "state, burst, stat, roceStat, switchFault, switchState, vdevs, createVdev, destroyVdev, "
                       "vdevResult, port, ports)", op);
    return;
  }
  if (check_fields(r->msg, r->req, "", o->fields)) {
    reply_error(r->cl, "%s", r->msg);
    return;
  }
  struct mock_model *m = r->m;
  pthread_mutex_lock(&m->mu);
  if (!m->sc) {
    pthread_mutex_unlock(&m->mu);
    reply_error(r->cl, "mock not loaded");
    return;
  }
  int rc = OP_BAD;
  if (!o->by_logic || (r->c = req_chip(m->sc, r->msg, r->req))) rc = o->run(r);
  if (rc == OP_DONE) return;
  if (rc == OP_OK) {
    model_changed(m); /* every OP_OK op changes chip state (the state file, mock_state.h) */
    mj_buf_printf(&r->cl->out, "{\"ok\":true,\"logicId\":%u}\n", r->c->logic_id);
  }
  pthread_mutex_unlock(&m->mu);
  if (rc == OP_BAD) reply_error(r->cl, "%s", r->msg);
}

/* Handles one request line; the reply goes to cl->out (or later, from a burst). */
static void handle_line(struct mock_server *srv, struct client *cl, const char *line, size_t len) {
  char errbuf[MSG_LEN];
  if (len > MJ_MAX_LINE) {
    reply_error(cl, "request line longer than %u bytes", MJ_MAX_LINE);
    return;
  }
  mj_value req;
  if (mj_parse(line, len, 0, &req, errbuf, sizeof errbuf) != 0) {
    reply_error(cl, "request is not valid JSON: %s", errbuf);
    return;
  }
  struct request r = {.srv = srv, .cl = cl, .m = srv->model, .req = &req};
  run_request(&r);
  mj_free(&req);
}

/* -------------------------------------------------------------------------------------------- server */

/* Runs every complete request line (in order) until a burst makes the client wait. */
static void client_process(struct mock_server *srv, struct client *cl) {
  size_t start = 0;
  while (!cl->busy && !cl->dead) {
    char *nl = memchr(cl->in + start, '\n', cl->in_len - start);
    size_t n;
    if (nl) n = (size_t)(nl - (cl->in + start));
    else if (cl->eof && start < cl->in_len) n = cl->in_len - start; /* last line without newline */
    else break;
    const char *line = cl->in + start;
    start += nl ? n + 1 : n;
    if (cl->discarding) {
      cl->discarding = 0;
      continue;
    }
    size_t m = n;
    if (m && line[m - 1] == '\r') m--;
    size_t k = 0;
    while (k < m && (line[k] == ' ' || line[k] == '\t')) k++;
    if (k == m) continue; /* blank line */
    handle_line(srv, cl, line, m);
  }
  if (start) {
    memmove(cl->in, cl->in + start, cl->in_len - start);
    cl->in_len -= start;
  }
  if (!cl->busy && cl->in_len > MJ_MAX_LINE) { /* incomplete line already too long */
    if (!cl->discarding) reply_error(cl, "request line longer than %u bytes", MJ_MAX_LINE);
    cl->discarding = 1;
    cl->in_len = 0;
  }
}

static void client_flush(struct client *cl) {
  while (!cl->dead && cl->out_off < cl->out.len) {
    ssize_t w = send(cl->fd, cl->out.data + cl->out_off, cl->out.len - cl->out_off, MSG_NOSIGNAL);
    if (w > 0) {
      cl->out_off += (size_t)w;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else {
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      cl->dead = 1;
    }
  }
  if (cl->out_off == cl->out.len) {
    cl->out.len = 0;
    cl->out_off = 0;
  } else if (cl->out.len - cl->out_off > MAX_CLIENT_OUT) {
    cl->dead = 1; /* the peer does not read its replies */
  }
  if (cl->out.failed) cl->dead = 1;
}

static void client_read(struct mock_server *srv, struct client *cl) {
  const size_t chunk = 64 * 1024;
  if (cl->in_cap < cl->in_len + chunk) {
    size_t nc = cl->in_len + chunk;
    char *p = realloc(cl->in, nc);
    if (!p) {
      cl->dead = 1;
      return;
    }
    cl->in = p;
    cl->in_cap = nc;
  }
  ssize_t r = recv(cl->fd, cl->in + cl->in_len, chunk, 0);
  if (r < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) cl->dead = 1;
    return;
  }
  if (r == 0) cl->eof = 1;
  else cl->in_len += (size_t)r;
  client_process(srv, cl);
}

static void client_free(struct client *cl) {
  if (cl->fd >= 0) close(cl->fd);
  free(cl->in);
  mj_buf_free(&cl->out);
  free(cl);
}

static void reap_bursts(struct mock_server *srv, int all) {
  struct burst **pp = &srv->bursts;
  while (*pp) {
    struct burst *bu = *pp;
    if (!all && !__atomic_load_n(&bu->finished, __ATOMIC_ACQUIRE)) {
      pp = &bu->next;
      continue;
    }
    pthread_join(bu->tid, NULL);
    *pp = bu->next;
    struct client *cl = bu->cl;
    cl->busy = 0;
    if (!all && !cl->dead) {
      mj_buf_printf(&cl->out, "{\"ok\":true,\"fired\":%ld,\"requested\":%ld,\"elapsedNs\":%llu}\n", bu->fired,
                    bu->count, bu->elapsed_ns);
      client_process(srv, cl); /* requests that queued up behind the burst */
      client_flush(cl);
    }
    free(bu);
  }
}

static void accept_clients(struct mock_server *srv) {
  for (;;) {
    int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    struct client *cl = calloc(1, sizeof *cl);
    if (!cl) {
      close(fd);
      return;
    }
    if (srv->nclients == srv->cap) {
      size_t nc = srv->cap ? srv->cap * 2 : 8;
      struct client **p = realloc(srv->clients, nc * sizeof *p);
      if (!p) {
        close(fd);
        free(cl);
        return;
      }
      srv->clients = p;
      srv->cap = nc;
    }
    cl->fd = fd;
    mj_buf_init(&cl->out);
    srv->clients[srv->nclients++] = cl;
  }
}

static void *server_main(void *arg) {
  struct mock_server *srv = arg;
  model_mark_own_thread();
  struct pollfd *pfds = NULL;
  size_t pcap = 0;
  while (!__atomic_load_n(&srv->stop, __ATOMIC_ACQUIRE)) {
    size_t need = srv->nclients + 2;
    if (need > pcap) {
      struct pollfd *p = realloc(pfds, need * sizeof *p);
      if (!p) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
        continue;
      }
      pfds = p;
      pcap = need;
    }
    pfds[0] = (struct pollfd){srv->wake_fd, POLLIN, 0};
    pfds[1] = (struct pollfd){srv->listen_fd, POLLIN, 0};
    for (size_t i = 0; i < srv->nclients; i++) {
      struct client *cl = srv->clients[i];
      short ev = 0;
      if (!cl->dead) {
        if (!cl->busy && !cl->eof) ev |= POLLIN;
        if (cl->out_off < cl->out.len) ev |= POLLOUT;
      }
      /* a busy client with nothing to send is not polled: a hang-up is noticed after its burst */
      pfds[i + 2] = (struct pollfd){ev ? cl->fd : -1, ev, 0};
    }
    int n = poll(pfds, srv->nclients + 2, -1);
    if (n < 0) continue;
    if (pfds[0].revents & POLLIN) {
      uint64_t v;
      ssize_t r = read(srv->wake_fd, &v, sizeof v);
      (void)r;
      reap_bursts(srv, 0);
    }
    if (__atomic_load_n(&srv->stop, __ATOMIC_ACQUIRE)) break;
    size_t nold = srv->nclients;
    for (size_t i = 0; i < nold; i++) {
      struct client *cl = srv->clients[i];
      short re = pfds[i + 2].revents;
      if (pfds[i + 2].fd < 0 || !re) continue;
      if (re & POLLIN) client_read(srv, cl);
      else if (re & (POLLHUP | POLLERR)) {
        cl->eof = 1;
        client_process(srv, cl);
      }
      client_flush(cl);
      if (re & (POLLERR | POLLNVAL)) cl->dead = 1;
    }
    if (pfds[1].revents & POLLIN) accept_clients(srv);
    /* close finished clients: dead ones, and ones whose peer stopped sending and got every reply */
    size_t k = 0;
    for (size_t i = 0; i < srv->nclients; i++) {
      struct client *cl = srv->clients[i];
      int done = cl->dead || (cl->eof && !cl->busy && cl->out_off == cl->out.len);
      if (done && !cl->busy) {
        client_free(cl);
        continue;
      }
      if (done && cl->fd >= 0) { /* a burst still points at it: keep the struct, drop the connection */
        close(cl->fd);
        cl->fd = -1;
        cl->dead = 1;
      }
      srv->clients[k++] = cl;
    }
    srv->nclients = k;
  }
  reap_bursts(srv, 1); /* stop is set: bursts return promptly */
  for (size_t i = 0; i < srv->nclients; i++) client_free(srv->clients[i]);
  free(srv->clients);
  srv->clients = NULL;
  srv->nclients = 0;
  free(pfds);
  return NULL;
}

struct mock_server *control_start(struct mock_model *m, const char *path, char *msg) {
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof addr.sun_path) {
    failf(msg, "", "control socket path longer than %zu bytes", sizeof addr.sun_path - 1);
    return NULL;
  }
  memcpy(addr.sun_path, path, strlen(path) + 1);
  struct mock_server *srv = calloc(1, sizeof *srv);
  if (!srv || !(srv->path = strdup(path))) {
    free(srv);
    failf(msg, "", "out of memory");
    return NULL;
  }
  srv->model = m;
  srv->listen_fd = srv->wake_fd = -1;
  struct stat st;
  if (lstat(path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      failf(msg, "", "exists and is not a socket; not removing it");
      goto fail;
    }
    unlink(path); /* stale socket of an earlier run */
  }
  srv->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (srv->listen_fd < 0 || bind(srv->listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    failf(msg, "", "cannot create control socket: %s", strerror(errno));
    goto fail;
  }
  if (chmod(path, 0600) != 0 || listen(srv->listen_fd, 64) != 0 || stat(path, &st) != 0) {
    failf(msg, "", "cannot listen on control socket: %s", strerror(errno));
    unlink(path);
    goto fail;
  }
  srv->dev = st.st_dev;
  srv->ino = st.st_ino;
  srv->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (srv->wake_fd < 0 || pthread_create(&srv->tid, NULL, server_main, srv) != 0) {
    failf(msg, "", "cannot start control thread: %s", strerror(errno));
    unlink(path);
    goto fail;
  }
  return srv;
fail:
  if (srv->listen_fd >= 0) close(srv->listen_fd);
  if (srv->wake_fd >= 0) close(srv->wake_fd);
  free(srv->path);
  free(srv);
  return NULL;
}

void control_stop(struct mock_server *srv) {
  __atomic_store_n(&srv->stop, 1, __ATOMIC_RELEASE);
  wake(srv);
  pthread_join(srv->tid, NULL);
  close(srv->listen_fd);
  close(srv->wake_fd);
  struct stat st; /* remove the socket only if it is still ours */
  if (lstat(srv->path, &st) == 0 && st.st_dev == srv->dev && st.st_ino == srv->ino) unlink(srv->path);
  free(srv->path);
  free(srv);
}
