/*
 * The switch part of the mock's hardware model (mock_switch.h) and the bridge functions the mock
 * liblingqu-dcmi.so calls (mock_lq_init, mock_lq_subscribe, mock_lq_get_fault_info; exported from libdcmi.so).
 */
#define _GNU_SOURCE
#include "mock_switch.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mock_model.h"

static const char *const switch_fields[] = {"chips", "init", "subscribe", "faults", NULL};
static const char *const fault_fields[] = {"op",   "alarmId",  "faultId",   "peer",      "peerPortId", "chipId",
                                           "portId", "severity", "assertion", "timeMs", NULL};
static const char *const ok_fail[] = {"ok", "fail", NULL};
static const char *const peer_names[] = {"cpu", "npu", "L2", "na", NULL};
static const char *const assertions[] = {"recover", "occur", "once", NULL};

const char *switch_code(char *buf, size_t n, const struct LqDcmiEvent *ev) {
  static const char *const peers[] = {"cpu", "npu", "L2"};
  const char *peer = ev->peerportDevice < 3 ? peers[ev->peerportDevice] : "na";
  if (ev->subType == LQ_SUBTYPE_NA) snprintf(buf, n, "[0x%08x,na,%s,na]", (unsigned)ev->eventType, peer);
  else snprintf(buf, n, "[0x%08x,%u,%s,na]", (unsigned)ev->eventType, ev->subType, peer);
  return buf;
}

int switch_event_of(char *msg, const mj_value *obj, const char *base, const struct switch_model *sw,
                    struct LqDcmiEvent *ev) {
  char text[16], path[128];
  memset(ev, 0, sizeof *ev);
  if (get_str(msg, obj, base, "alarmId", 1, 10, text, sizeof text) < 0) return -1;
  unsigned alarm;
  if (parse_code(text, &alarm) != 0)
    return failf(msg, join_path(path, sizeof path, base, "alarmId"),
                 "expected 1-8 hex digits (0x prefix allowed, not zero), e.g. \"0x00f1fef5\"");
  ev->eventType = (int)alarm;
  const mj_value *fid = mj_get(obj, "faultId");
  if (!fid || (fid->type == MJ_STRING && !strcmp(fid->string, "na"))) ev->subType = LQ_SUBTYPE_NA;
  else {
    long long v;
    if (get_int(msg, obj, base, "faultId", 1, 0, 0xFFFFFFFELL, &v) < 0) return -1;
    ev->subType = (unsigned)v;
  }
  int peer = 0;
  if (get_choice(msg, obj, base, "peer", 1, peer_names, &peer) < 0) return -1;
  ev->peerportDevice = peer == 3 ? 0xFFFF : (unsigned short)peer;
  long long v = 0;
  if (get_int(msg, obj, base, "peerPortId", 0, 0, 0xFFFF, &v) < 0) return -1;
  ev->peerportId = (unsigned short)v;
  v = 0;
  if (get_int(msg, obj, base, "chipId", 0, 0, sw->chips > 0 ? sw->chips - 1 : 0, &v) < 0) return -1;
  ev->switchChipid = (unsigned short)v;
  v = 0;
  if (get_int(msg, obj, base, "portId", 0, 0, 0xFFFF, &v) < 0) return -1;
  ev->switchPortid = (unsigned short)v;
  v = 2;
  if (get_int(msg, obj, base, "severity", 0, 0, 3, &v) < 0) return -1;
  ev->severity = (unsigned char)v;
  int as = 1;
  if (get_choice(msg, obj, base, "assertion", 0, assertions, &as) < 0) return -1;
  ev->assertion = (unsigned char)as;
  v = 0;
  if (get_int(msg, obj, base, "timeMs", 0, 0, 0x7FFFFFFFFFFFLL, &v) < 0) return -1;
  ev->alarmRaisedTime = (unsigned long)v;
  return 0;
}

static int same_fault(const struct LqDcmiEvent *a, const struct LqDcmiEvent *b) {
  return a->eventType == b->eventType && a->subType == b->subType && a->peerportDevice == b->peerportDevice &&
         a->peerportId == b->peerportId && a->switchChipid == b->switchChipid && a->switchPortid == b->switchPortid;
}

int switch_apply(struct switch_model *sw, const struct LqDcmiEvent *ev) {
  int j = 0;
  for (int i = 0; i < sw->nfaults; i++)
    if (!same_fault(&sw->faults[i], ev)) sw->faults[j++] = sw->faults[i];
  sw->nfaults = j;
  if (ev->assertion == 0) return 0;
  if (sw->nfaults >= MAX_SWITCH_FAULTS) return -1;
  sw->faults[sw->nfaults++] = *ev;
  return 0;
}

int switch_load(char *msg, const mj_value *root, struct switch_model *sw) {
  memset(sw, 0, sizeof *sw);
  const mj_value *o = mj_get(root, "switch");
  if (!o) return 0;
  if (o->type != MJ_OBJECT) return failf(msg, "switch", "expected an object, found %s", found(o));
  if (check_fields(msg, o, "switch", switch_fields)) return -1;
  long long chips = 1;
  if (get_int(msg, o, "switch", "chips", 0, 1, MAX_SWITCH_CHIPS, &chips) < 0) return -1;
  int init_fail = 0, sub_fail = 0;
  if (get_choice(msg, o, "switch", "init", 0, ok_fail, &init_fail) < 0 ||
      get_choice(msg, o, "switch", "subscribe", 0, ok_fail, &sub_fail) < 0)
    return -1;
  sw->present = 1;
  sw->chips = (int)chips;
  sw->init_ok = !init_fail;
  sw->subscribe_ok = !sub_fail;
  const mj_value *faults = mj_get(o, "faults");
  if (!faults) return 0;
  if (faults->type != MJ_ARRAY) return failf(msg, "switch.faults", "expected an array, found %s", found(faults));
  for (size_t i = 0; i < faults->count; i++) {
    char path[64];
    snprintf(path, sizeof path, "switch.faults[%zu]", i);
    const mj_value *f = &faults->items[i];
    if (f->type != MJ_OBJECT) return failf(msg, path, "expected an object, found %s", found(f));
    if (check_fields(msg, f, path, fault_fields + 1)) return -1;
    struct LqDcmiEvent ev;
    if (switch_event_of(msg, f, path, sw, &ev) < 0) return -1;
    if (switch_apply(sw, &ev) < 0) return failf(msg, path, "more than %d switch faults", MAX_SWITCH_FAULTS);
  }
  return 0;
}

void switch_put_state(mj_buf *b, const struct switch_model *sw, int subscribed) {
  mj_buf_printf(b, "{\"present\":%s,\"chips\":%d,\"subscribed\":%s,\"faults\":[", sw->present ? "true" : "false",
                sw->chips, subscribed ? "true" : "false");
  for (int i = 0; i < sw->nfaults; i++) {
    const struct LqDcmiEvent *e = &sw->faults[i];
    char code[64];
    mj_buf_printf(b, "%s{\"code\":", i ? "," : "");
    mj_buf_string(b, switch_code(code, sizeof code, e));
    mj_buf_printf(b, ",\"chipId\":%u,\"portId\":%u,\"assertion\":\"%s\"}", e->switchChipid, e->switchPortid,
                  assertions[e->assertion < 3 ? e->assertion : 1]);
  }
  mj_buf_puts(b, "]}");
}

/* ------------------------------------------------------------------- bridge for liblingqu-dcmi.so */

#pragma GCC visibility push(default)
int mock_lq_init(void);
int mock_lq_subscribe(LqDcmiFaultEventCallback handler);
int mock_lq_get_fault_info(unsigned int list_len, unsigned int *count, struct LqDcmiEvent *list);
#pragma GCC visibility pop

/* Return codes of the mock switch library (a real one's are vendor codes; any non-zero is a failure). */
#define LQ_ERR_NO_SWITCH (-8005)
#define LQ_ERR_PARAM (-8001)
#define LQ_ERR_STATE (-8020)

int mock_lq_init(void) {
  struct mock_model *m = mock_model();
  pthread_mutex_lock(&m->mu);
  int rc = !m->sc ? LQ_ERR_STATE : !m->sc->sw.present || !m->sc->sw.init_ok ? LQ_ERR_NO_SWITCH : 0;
  if (rc == 0) m->lq_inited = 1;
  pthread_mutex_unlock(&m->mu);
  __atomic_fetch_add(&m->lq_calls[0], 1, __ATOMIC_RELAXED);
  return rc;
}

int mock_lq_subscribe(LqDcmiFaultEventCallback handler) {
  struct mock_model *m = mock_model();
  __atomic_fetch_add(&m->lq_calls[1], 1, __ATOMIC_RELAXED);
  if (!handler) return LQ_ERR_PARAM;
  pthread_mutex_lock(&m->mu);
  int rc = !m->sc || !m->lq_inited ? LQ_ERR_STATE : !m->sc->sw.subscribe_ok ? LQ_ERR_NO_SWITCH : 0;
  if (rc == 0) {
    m->lq_sub.active = 1;
    m->lq_sub.handler = handler;
  }
  pthread_mutex_unlock(&m->mu);
  return rc;
}

int mock_lq_get_fault_info(unsigned int list_len, unsigned int *count, struct LqDcmiEvent *list) {
  struct mock_model *m = mock_model();
  __atomic_fetch_add(&m->lq_calls[2], 1, __ATOMIC_RELAXED);
  if (!count || (!list && list_len > 0)) return LQ_ERR_PARAM;
  pthread_mutex_lock(&m->mu);
  if (!m->sc || !m->lq_inited) {
    pthread_mutex_unlock(&m->mu);
    return LQ_ERR_STATE;
  }
  unsigned n = 0;
  for (int i = 0; i < m->sc->sw.nfaults && n < list_len; i++) list[n++] = m->sc->sw.faults[i];
  *count = n;
  pthread_mutex_unlock(&m->mu);
  return 0;
}

void switch_deliver(struct mock_model *m, LqDcmiFaultEventCallback h, const struct LqDcmiEvent *tmpl) {
  struct LqDcmiEvent ev = *tmpl;
  ev.eventSerialNum = ev.notifySerialNum = __atomic_add_fetch(&m->lq_serial, 1, __ATOMIC_RELAXED);
  pthread_mutex_lock(&m->cb_mu);
  h(&ev);
  pthread_mutex_unlock(&m->cb_mu);
  __atomic_fetch_add(&m->lq_events_fired, 1, __ATOMIC_RELAXED);
}
