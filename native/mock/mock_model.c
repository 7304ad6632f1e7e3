/*
 * The mock's hardware model (see mock_model.h): scenario loading, chip lookup and behaviour, the fault
 * subscription and event delivery, the call counters, all in the one model object.
 */
#define _GNU_SOURCE
#include "mock_model.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mock_json.h"
#include "mock_state.h"
#include "mock_vdevice.h"

#define ROCE_DEFAULT_GROWTH 1000ULL

const char *const reset_names[] = {"ok", "fail", "hang", NULL};
const char *const link_names[] = {"DOWN", "UP", NULL};

const char *const fn_names[FN_COUNT] = {
#define MOCK_FN_NAME(name, params) #name,
    DCMI_BOUND_FUNCTIONS(MOCK_FN_NAME) DCMI_UNBOUND_FUNCTIONS(MOCK_FN_NAME) "(v2 functions follow)",
    DCMI_V2_FUNCTIONS(MOCK_FN_NAME)
#undef MOCK_FN_NAME
};

static struct mock_model the_model = {
    .life_mu = PTHREAD_MUTEX_INITIALIZER,
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .cb_mu = PTHREAD_MUTEX_INITIALIZER,
};
static __thread int t_mock_thread; /* set on threads the mock owns */

struct mock_model *mock_model(void) { return &the_model; }

unsigned long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

void model_mark_own_thread(void) { t_mock_thread = 1; }

int model_on_own_thread(void) { return t_mock_thread; }

/* ---------------------------------------------------------------------------- scenario loading */

static const char *const top_fields[] = {"chipName", "chipType", "chipVersion", "npuName", "aicoreCount", "boardId",
                                         "pcbId", "bomId", "slotId", "mainboardId", "dcmiVersion", "productType",
                                         "subscribe", "workMode", "hbmSizeMiB", "superPod", "timeline", "switch",
                                         "description", "cards", "vnpuTemplates", "apiVersion", "elabel", NULL};
static const char *const spod_fields[] = {"superPodId", "serverId", "scaleType", "chassisId", "superPodType", NULL};
static const char *const elabel_fields[] = {"productName", "model", "manufacturer", "manufacturerDate",
                                            "serialNumber", NULL};
static const char *const card_fields[] = {"cardId", "brotherCardId", "productType", "chips", NULL};
static const char *const chip_fields[] = {"deviceId", "logicId", "phyId", "health", "errorCodes", "ip", "link",
                                          "processes", "affinityCpu", "pcieBus", "dropped", "resetResult",
                                          "bootSeconds", "callSeconds", "dieId", "ports", "urma", NULL};

/* scenario chip "urma": an array (<= 8) of URMA devices, each an array (<= 32) of 32-hex-digit EIDs */
static int load_urma(char *msg, struct chip *c, const mj_value *o, const char *path) {
  char fp[256], ep[320];
  const mj_value *u = mj_get(o, "urma");
  if (!u) return 0;
  join_path(fp, sizeof fp, path, "urma");
  if (u->type != MJ_ARRAY) return failf(msg, fp, "expected an array of URMA devices, found %s", found(u));
  if (u->count > MOCK_MAX_URMA) return failf(msg, fp, "%zu URMA devices, at most %d allowed", u->count, MOCK_MAX_URMA);
  for (size_t i = 0; i < u->count; i++) {
    const mj_value *d = &u->items[i];
    snprintf(ep, sizeof ep, "%s[%zu]", fp, i);
    if (d->type != MJ_ARRAY) return failf(msg, ep, "expected an array of EIDs, found %s", found(d));
    if (d->count > MOCK_MAX_URMA_EIDS)
      return failf(msg, ep, "%zu EIDs, at most %d allowed", d->count, MOCK_MAX_URMA_EIDS);
    for (size_t j = 0; j < d->count; j++) {
      const mj_value *e = &d->items[j];
      char xp[340];
      snprintf(xp, sizeof xp, "%s[%zu]", ep, j);
      if (e->type != MJ_STRING) return failf(msg, xp, "expected an EID string, found %s", found(e));
      if (e->length != 32 || strspn(e->string, "0123456789abcdefABCDEF") != 32)
        return failf(msg, xp, "\"%s\" is not an EID: 32 hex digits expected", e->string);
      for (int k = 0; k < 16; k++) {
        unsigned byte;
        sscanf(e->string + 2 * k, "%2x", &byte);
        c->eids[i][j][k] = (unsigned char)byte;
      }
    }
    c->neids[i] = (int)d->count;
  }
  c->nurma = (int)u->count;
  return 0;
}

static int load_chip(char *msg, struct scenario *sc, struct card *cd, const mj_value *o, const char *path) {
  long long v;
  if (o->type != MJ_OBJECT) return failf(msg, path, "expected an object, found %s", found(o));
  if (check_fields(msg, o, path, chip_fields)) return -1;
  struct chip *c = &sc->chips[sc->nchips];
  memset(c, 0, sizeof *c);
  c->card_id = cd->card_id;
  c->card_index = (int)(cd - sc->cards);
  if (get_int(msg, o, path, "deviceId", 1, 0, MAX_CHIPS_PER_CARD - 1, &v) < 0) return -1;
  c->device_id = (int)v;
  if (get_int(msg, o, path, "logicId", 1, 0, MAX_ID, &v) < 0) return -1;
  c->logic_id = (unsigned)v;
  if (get_int(msg, o, path, "phyId", 1, 0, MAX_ID, &v) < 0) return -1;
  c->phy_id = (unsigned)v;
  char fp[256];
  if (sc->by_logic[c->logic_id] >= 0)
    return failf(msg, join_path(fp, sizeof fp, path, "logicId"), "duplicate logic id %u", c->logic_id);
  if (sc->by_phy[c->phy_id] >= 0)
    return failf(msg, join_path(fp, sizeof fp, path, "phyId"), "duplicate phy id %u", c->phy_id);
  if (c->device_id >= cd->nchips)
    return failf(msg, join_path(fp, sizeof fp, path, "deviceId"), "%d, but card %d has %d chips (device ids 0..%d)",
                 c->device_id, cd->card_id, cd->nchips, cd->nchips - 1);
  if (cd->chip_index[c->device_id] >= 0)
    return failf(msg, join_path(fp, sizeof fp, path, "deviceId"), "duplicate device id %d on card %d", c->device_id,
                 cd->card_id);
  v = 0;
  if (get_int(msg, o, path, "health", 0, 0, 0xFFFFFFFFLL, &v) < 0) return -1;
  c->health = (unsigned)v;
  const mj_value *codes = mj_get(o, "errorCodes");
  if (codes) {
    join_path(fp, sizeof fp, path, "errorCodes");
    if (codes->type != MJ_ARRAY) return failf(msg, fp, "expected an array, found %s", found(codes));
    if (codes->count > DCMI_MAX_ERROR_CODES) return failf(msg, fp, "more than %d codes", DCMI_MAX_ERROR_CODES);
    for (size_t i = 0; i < codes->count; i++) {
      char ip[256];
      index_path(ip, sizeof ip, fp, i);
      unsigned code;
      if (codes->items[i].type != MJ_STRING || parse_code(codes->items[i].string, &code) != 0)
        return failf(msg, ip, "expected a non-zero hex code string of 1-8 digits, e.g. \"80E01801\"");
      for (int j = 0; j < c->ncodes; j++)
        if (c->codes[j] == code) return failf(msg, ip, "code %08X listed twice", code);
      c->codes[c->ncodes++] = code;
    }
  }
  char ipbuf[64];
  int r = get_str(msg, o, path, "ip", 0, 15, ipbuf, sizeof ipbuf);
  if (r < 0) return -1;
  if (r == 1) {
    struct in_addr a;
    if (inet_pton(AF_INET, ipbuf, &a) != 1)
      return failf(msg, join_path(fp, sizeof fp, path, "ip"), "\"%s\" is not an IPv4 address", ipbuf);
    memcpy(c->ip, &a, 4);
    c->has_ip = 1;
  }
  c->link_up = 1;
  if (get_choice(msg, o, path, "link", 0, link_names, &c->link_up) < 0) return -1;
  v = 0;
  if (get_int(msg, o, path, "processes", 0, 0, DCMI_MAX_PROC_NUM, &v) < 0) return -1;
  c->processes = (int)v;
  snprintf(c->affinity, sizeof c->affinity, "0-23");
  if (get_str(msg, o, path, "affinityCpu", 0, DCMI_AFFINITY_BUF - 1, c->affinity, sizeof c->affinity) < 0) return -1;
  v = (long long)((c->logic_id * 16 + 1) & 0xFF);
  if (get_int(msg, o, path, "pcieBus", 0, 0, 255, &v) < 0) return -1;
  c->pcie_bus = (unsigned)v;
  if (get_bool(msg, o, path, "dropped", 0, &c->dropped) < 0) return -1;
  if (get_choice(msg, o, path, "resetResult", 0, reset_names, &c->reset_mode) < 0) return -1;
  if (get_num(msg, o, path, "bootSeconds", 0, 0, 86400, &c->boot_seconds) < 0) return -1;
  if (get_num(msg, o, path, "callSeconds", 0, 0, 86400, &c->call_seconds) < 0) return -1;
  c->growth = ROCE_DEFAULT_GROWTH;
  char die[64];
  r = get_str(msg, o, path, "dieId", 0, 44, die, sizeof die);
  if (r < 0) return -1;
  if (r == 1) { /* the text form of spec L.7 / dcmi-abi §4.8: five 8-digit hex words joined by '-' */
    char tail;
    if (strlen(die) != 44 || sscanf(die, "%8x-%8x-%8x-%8x-%8x%c", &c->die[0], &c->die[1], &c->die[2], &c->die[3],
                                    &c->die[4], &tail) != 5)
      return failf(msg, join_path(fp, sizeof fp, path, "dieId"),
                   "\"%s\" is not five 8-digit hex words joined by '-', e.g. \"C281A66C-80A047F2-0A645632-CC500485-100301E3\"",
                   die);
    c->has_die = 1;
  }
  if (ports_load(msg, sc, c, o, path) < 0) return -1;
  if (load_urma(msg, c, o, path) < 0) return -1;
  cd->chip_index[c->device_id] = sc->nchips;
  sc->by_logic[c->logic_id] = sc->nchips;
  sc->by_phy[c->phy_id] = sc->nchips;
  sc->nchips++;
  return 0;
}

static int load_scenario(const mj_value *root, struct scenario *sc, char *msg) {
  long long v;
  memset(sc, 0, sizeof *sc);
  for (int i = 0; i <= MAX_ID; i++) sc->by_logic[i] = sc->by_phy[i] = -1;
  if (root->type != MJ_OBJECT) return failf(msg, "top level", "expected an object, found %s", found(root));
  if (check_fields(msg, root, "", top_fields)) return -1;
  const size_t namemax = MAX_CHIP_NAME_LEN - 1;
  if (get_str(msg, root, "", "chipName", 1, namemax, sc->chip_name, sizeof sc->chip_name) < 0) return -1;
  if (!sc->chip_name[0]) return failf(msg, "chipName", "must not be empty");
  snprintf(sc->chip_type, sizeof sc->chip_type, "Ascend");
  if (get_str(msg, root, "", "chipType", 0, namemax, sc->chip_type, sizeof sc->chip_type) < 0) return -1;
  snprintf(sc->chip_ver, sizeof sc->chip_ver, "V1");
  if (get_str(msg, root, "", "chipVersion", 0, namemax, sc->chip_ver, sizeof sc->chip_ver) < 0) return -1;
  if (get_str(msg, root, "", "npuName", 0, namemax, sc->npu_name, sizeof sc->npu_name) < 0) return -1;
  v = 20;
  if (get_int(msg, root, "", "aicoreCount", 0, 0, 0xFFFFFFFFLL, &v) < 0) return -1;
  sc->aicore = (unsigned)v;
  if (get_id32(msg, root, "", "boardId", 1, &sc->board.board_id) < 0) return -1;
  if (get_id32(msg, root, "", "pcbId", 0, &sc->board.pcb_id) < 0) return -1;
  if (get_id32(msg, root, "", "bomId", 0, &sc->board.bom_id) < 0) return -1;
  if (get_id32(msg, root, "", "slotId", 0, &sc->board.slot_id) < 0) return -1;
  sc->mainboard = 0xFFFFFFFFu;
  if (get_id32(msg, root, "", "mainboardId", 0, &sc->mainboard) < 0) return -1;
  snprintf(sc->dcmi_version, sizeof sc->dcmi_version, "24.1.rc3");
  if (get_str(msg, root, "", "dcmiVersion", 0, DCMI_VERSION_BUF - 1, sc->dcmi_version, sizeof sc->dcmi_version) < 0)
    return -1;
  if (get_str(msg, root, "", "productType", 0, DCMI_PRODUCT_TYPE_BUF - 1, sc->product_type,
              sizeof sc->product_type) < 0)
    return -1;
  int fail_sub = 0;
  static const char *const sub_names[] = {"ok", "fail", NULL};
  if (get_choice(msg, root, "", "subscribe", 0, sub_names, &fail_sub) < 0) return -1;
  sc->subscribe_ok = !fail_sub;
  v = 0;
  if (get_int(msg, root, "", "workMode", 0, 0, 255, &v) < 0) return -1;
  sc->work_mode = (unsigned char)v;
  v = 65536;
  if (get_int(msg, root, "", "hbmSizeMiB", 0, 0, 1LL << 40, &v) < 0) return -1;
  sc->hbm_mib = (unsigned long long)v;
  v = 1; /* dcmi-abi.md §1.3: 2 = an Ascend910A5 driver, answering only the dcmiv2_* functions */
  if (get_int(msg, root, "", "apiVersion", 0, 1, 2, &v) < 0) return -1;
  sc->api_version = (int)v;
  const mj_value *el = mj_get(root, "elabel");
  if (el) {
    if (el->type != MJ_OBJECT) return failf(msg, "elabel", "expected an object, found %s", found(el));
    if (check_fields(msg, el, "elabel", elabel_fields)) return -1;
    for (int i = 0; i < 5; i++) { /* the serial number gets the phy id appended: leave room for 3 digits */
      size_t max = i == 4 ? DCMI_ELABEL_LEN - 4 : DCMI_ELABEL_LEN - 1;
      if (get_str(msg, el, "elabel", elabel_fields[i], 0, max, sc->elabel[i], sizeof sc->elabel[i]) < 0) return -1;
    }
    sc->has_elabel = 1;
  }
  const mj_value *sp = mj_get(root, "superPod");
  if (sp) {
    if (sp->type != MJ_OBJECT) return failf(msg, "superPod", "expected an object, found %s", found(sp));
    if (check_fields(msg, sp, "superPod", spod_fields)) return -1;
    long long a = 0, b = 0, c = 0, d = 0, e = 0;
    if (get_int(msg, sp, "superPod", "superPodId", 0, -2147483648LL, 0xFFFFFFFFLL, &a) < 0 ||
        get_int(msg, sp, "superPod", "serverId", 0, -2147483648LL, 0xFFFFFFFFLL, &b) < 0 ||
        get_int(msg, sp, "superPod", "scaleType", 0, -2147483648LL, 0xFFFFFFFFLL, &c) < 0 ||
        get_int(msg, sp, "superPod", "chassisId", 0, -2147483648LL, 0xFFFFFFFFLL, &d) < 0 ||
        get_int(msg, sp, "superPod", "superPodType", 0, -2147483648LL, 0xFFFFFFFFLL, &e) < 0)
      return -1;
    sc->chassis_id = (unsigned)d;
    sc->super_pod_type = (unsigned)e;
    sc->has_spod = 1;
    sc->spod_id = (unsigned)a;
    sc->server_id = (unsigned)b;
    sc->scale_type = (unsigned)c;
  }
  if (switch_load(msg, root, &sc->sw) < 0) return -1;
  const mj_value *tl = mj_get(root, "timeline");
  if (tl && tl->type != MJ_ARRAY) return failf(msg, "timeline", "expected an array, found %s", found(tl));
  if (get_str(msg, root, "", "description", 0, (size_t)-1, NULL, 0) < 0) return -1;
  if (vdev_load_templates(msg, root, sc) < 0) return -1;

  const mj_value *cards = mj_get(root, "cards");
  if (!cards) return failf(msg, "cards", "required field missing");
  if (cards->type != MJ_ARRAY) return failf(msg, "cards", "expected an array, found %s", found(cards));
  if (cards->count > MAX_CARDS) return failf(msg, "cards", "%zu cards, at most %d allowed", cards->count, MAX_CARDS);
  for (size_t i = 0; i < cards->count; i++) {
    char path[64], fp[256];
    snprintf(path, sizeof path, "cards[%zu]", i);
    const mj_value *co = &cards->items[i];
    if (co->type != MJ_OBJECT) return failf(msg, path, "expected an object, found %s", found(co));
    if (check_fields(msg, co, path, card_fields)) return -1;
    struct card *cd = &sc->cards[sc->ncards];
    memset(cd, 0, sizeof *cd);
    for (int d = 0; d < MAX_CHIPS_PER_CARD; d++) cd->chip_index[d] = -1;
    if (get_int(msg, co, path, "cardId", 1, 0, 2147483646LL, &v) < 0) return -1;
    cd->card_id = (int)v;
    for (int j = 0; j < sc->ncards; j++)
      if (sc->cards[j].card_id == cd->card_id)
        return failf(msg, join_path(fp, sizeof fp, path, "cardId"), "duplicate card id %d (also cards[%d])",
                     cd->card_id, j);
    int r = get_int(msg, co, path, "brotherCardId", 0, 0, 2147483646LL, &v);
    if (r < 0) return -1;
    if (r == 1) {
      cd->has_brother = 1;
      cd->brother = (int)v;
    }
    r = get_str(msg, co, path, "productType", 0, DCMI_PRODUCT_TYPE_BUF - 1, cd->product_type,
                sizeof cd->product_type);
    if (r < 0) return -1;
    cd->has_product = r == 1;
    const mj_value *chips = mj_get(co, "chips");
    join_path(fp, sizeof fp, path, "chips");
    if (!chips) return failf(msg, fp, "required field missing");
    if (chips->type != MJ_ARRAY) return failf(msg, fp, "expected an array, found %s", found(chips));
    if (chips->count < 1 || chips->count > MAX_CHIPS_PER_CARD)
      return failf(msg, fp, "%zu chips, a card has 1..%d", chips->count, MAX_CHIPS_PER_CARD);
    cd->nchips = (int)chips->count;
    sc->ncards++;
    for (size_t k = 0; k < chips->count; k++) {
      char cp[256];
      index_path(cp, sizeof cp, fp, k);
      if (load_chip(msg, sc, cd, &chips->items[k], cp)) return -1;
    }
  }
  for (int i = 0; i < sc->ncards; i++) {
    struct card *cd = &sc->cards[i];
    if (!cd->has_brother) continue;
    char path[64];
    snprintf(path, sizeof path, "cards[%d].brotherCardId", i);
    int ok = 0;
    for (int j = 0; j < sc->ncards; j++)
      if (j != i && sc->cards[j].card_id == cd->brother) ok = 1;
    if (!ok) return failf(msg, path, "%d is not the id of another card of this scenario", cd->brother);
  }
  return 0;
}

void report_load_error(const char *file, const char *msg) {
  char line[1024];
  int n = snprintf(line, sizeof line - 1, "mock_dcmi: %s: %s", file, msg);
  if (n < 0) return;
  if ((size_t)n > sizeof line - 2) n = (int)sizeof line - 2;
  for (int i = 0; i < n; i++)
    if ((unsigned char)line[i] < 0x20) line[i] = ' ';
  line[n++] = '\n';
  ssize_t w = write(2, line, (size_t)n);
  (void)w;
}

/* Returns a new scenario or NULL after printing the one-line diagnostic. */
static struct scenario *read_scenario(const char *path) {
  char err[MSG_LEN];
  char *text;
  size_t len;
  if (mj_read_file(path, MJ_MAX_FILE, &text, &len, err, sizeof err) != 0) {
    report_load_error(path, err);
    return NULL;
  }
  mj_value root;
  int rc = mj_parse(text, len, MJ_MAX_LINE, &root, err, sizeof err);
  free(text);
  if (rc != 0) {
    report_load_error(path, err);
    return NULL;
  }
  struct scenario *sc = malloc(sizeof *sc);
  if (!sc) {
    mj_free(&root);
    report_load_error(path, "out of memory");
    return NULL;
  }
  rc = load_scenario(&root, sc, err);
  mj_free(&root);
  if (rc != 0) {
    report_load_error(path, err);
    free(sc);
    return NULL;
  }
  return sc;
}

/* ---------------------------------------------------------------------------------------- lifecycle */

static const char *scenario_path(struct mock_model *m) {
  return m->scenario_override ? m->scenario_override : getenv("ASCEND_MOCK_SCENARIO");
}

const char *model_control_path(struct mock_model *m) {
  return m->control_override ? m->control_override : getenv("ASCEND_MOCK_CONTROL");
}

int model_load(struct mock_model *m) {
  pthread_mutex_lock(&m->mu);
  int loaded = m->sc != NULL;
  pthread_mutex_unlock(&m->mu);
  if (loaded) return 1;
  const char *sp = scenario_path(m);
  if (!sp || !sp[0]) {
    report_load_error("(no scenario)", "ASCEND_MOCK_SCENARIO is not set");
    return -1;
  }
  struct scenario *sc = read_scenario(sp);
  if (!sc) return -1;
  /* mock_state.h: the chips as a previous process left them, instead of the scenario's initial values */
  const char *stp = getenv(MOCK_STATE_ENV);
  char *state_path = NULL;
  if (stp && stp[0]) {
    char msg[MSG_LEN];
    int bad = state_restore(sc, stp, msg) < 0;
    if (bad || !(state_path = strdup(stp))) {
      report_load_error(stp, bad ? msg : "out of memory");
      free(sc);
      return -1;
    }
  }
  pthread_mutex_lock(&m->mu);
  m->sc = sc;
  m->state_path = state_path;
  m->state_write_failed = 0;
  state_save(m); /* the file exists from the first dcmi_init on */
  pthread_mutex_unlock(&m->mu);
  return 0;
}

void model_unload(struct mock_model *m) {
  pthread_mutex_lock(&m->mu);
  struct scenario *sc = m->sc;
  m->sc = NULL;
  free(m->state_path);
  m->state_path = NULL;
  pthread_mutex_unlock(&m->mu);
  free(sc);
}

void model_reset(struct mock_model *m) {
  pthread_mutex_lock(&m->mu);
  free(m->sc);
  m->sc = NULL;
  free(m->state_path);
  m->state_path = NULL;
  memset(&m->sub, 0, sizeof m->sub);
  __atomic_fetch_add(&m->sub_gen, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < FN_COUNT; i++) __atomic_store_n(&m->calls[i], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&m->subscribe_calls, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&m->events_fired, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&m->event_serial, 0, __ATOMIC_RELAXED);
  m->lq_inited = 0;
  memset(&m->lq_sub, 0, sizeof m->lq_sub);
  for (int i = 0; i < 3; i++) __atomic_store_n(&m->lq_calls[i], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&m->lq_events_fired, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&m->lq_serial, 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&m->mu);
}

int model_set_paths(struct mock_model *m, const char *scenario, const char *control) {
  char *s = scenario ? strdup(scenario) : NULL;
  char *c = control ? strdup(control) : NULL;
  if ((scenario && !s) || (control && !c)) {
    free(s);
    free(c);
    return -1;
  }
  pthread_mutex_lock(&m->life_mu);
  free(m->scenario_override);
  free(m->control_override);
  m->scenario_override = s;
  m->control_override = c;
  pthread_mutex_unlock(&m->life_mu);
  return 0;
}

/* --------------------------------------------------------------------------------------- call entry */

int model_enter(enum fn_index fn, struct mock_model **m) {
  struct mock_model *mm = &the_model;
  __atomic_fetch_add(&mm->calls[fn], 1, __ATOMIC_RELAXED);
  pthread_mutex_lock(&mm->mu);
  *m = mm;
  if (!mm->sc) return DCMI_ERR_INTERNAL;
  /* One API generation per driver (scenario apiVersion): the other generation's calls are not supported. */
  if ((fn > FN_V2_FIRST_MARK) != (mm->sc->api_version == 2)) return DCMI_ERR_NOT_SUPPORTED;
  return DCMI_OK;
}

int model_leave(struct mock_model *m, int rc) {
  pthread_mutex_unlock(&m->mu);
  return rc;
}

int model_enter_chip(enum fn_index fn, int card_id, int device_id, int pointers_ok, struct mock_model **m,
                     struct chip **out) {
  int rc = model_enter(fn, m);
  if (rc) return rc;
  if (!pointers_ok) return DCMI_ERR_PARAM;
  struct chip *c = find_chip((*m)->sc, card_id, device_id);
  if (!c) return DCMI_ERR_INVALID_DEVICE;
  if (c->dropped) return DCMI_ERR_NOT_READY;
  *out = c;
  return DCMI_OK;
}

/* -------------------------------------------------------------------------------------------- chips */

struct card *find_card(struct scenario *sc, int card_id) {
  for (int i = 0; i < sc->ncards; i++)
    if (sc->cards[i].card_id == card_id) return &sc->cards[i];
  return NULL;
}

struct chip *find_chip(struct scenario *sc, int card_id, int device_id) {
  struct card *cd = find_card(sc, card_id);
  if (!cd || device_id < 0 || device_id >= cd->nchips) return NULL;
  return &sc->chips[cd->chip_index[device_id]];
}

struct chip *chip_by_logic(struct scenario *sc, long long logic) {
  if (logic < 0 || logic > MAX_ID || sc->by_logic[logic] < 0) return NULL;
  return &sc->chips[sc->by_logic[logic]];
}

struct chip *chip_by_phy(struct scenario *sc, long long phy) {
  if (phy < 0 || phy > MAX_ID || sc->by_phy[phy] < 0) return NULL;
  return &sc->chips[sc->by_phy[phy]];
}

int chip_boot_status(const struct chip *c) {
  if (c->hung) return DCMI_BOOT_STATUS_OS;
  if (c->boot_until_ns && boot_ns() < c->boot_until_ns) return DCMI_BOOT_STATUS_OS;
  return DCMI_BOOT_STATUS_STARTED;
}

static int code_index(const struct chip *c, unsigned code) {
  for (int i = 0; i < c->ncodes; i++)
    if (c->codes[i] == code) return i;
  return -1;
}

int chip_apply_code(struct chip *c, unsigned code, int assertion) {
  int i = code_index(c, code);
  if (assertion == 1 && i < 0) {
    if (c->ncodes >= DCMI_MAX_ERROR_CODES) return -1;
    c->codes[c->ncodes++] = code;
  } else if (assertion == 0 && i >= 0) {
    memmove(&c->codes[i], &c->codes[i + 1], (size_t)(c->ncodes - i - 1) * sizeof c->codes[0]);
    c->ncodes--;
  }
  return 0;
}

int chip_reset(struct chip *c) {
  c->reset_attempts++;
  if (c->reset_mode == RESET_FAIL) return DCMI_ERR_RESET_FAILED;
  c->resets++;
  c->ncodes = 0; /* a reset chip comes back clean */
  c->processes = 0;
  c->health = 0;
  c->hung = c->reset_mode == RESET_HANG;
  /* the boot starts when the call is made and ends bootSeconds after the call has returned */
  unsigned long long boot = (unsigned long long)((c->call_seconds + c->boot_seconds) * 1e9);
  c->boot_until_ns = boot ? boot_ns() + boot : 0;
  return DCMI_OK;
}

int chip_reset_call(struct mock_model *m, struct chip *c) {
  int rc = chip_reset(c);
  double call = c->call_seconds;
  model_changed(m);
  model_leave(m, rc);
  if (call > 0) { /* on the caller's thread, without the lock: the control socket and other calls go on */
    struct timespec ts = {(time_t)call, (long)((call - (double)(time_t)call) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
  return rc;
}

void model_changed(struct mock_model *m) { state_save(m); }

void chip_roce_query(struct chip *c) {
  if (c->link_up) {
    c->tx += c->growth;
    c->rx += c->growth;
  }
}

/* ------------------------------------------------------------------------------------- fault events */

void model_subscribe(struct mock_model *m, int card_id, int device_id, const struct dcmi_event_filter *filter,
                     dcmi_fault_event_handler handler) {
  m->sub.active = 1;
  m->sub.handler = handler;
  m->sub.card = card_id;
  m->sub.dev = device_id;
  m->sub.flags = filter->filter_flag;
  m->sub.event_id = filter->event_id;
  m->sub.severity = filter->severity;
  m->sub.node_type = filter->node_type;
  __atomic_fetch_add(&m->sub_gen, 1, __ATOMIC_RELEASE);
}

int sub_matches(const struct subscription *s, const struct event_spec *e) {
  if (!s->active || !s->handler) return 0;
  if (s->card != -1 && (s->card != e->card || s->dev != e->dev)) return 0;
  if ((s->flags & DCMI_EVENT_FILTER_FLAG_EVENT_ID) && s->event_id != e->event_id) return 0;
  if ((s->flags & DCMI_EVENT_FILTER_FLAG_SERVERITY) && e->severity < s->severity) return 0;
  if ((s->flags & DCMI_EVENT_FILTER_FLAG_NODE_TYPE) && s->node_type != 0) return 0; /* events carry node_type 0 */
  return 1;
}

void event_template(struct dcmi_event *ev, const struct event_spec *e) {
  memset(ev, 0, sizeof *ev);
  ev->type = DCMI_DMS_FAULT_EVENT;
  struct dcmi_dms_fault_event *d = &ev->event_t.dms_event;
  d->event_id = e->event_id;
  d->deviceid = (unsigned short)e->logic;
  d->severity = e->severity;
  d->assertion = e->assertion;
  snprintf(d->event_name, sizeof d->event_name, "mock fault %08X", e->event_id);
}


static void put_mono(char *dst) { /* "mono=<ns>" without stdio on the hot path */
  char digits[24];
  int n = 0;
  unsigned long long v = mono_ns();
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  memcpy(dst, "mono=", 5);
  for (int i = 0; i < n; i++) dst[5 + i] = digits[n - 1 - i];
  dst[5 + n] = 0;
}


int model_next_serial(struct mock_model *m) { return __atomic_add_fetch(&m->event_serial, 1, __ATOMIC_RELAXED); }

void model_deliver(struct mock_model *m, dcmi_fault_event_handler h, const struct dcmi_event *tmpl, int serial) {
  struct dcmi_event ev = *tmpl;
  ev.event_t.dms_event.event_serial_num = serial;
  ev.event_t.dms_event.notify_serial_num = serial;
  ev.event_t.dms_event.alarm_raised_time = (unsigned long long)time(NULL);
  pthread_mutex_lock(&m->cb_mu);
  put_mono(ev.event_t.dms_event.additional_info);
  h(&ev);
  pthread_mutex_unlock(&m->cb_mu);
  __atomic_fetch_add(&m->events_fired, 1, __ATOMIC_RELAXED);
}
