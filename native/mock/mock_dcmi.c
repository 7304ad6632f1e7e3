/*
 * Mock libdcmi.so: exports the DCMI functions declared in native/dcmi/dcmi_abi.h, answers them from a JSON
 * scenario (ASCEND_MOCK_SCENARIO) and lets tests change the hardware state through a Unix control socket
 * (ASCEND_MOCK_CONTROL). Contract: design/architecture.md §5; schema and protocol: scenarios/README.md.
 *
 * Threads: none before the first successful dcmi_init. Then one control thread (poll loop over the listening
 * socket and all clients) plus one short-lived thread per running "burst". Fault callbacks run only on those
 * threads, never while g_mu is held, and one at a time (g_cb_mu). Unloading the library (destructor) or
 * mock_dcmi_configure() stops and joins every thread and removes the socket.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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

#pragma GCC visibility push(default)
#include "dcmi_abi.h"
/* Mock-only export: switch scenario/control paths at run time (NULL = use the environment variable). */
int mock_dcmi_configure(const char *scenario_path, const char *control_path);
#pragma GCC visibility pop

#include "mock_fields.h"
#include "mock_json.h"

#define MAX_CARDS DCMI_CARD_LIST_LEN
#define MAX_CHIPS_PER_CARD 4
#define MAX_CHIPS (MAX_CARDS * MAX_CHIPS_PER_CARD)
#define MAX_ID 255
#define MAX_BURST 10000000L
#define MAX_CLIENT_OUT (64u * 1024u * 1024u)
#define ROCE_DEFAULT_GROWTH 1000ULL
#define PROC_MEM_BYTES (1024ULL * 1024ULL * 1024ULL)

/* ------------------------------------------------------------------------------------------ state */

enum reset_mode { RESET_OK, RESET_FAIL, RESET_HANG };
static const char *const reset_names[] = {"ok", "fail", "hang", NULL};
static const char *const link_names[] = {"DOWN", "UP", NULL};
static const char *const assertion_names[] = {"recover", "occur", "once", NULL};

struct chip {
  int card_id, device_id, card_index;
  unsigned logic_id, phy_id;
  unsigned health;
  unsigned codes[DCMI_MAX_ERROR_CODES];
  int ncodes;
  int has_ip;
  unsigned char ip[4];
  int link_up;
  int processes;
  char affinity[DCMI_AFFINITY_BUF];
  unsigned pcie_bus;
  int dropped;
  int reset_mode; /* enum reset_mode */
  double boot_seconds;
  unsigned long long resets, reset_attempts;
  int hung;
  unsigned long long boot_until_ns; /* 0 = not booting */
  unsigned long long tx, rx, growth;
};

struct card {
  int card_id;
  int has_brother, brother;
  int has_product;
  char product_type[DCMI_PRODUCT_TYPE_BUF];
  int nchips;
  int chip_index[MAX_CHIPS_PER_CARD]; /* by device id */
};

struct scenario {
  char chip_type[MAX_CHIP_NAME_LEN], chip_name[MAX_CHIP_NAME_LEN], chip_ver[MAX_CHIP_NAME_LEN];
  char npu_name[MAX_CHIP_NAME_LEN];
  unsigned aicore;
  struct dcmi_board_info board;
  unsigned mainboard;
  char dcmi_version[DCMI_VERSION_BUF];
  char product_type[DCMI_PRODUCT_TYPE_BUF];
  int subscribe_ok;
  unsigned char work_mode;
  unsigned long long hbm_mib;
  int has_spod;
  unsigned spod_id, server_id, scale_type;
  int ncards, nchips;
  struct card cards[MAX_CARDS];
  struct chip chips[MAX_CHIPS];
  int by_logic[MAX_ID + 1], by_phy[MAX_ID + 1]; /* chip index or -1 */
};

struct subscription {
  int active;
  dcmi_fault_event_handler handler;
  int card, dev; /* -1,-1 = all chips */
  unsigned long long flags;
  unsigned event_id;
  unsigned char severity, node_type;
};

enum fn_index {
#define MOCK_FN_ENUM(name, params) FN_##name,
  DCMI_BOUND_FUNCTIONS(MOCK_FN_ENUM) DCMI_UNBOUND_FUNCTIONS(MOCK_FN_ENUM)
#undef MOCK_FN_ENUM
      FN_COUNT
};

static const char *const fn_names[FN_COUNT] = {
#define MOCK_FN_NAME(name, params) #name,
    DCMI_BOUND_FUNCTIONS(MOCK_FN_NAME) DCMI_UNBOUND_FUNCTIONS(MOCK_FN_NAME)
#undef MOCK_FN_NAME
};

/* Every function of both lists must be defined here; with -Wl,-z,defs a missing one fails the link. */
__attribute__((used)) static const void *const all_exports[] = {
#define MOCK_FN_ADDR(name, params) (const void *)name,
    DCMI_BOUND_FUNCTIONS(MOCK_FN_ADDR) DCMI_UNBOUND_FUNCTIONS(MOCK_FN_ADDR)
#undef MOCK_FN_ADDR
};

struct server;

static pthread_mutex_t g_life_mu = PTHREAD_MUTEX_INITIALIZER; /* serialises load and tear-down */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;      /* guards g_sc, g_sub, g_srv */
static pthread_mutex_t g_cb_mu = PTHREAD_MUTEX_INITIALIZER;   /* one user callback at a time */
static struct scenario *g_sc;                                 /* non-NULL = loaded */
static struct subscription g_sub;
static unsigned g_sub_gen;                                    /* bumped on every subscription change */
static struct server *g_srv;
static char *g_scenario_override, *g_control_override;
static unsigned long long g_calls[FN_COUNT];
static unsigned long long g_subscribe_calls, g_events_fired;
static int g_event_serial;
static __thread int t_mock_thread; /* set on threads the mock owns */

static unsigned long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static void put_chars(unsigned char *dst, size_t n, const char *src) {
  memset(dst, 0, n);
  size_t l = strlen(src);
  memcpy(dst, src, l < n ? l : n);
}

/* ---------------------------------------------------------------------------- scenario loading */

static const char *const top_fields[] = {"chipName", "chipType", "chipVersion", "npuName", "aicoreCount", "boardId",
                                         "pcbId", "bomId", "slotId", "mainboardId", "dcmiVersion", "productType",
                                         "subscribe", "workMode", "hbmSizeMiB", "superPod", "timeline",
                                         "description", "cards", NULL};
static const char *const spod_fields[] = {"superPodId", "serverId", "scaleType", NULL};
static const char *const card_fields[] = {"cardId", "brotherCardId", "productType", "chips", NULL};
static const char *const chip_fields[] = {"deviceId", "logicId", "phyId", "health", "errorCodes", "ip", "link",
                                          "processes", "affinityCpu", "pcieBus", "dropped", "resetResult",
                                          "bootSeconds", NULL};

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
  c->growth = ROCE_DEFAULT_GROWTH;
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
  const mj_value *sp = mj_get(root, "superPod");
  if (sp) {
    if (sp->type != MJ_OBJECT) return failf(msg, "superPod", "expected an object, found %s", found(sp));
    if (check_fields(msg, sp, "superPod", spod_fields)) return -1;
    long long a = 0, b = 0, c = 0;
    if (get_int(msg, sp, "superPod", "superPodId", 0, -2147483648LL, 0xFFFFFFFFLL, &a) < 0 ||
        get_int(msg, sp, "superPod", "serverId", 0, -2147483648LL, 0xFFFFFFFFLL, &b) < 0 ||
        get_int(msg, sp, "superPod", "scaleType", 0, -2147483648LL, 0xFFFFFFFFLL, &c) < 0)
      return -1;
    sc->has_spod = 1;
    sc->spod_id = (unsigned)a;
    sc->server_id = (unsigned)b;
    sc->scale_type = (unsigned)c;
  }
  const mj_value *tl = mj_get(root, "timeline");
  if (tl && tl->type != MJ_ARRAY) return failf(msg, "timeline", "expected an array, found %s", found(tl));
  if (get_str(msg, root, "", "description", 0, (size_t)-1, NULL, 0) < 0) return -1;

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

static void report_load_error(const char *file, const char *msg) {
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

/* ------------------------------------------------------------------------------ chip lookup */
/* All with g_mu held and g_sc loaded. */

static struct card *find_card(int card_id) {
  for (int i = 0; i < g_sc->ncards; i++)
    if (g_sc->cards[i].card_id == card_id) return &g_sc->cards[i];
  return NULL;
}

static struct chip *find_chip(int card_id, int device_id) {
  struct card *cd = find_card(card_id);
  if (!cd || device_id < 0 || device_id >= cd->nchips) return NULL;
  return &g_sc->chips[cd->chip_index[device_id]];
}

static struct chip *chip_by_logic(long long logic) {
  if (logic < 0 || logic > MAX_ID || g_sc->by_logic[logic] < 0) return NULL;
  return &g_sc->chips[g_sc->by_logic[logic]];
}

static struct chip *chip_by_phy(long long phy) {
  if (phy < 0 || phy > MAX_ID || g_sc->by_phy[phy] < 0) return NULL;
  return &g_sc->chips[g_sc->by_phy[phy]];
}

static int boot_status_of(const struct chip *c) {
  if (c->hung) return DCMI_BOOT_STATUS_OS;
  if (c->boot_until_ns && mono_ns() < c->boot_until_ns) return DCMI_BOOT_STATUS_OS;
  return DCMI_BOOT_STATUS_STARTED;
}

static int code_index(const struct chip *c, unsigned code) {
  for (int i = 0; i < c->ncodes; i++)
    if (c->codes[i] == code) return i;
  return -1;
}

/* assertion: 0 recover, 1 occur, 2 once. Returns -1 when the list is full. */
static int apply_code(struct chip *c, unsigned code, int assertion) {
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

/* ----------------------------------------------------------------------------- call entry */

static int enter(enum fn_index fn) {
  __atomic_fetch_add(&g_calls[fn], 1, __ATOMIC_RELAXED);
  pthread_mutex_lock(&g_mu);
  return g_sc ? DCMI_OK : DCMI_ERR_INTERNAL;
}

static int leave(int rc) {
  pthread_mutex_unlock(&g_mu);
  return rc;
}

/* Lock, check loaded, pointers, ids, card drop. The lock is held on return whatever the result. */
static int enter_chip(enum fn_index fn, int card_id, int device_id, int pointers_ok, struct chip **out) {
  int rc = enter(fn);
  if (rc) return rc;
  if (!pointers_ok) return DCMI_ERR_PARAM;
  struct chip *c = find_chip(card_id, device_id);
  if (!c) return DCMI_ERR_INVALID_DEVICE;
  if (c->dropped) return DCMI_ERR_NOT_READY;
  *out = c;
  return DCMI_OK;
}

/* ------------------------------------------------------------------------------ lifecycle */

static struct server *server_start(const char *path, char *msg);
static void server_stop(struct server *srv);

static const char *scenario_path(void) {
  return g_scenario_override ? g_scenario_override : getenv("ASCEND_MOCK_SCENARIO");
}

static const char *control_path(void) {
  return g_control_override ? g_control_override : getenv("ASCEND_MOCK_CONTROL");
}

int dcmi_init(void) {
  if (enter(FN_dcmi_init) == DCMI_OK) return leave(DCMI_OK);
  leave(0);
  pthread_mutex_lock(&g_life_mu);
  pthread_mutex_lock(&g_mu);
  int loaded = g_sc != NULL;
  pthread_mutex_unlock(&g_mu);
  if (loaded) {
    pthread_mutex_unlock(&g_life_mu);
    return DCMI_OK;
  }
  const char *sp = scenario_path();
  if (!sp || !sp[0]) {
    report_load_error("(no scenario)", "ASCEND_MOCK_SCENARIO is not set");
    pthread_mutex_unlock(&g_life_mu);
    return DCMI_ERR_INTERNAL;
  }
  struct scenario *sc = read_scenario(sp);
  if (!sc) {
    pthread_mutex_unlock(&g_life_mu);
    return DCMI_ERR_INTERNAL;
  }
  pthread_mutex_lock(&g_mu);
  g_sc = sc;
  pthread_mutex_unlock(&g_mu);
  const char *cp = control_path();
  struct server *srv = NULL;
  if (cp && cp[0]) {
    char msg[MSG_LEN];
    srv = server_start(cp, msg);
    if (!srv) {
      report_load_error(cp, msg);
      pthread_mutex_lock(&g_mu);
      g_sc = NULL;
      pthread_mutex_unlock(&g_mu);
      free(sc);
      pthread_mutex_unlock(&g_life_mu);
      return DCMI_ERR_INTERNAL;
    }
  }
  pthread_mutex_lock(&g_mu);
  g_srv = srv;
  pthread_mutex_unlock(&g_mu);
  pthread_mutex_unlock(&g_life_mu);
  return DCMI_OK;
}

/* Stops every mock thread, removes the socket and forgets the scenario, subscription and counters. */
static void teardown(void) {
  pthread_mutex_lock(&g_life_mu);
  pthread_mutex_lock(&g_mu);
  struct server *srv = g_srv;
  g_srv = NULL;
  pthread_mutex_unlock(&g_mu);
  if (srv) server_stop(srv); /* joins the control thread and all burst threads */
  pthread_mutex_lock(&g_mu);
  free(g_sc);
  g_sc = NULL;
  memset(&g_sub, 0, sizeof g_sub);
  __atomic_fetch_add(&g_sub_gen, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < FN_COUNT; i++) __atomic_store_n(&g_calls[i], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_subscribe_calls, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_events_fired, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g_event_serial, 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&g_mu);
  pthread_mutex_unlock(&g_life_mu);
}

__attribute__((visibility("default"))) int mock_dcmi_configure(const char *scenario, const char *control) {
  if (t_mock_thread) return -1; /* would have to join the calling thread */
  teardown();
  char *s = scenario ? strdup(scenario) : NULL;
  char *c = control ? strdup(control) : NULL;
  if ((scenario && !s) || (control && !c)) {
    free(s);
    free(c);
    return -1;
  }
  pthread_mutex_lock(&g_life_mu);
  free(g_scenario_override);
  free(g_control_override);
  g_scenario_override = s;
  g_control_override = c;
  pthread_mutex_unlock(&g_life_mu);
  return 0;
}

__attribute__((destructor)) static void mock_unload(void) {
  teardown();
  free(g_scenario_override);
  free(g_control_override);
  g_scenario_override = g_control_override = NULL;
}

/* --------------------------------------------------------------------------- topology */

int dcmi_get_card_list(int *card_num, int *card_list, int list_len) {
  int rc = enter(FN_dcmi_get_card_list);
  if (rc) return leave(rc);
  if (!card_num || list_len < 0 || (list_len > 0 && !card_list)) return leave(DCMI_ERR_PARAM);
  for (int i = 0; i < g_sc->ncards && i < list_len; i++) card_list[i] = g_sc->cards[i].card_id;
  *card_num = g_sc->ncards;
  return leave(DCMI_OK);
}

int dcmi_get_device_num_in_card(int card_id, int *device_num) {
  int rc = enter(FN_dcmi_get_device_num_in_card);
  if (rc) return leave(rc);
  if (!device_num) return leave(DCMI_ERR_PARAM);
  struct card *cd = find_card(card_id);
  if (!cd) return leave(DCMI_ERR_INVALID_DEVICE);
  *device_num = cd->nchips;
  return leave(DCMI_OK);
}

int dcmi_get_device_logic_id(int *device_logic_id, int card_id, int device_id) {
  int rc = enter(FN_dcmi_get_device_logic_id);
  if (rc) return leave(rc);
  if (!device_logic_id) return leave(DCMI_ERR_PARAM);
  struct chip *c = find_chip(card_id, device_id);
  if (!c) return leave(DCMI_ERR_INVALID_DEVICE);
  *device_logic_id = (int)c->logic_id;
  return leave(DCMI_OK);
}

int dcmi_get_device_phyid_from_logicid(unsigned int logicid, unsigned int *phyid) {
  int rc = enter(FN_dcmi_get_device_phyid_from_logicid);
  if (rc) return leave(rc);
  if (!phyid) return leave(DCMI_ERR_PARAM);
  struct chip *c = chip_by_logic(logicid);
  if (!c) return leave(DCMI_ERR_INVALID_DEVICE);
  *phyid = c->phy_id;
  return leave(DCMI_OK);
}

int dcmi_get_device_logicid_from_phyid(unsigned int phyid, unsigned int *logicid) {
  int rc = enter(FN_dcmi_get_device_logicid_from_phyid);
  if (rc) return leave(rc);
  if (!logicid) return leave(DCMI_ERR_PARAM);
  struct chip *c = chip_by_phy(phyid);
  if (!c) return leave(DCMI_ERR_INVALID_DEVICE);
  *logicid = c->logic_id;
  return leave(DCMI_OK);
}

int dcmi_get_card_id_device_id_from_logicid(int *card_id, int *device_id, unsigned int device_logic_id) {
  int rc = enter(FN_dcmi_get_card_id_device_id_from_logicid);
  if (rc) return leave(rc);
  if (!card_id || !device_id) return leave(DCMI_ERR_PARAM);
  struct chip *c = chip_by_logic(device_logic_id);
  if (!c) return leave(DCMI_ERR_INVALID_DEVICE);
  *card_id = c->card_id;
  *device_id = c->device_id;
  return leave(DCMI_OK);
}

/* --------------------------------------------------------------------------- identity */

int dcmi_get_device_chip_info_v2(int card_id, int device_id, struct dcmi_chip_info_v2 *chip_info) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_chip_info_v2, card_id, device_id, chip_info != NULL, &c);
  if (rc) return leave(rc);
  put_chars(chip_info->chip_type, MAX_CHIP_NAME_LEN, g_sc->chip_type);
  put_chars(chip_info->chip_name, MAX_CHIP_NAME_LEN, g_sc->chip_name);
  put_chars(chip_info->chip_ver, MAX_CHIP_NAME_LEN, g_sc->chip_ver);
  put_chars(chip_info->npu_name, MAX_CHIP_NAME_LEN, g_sc->npu_name);
  chip_info->aicore_cnt = g_sc->aicore;
  return leave(DCMI_OK);
}

int dcmi_get_device_chip_info(int card_id, int device_id, struct dcmi_chip_info *chip_info) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_chip_info, card_id, device_id, chip_info != NULL, &c);
  if (rc) return leave(rc);
  put_chars(chip_info->chip_type, MAX_CHIP_NAME_LEN, g_sc->chip_type);
  put_chars(chip_info->chip_name, MAX_CHIP_NAME_LEN, g_sc->chip_name);
  put_chars(chip_info->chip_ver, MAX_CHIP_NAME_LEN, g_sc->chip_ver);
  chip_info->aicore_cnt = g_sc->aicore;
  return leave(DCMI_OK);
}

int dcmi_get_device_board_info(int card_id, int device_id, struct dcmi_board_info *board_info) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_board_info, card_id, device_id, board_info != NULL, &c);
  if (rc) return leave(rc);
  *board_info = g_sc->board;
  return leave(DCMI_OK);
}

int dcmi_get_mainboard_id(int card_id, int device_id, unsigned int *mainboard_id) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_mainboard_id, card_id, device_id, mainboard_id != NULL, &c);
  if (rc) return leave(rc);
  *mainboard_id = g_sc->mainboard;
  return leave(DCMI_OK);
}

int dcmi_get_dcmi_version(char *dcmi_ver, int buf_size) {
  int rc = enter(FN_dcmi_get_dcmi_version);
  if (rc) return leave(rc);
  size_t n = strlen(g_sc->dcmi_version);
  if (!dcmi_ver || buf_size <= 0 || (size_t)buf_size < n + 1) return leave(DCMI_ERR_PARAM);
  memcpy(dcmi_ver, g_sc->dcmi_version, n + 1);
  return leave(DCMI_OK);
}

int dcmi_get_product_type(int card_id, int device_id, char *product_type_str, int buf_size) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_product_type, card_id, device_id, product_type_str != NULL, &c);
  if (rc) return leave(rc);
  const struct card *cd = &g_sc->cards[c->card_index];
  const char *pt = cd->has_product ? cd->product_type : g_sc->product_type;
  size_t n = strlen(pt);
  if (n == 0) return leave(DCMI_ERR_NOT_SUPPORTED);
  if (buf_size <= 0 || (size_t)buf_size < n + 1) return leave(DCMI_ERR_PARAM);
  memcpy(product_type_str, pt, n + 1);
  return leave(DCMI_OK);
}

int dcmi_get_device_type(int card_id, int device_id, enum dcmi_unit_type *device_type) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_type, card_id, device_id, device_type != NULL, &c);
  if (rc) return leave(rc);
  *device_type = NPU_TYPE;
  return leave(DCMI_OK);
}

/* ------------------------------------------------------------------------- health, codes */

int dcmi_get_device_health(int card_id, int device_id, unsigned int *health) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_health, card_id, device_id, health != NULL, &c);
  if (rc) return leave(rc);
  *health = c->health;
  return leave(DCMI_OK);
}

int dcmi_get_device_errorcode_v2(int card_id, int device_id, int *error_count, unsigned int *error_code_list,
                                 unsigned int list_len) {
  struct chip *c;
  int ok = error_count != NULL && (list_len == 0 || error_code_list != NULL);
  int rc = enter_chip(FN_dcmi_get_device_errorcode_v2, card_id, device_id, ok, &c);
  if (rc) return leave(rc);
  for (int i = 0; i < c->ncodes && (unsigned)i < list_len; i++) error_code_list[i] = c->codes[i];
  *error_count = c->ncodes;
  return leave(DCMI_OK);
}

int dcmi_get_device_ip(int card_id, int device_id, enum dcmi_port_type input_type, int port_id,
                       struct dcmi_ip_addr *ip, struct dcmi_ip_addr *mask) {
  (void)port_id;
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_ip, card_id, device_id, ip != NULL && mask != NULL, &c);
  if (rc) return leave(rc);
  if ((int)input_type != DCMI_ROCE_PORT) return leave(DCMI_ERR_PARAM);
  if (ip->ip_type == DCMI_IPADDR_TYPE_V6) return leave(DCMI_ERR_NOT_SUPPORTED); /* the mock has no IPv6 */
  if (!c->has_ip) return leave(DCMI_ERR_NOT_SUPPORTED);
  memset(ip, 0, sizeof *ip);
  memset(mask, 0, sizeof *mask);
  memcpy(ip->u_addr.ip4, c->ip, 4);
  ip->ip_type = DCMI_IPADDR_TYPE_V4;
  static const unsigned char m[4] = {255, 255, 255, 0};
  memcpy(mask->u_addr.ip4, m, 4);
  mask->ip_type = DCMI_IPADDR_TYPE_V4;
  return leave(DCMI_OK);
}

int dcmi_get_device_info(int card_id, int device_id, enum dcmi_main_cmd main_cmd, unsigned int sub_cmd, void *buf,
                         unsigned int *size) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_info, card_id, device_id, buf != NULL && size != NULL, &c);
  if (rc) return leave(rc);
  if ((int)main_cmd == DCMI_MAIN_CMD_VDEV_MNG && sub_cmd == 1) {
    if (*size < sizeof(struct dcmi_soc_total_resource)) return leave(DCMI_ERR_PARAM);
    struct dcmi_soc_total_resource *t = buf;
    memset(t, 0, sizeof *t);
    t->vdev_num = 0;
    t->computing.aic = (float)g_sc->aicore;
    t->computing.memory_size = g_sc->hbm_mib;
    *size = sizeof *t;
    return leave(DCMI_OK);
  }
  if ((int)main_cmd == DCMI_MAIN_CMD_CHIP_INFO && sub_cmd == 1) {
    if (!g_sc->has_spod) return leave(DCMI_ERR_NOT_SUPPORTED);
    if (*size < sizeof(struct dcmi_spod_info)) return leave(DCMI_ERR_PARAM);
    struct dcmi_spod_info *s = buf;
    memset(s, 0, sizeof *s);
    s->sdid = c->logic_id;
    s->scale_type = g_sc->scale_type;
    s->super_pod_id = g_sc->spod_id;
    s->server_id = g_sc->server_id;
    *size = sizeof *s;
    return leave(DCMI_OK);
  }
  return leave(DCMI_ERR_NOT_SUPPORTED);
}

int dcmi_create_vdevice(int card_id, int device_id, struct dcmi_create_vdev_res_stru *vdev,
                        struct dcmi_create_vdev_out *out) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_create_vdevice, card_id, device_id, vdev != NULL && out != NULL, &c);
  return leave(rc ? rc : DCMI_ERR_NOT_SUPPORTED);
}

int dcmi_set_destroy_vdevice(int card_id, int device_id, unsigned int vdevid) {
  (void)vdevid;
  struct chip *c;
  int rc = enter_chip(FN_dcmi_set_destroy_vdevice, card_id, device_id, 1, &c);
  return leave(rc ? rc : DCMI_ERR_NOT_SUPPORTED);
}

int dcmi_get_npu_work_mode(int card_id, unsigned char *work_mode) {
  int rc = enter(FN_dcmi_get_npu_work_mode);
  if (rc) return leave(rc);
  if (!work_mode) return leave(DCMI_ERR_PARAM);
  struct card *cd = find_card(card_id);
  if (!cd) return leave(DCMI_ERR_INVALID_DEVICE);
  int dropped = 0;
  for (int d = 0; d < cd->nchips; d++) dropped += g_sc->chips[cd->chip_index[d]].dropped;
  if (dropped == cd->nchips) return leave(DCMI_ERR_NOT_READY);
  *work_mode = g_sc->work_mode;
  return leave(DCMI_OK);
}

/* ---------------------------------------------------------------------------------- reset */

int dcmi_set_device_reset(int card_id, int device_id, enum dcmi_reset_channel channel_type) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_set_device_reset, card_id, device_id, 1, &c);
  if (rc) return leave(rc);
  if ((int)channel_type != OUTBAND_CHANNEL && (int)channel_type != INBAND_CHANNEL) return leave(DCMI_ERR_PARAM);
  c->reset_attempts++;
  if (c->reset_mode == RESET_FAIL) return leave(DCMI_ERR_RESET_FAILED);
  c->resets++;
  c->ncodes = 0; /* a reset chip comes back clean */
  c->processes = 0;
  c->health = 0;
  c->hung = c->reset_mode == RESET_HANG;
  unsigned long long boot = (unsigned long long)(c->boot_seconds * 1e9);
  c->boot_until_ns = boot ? mono_ns() + boot : 0;
  return leave(DCMI_OK);
}

int dcmi_get_device_boot_status(int card_id, int device_id, enum dcmi_boot_status *boot_status) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_boot_status, card_id, device_id, boot_status != NULL, &c);
  if (rc) return leave(rc);
  *boot_status = (enum dcmi_boot_status)boot_status_of(c);
  return leave(DCMI_OK);
}

int dcmi_get_device_outband_channel_state(int card_id, int device_id, int *channel_state) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_outband_channel_state, card_id, device_id, channel_state != NULL, &c);
  if (rc) return leave(rc);
  *channel_state = 1;
  return leave(DCMI_OK);
}

int dcmi_pre_reset_soc(int card_id, int device_id) {
  struct chip *c;
  return leave(enter_chip(FN_dcmi_pre_reset_soc, card_id, device_id, 1, &c));
}

int dcmi_rescan_soc(int card_id, int device_id) {
  struct chip *c;
  return leave(enter_chip(FN_dcmi_rescan_soc, card_id, device_id, 1, &c));
}

int dcmi_get_netdev_brother_device(int card_id, int device_id, int *brother_card_id) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_netdev_brother_device, card_id, device_id, brother_card_id != NULL, &c);
  if (rc) return leave(rc);
  const struct card *cd = &g_sc->cards[c->card_index];
  if (!cd->has_brother) return leave(DCMI_ERR_NOT_SUPPORTED);
  *brother_card_id = cd->brother;
  return leave(DCMI_OK);
}

/* ------------------------------------------------------------------- resources and misc */

int dcmi_get_device_resource_info(int card_id, int device_id, struct dcmi_proc_mem_info *proc_info, int *proc_num) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_resource_info, card_id, device_id, proc_info != NULL && proc_num != NULL, &c);
  if (rc) return leave(rc);
  for (int i = 0; i < c->processes; i++) {
    proc_info[i].proc_id = 10000 + i;
    proc_info[i].proc_mem_usage = PROC_MEM_BYTES;
  }
  *proc_num = c->processes;
  return leave(DCMI_OK);
}

int dcmi_get_device_die_v2(int card_id, int device_id, enum dcmi_die_type input_type, struct dcmi_die_id *die_id) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_die_v2, card_id, device_id, die_id != NULL, &c);
  if (rc) return leave(rc);
  if ((int)input_type != NDIE && (int)input_type != VDIE) return leave(DCMI_ERR_PARAM);
  die_id->soc_die[0] = 0x4D4F434Bu; /* "MOCK" */
  die_id->soc_die[1] = (unsigned)input_type;
  die_id->soc_die[2] = (unsigned)c->card_id;
  die_id->soc_die[3] = (unsigned)c->device_id;
  die_id->soc_die[4] = c->phy_id;
  return leave(DCMI_OK);
}

int dcmi_get_device_pcie_info_v2(int card_id, int device_id, struct dcmi_pcie_info_all *pcie_info) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_pcie_info_v2, card_id, device_id, pcie_info != NULL, &c);
  if (rc) return leave(rc);
  memset(pcie_info, 0, sizeof *pcie_info);
  pcie_info->venderid = 0x19e5;
  pcie_info->subvenderid = 0x0200;
  pcie_info->deviceid = 0xd802;
  pcie_info->subdeviceid = 0x0100;
  pcie_info->domain = 0;
  pcie_info->bdf_busid = c->pcie_bus;
  pcie_info->bdf_deviceid = 0;
  pcie_info->bdf_funcid = 0;
  return leave(DCMI_OK);
}

int dcmi_get_affinity_cpu_info_by_device_id(int card_id, int device_id, char *affinity_cpu, int *length) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_affinity_cpu_info_by_device_id, card_id, device_id,
                      affinity_cpu != NULL && length != NULL, &c);
  if (rc) return leave(rc);
  size_t n = strlen(c->affinity);
  memcpy(affinity_cpu, c->affinity, n + 1);
  *length = (int)n;
  return leave(DCMI_OK);
}

int dcmi_get_device_hbm_info(int card_id, int device_id, struct dcmi_hbm_info *hbm_info) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_hbm_info, card_id, device_id, hbm_info != NULL, &c);
  if (rc) return leave(rc);
  memset(hbm_info, 0, sizeof *hbm_info);
  hbm_info->memory_size = g_sc->hbm_mib;
  hbm_info->freq = 1600;
  hbm_info->memory_usage = 0;
  hbm_info->temp = 40;
  hbm_info->bandwith_util_rate = 0;
  return leave(DCMI_OK);
}

int dcmi_get_device_utilization_rate(int card_id, int device_id, int input_type, unsigned int *utilization_rate) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_utilization_rate, card_id, device_id, utilization_rate != NULL, &c);
  if (rc) return leave(rc);
  if (input_type != 2 && input_type != 6) return leave(DCMI_ERR_NOT_SUPPORTED);
  *utilization_rate = 0;
  return leave(DCMI_OK);
}

int dcmi_set_multi_die_policy(enum dcmi_multi_die_policy policy) {
  int rc = enter(FN_dcmi_set_multi_die_policy);
  if (rc) return leave(rc);
  if ((int)policy != DCMI_MULTI_DIE_UNION_POLICY && (int)policy != DCMI_MULTI_DIE_INDEP_POLICY)
    return leave(DCMI_ERR_PARAM);
  return leave(DCMI_OK);
}

int dcmi_get_device_network_health(int card_id, int device_id, enum dcmi_rdfx_detect_result *result) {
  struct chip *c;
  int rc = enter_chip(FN_dcmi_get_device_network_health, card_id, device_id, result != NULL, &c);
  if (rc) return leave(rc);
  *result = DCMI_RDFX_DETECT_OK;
  return leave(DCMI_OK);
}

/* ------------------------------------------------------------------------ fault events */

int dcmi_subscribe_fault_event(int card_id, int device_id, struct dcmi_event_filter filter,
                               dcmi_fault_event_handler handler) {
  __atomic_fetch_add(&g_subscribe_calls, 1, __ATOMIC_RELAXED);
  int rc = enter(FN_dcmi_subscribe_fault_event);
  if (rc) return leave(rc);
  if (!g_sc->subscribe_ok) return leave(DCMI_ERR_INTERNAL);
  if (!handler) return leave(DCMI_ERR_PARAM);
  if (card_id == -1 || device_id == -1) {
    if (card_id != device_id) return leave(DCMI_ERR_PARAM);
  } else if (!find_chip(card_id, device_id)) {
    return leave(DCMI_ERR_INVALID_DEVICE);
  }
  g_sub.active = 1;
  g_sub.handler = handler;
  g_sub.card = card_id;
  g_sub.dev = device_id;
  g_sub.flags = filter.filter_flag;
  g_sub.event_id = filter.event_id;
  g_sub.severity = filter.severity;
  g_sub.node_type = filter.node_type;
  __atomic_fetch_add(&g_sub_gen, 1, __ATOMIC_RELEASE);
  return leave(DCMI_OK);
}

/* What an event needs, captured under g_mu. */
struct event_spec {
  int card, dev;
  unsigned logic, event_id;
  unsigned char severity, assertion;
};

static int sub_matches(const struct subscription *s, const struct event_spec *e) {
  if (!s->active || !s->handler) return 0;
  if (s->card != -1 && (s->card != e->card || s->dev != e->dev)) return 0;
  if ((s->flags & DCMI_EVENT_FILTER_FLAG_EVENT_ID) && s->event_id != e->event_id) return 0;
  if ((s->flags & DCMI_EVENT_FILTER_FLAG_SERVERITY) && e->severity < s->severity) return 0;
  if ((s->flags & DCMI_EVENT_FILTER_FLAG_NODE_TYPE) && s->node_type != 0) return 0; /* events carry node_type 0 */
  return 1;
}

static void event_template(struct dcmi_event *ev, const struct event_spec *e) {
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

/* Called on a mock thread without g_mu. */
static void deliver(dcmi_fault_event_handler h, const struct dcmi_event *tmpl, int serial) {
  struct dcmi_event ev = *tmpl;
  ev.event_t.dms_event.event_serial_num = serial;
  ev.event_t.dms_event.notify_serial_num = serial;
  ev.event_t.dms_event.alarm_raised_time = (unsigned long long)time(NULL);
  pthread_mutex_lock(&g_cb_mu);
  put_mono(ev.event_t.dms_event.additional_info);
  h(&ev);
  pthread_mutex_unlock(&g_cb_mu);
  __atomic_fetch_add(&g_events_fired, 1, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------ control server */

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
  struct server *srv;
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

struct server {
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

static void wake(struct server *srv) {
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

static void put_codes(mj_buf *b, const struct chip *c) {
  mj_buf_puts(b, "[");
  for (int i = 0; i < c->ncodes; i++) mj_buf_printf(b, "%s\"%08X\"", i ? "," : "", c->codes[i]);
  mj_buf_puts(b, "]");
}

static void put_state(mj_buf *b) {
  mj_buf_puts(b, "{\"ok\":true,\"chips\":[");
  for (int i = 0; i < g_sc->nchips; i++) {
    const struct chip *c = &g_sc->chips[i];
    mj_buf_printf(b,
                  "%s{\"logicId\":%u,\"phyId\":%u,\"cardId\":%d,\"deviceId\":%d,\"health\":%u,\"errorCodes\":",
                  i ? "," : "", c->logic_id, c->phy_id, c->card_id, c->device_id, c->health);
    put_codes(b, c);
    mj_buf_printf(b, ",\"link\":\"%s\",\"processes\":%d,\"dropped\":%s,\"resets\":%llu,\"resetAttempts\":%llu,"
                     "\"resetResult\":\"%s\",\"bootSeconds\":%g,\"bootStatus\":%d,",
                  c->link_up ? "UP" : "DOWN", c->processes, c->dropped ? "true" : "false", c->resets,
                  c->reset_attempts, reset_names[c->reset_mode], c->boot_seconds, boot_status_of(c));
    if (c->has_ip) mj_buf_printf(b, "\"ip\":\"%u.%u.%u.%u\"", c->ip[0], c->ip[1], c->ip[2], c->ip[3]);
    else mj_buf_puts(b, "\"ip\":null");
    mj_buf_printf(b, ",\"roceTx\":%llu,\"roceRx\":%llu}", c->tx, c->rx);
  }
  mj_buf_printf(b, "],\"counters\":{\"subscribeCalls\":%llu,\"subscribed\":%s,\"eventsFired\":%llu,\"callsByName\":{",
                __atomic_load_n(&g_subscribe_calls, __ATOMIC_RELAXED), g_sub.active ? "true" : "false",
                __atomic_load_n(&g_events_fired, __ATOMIC_RELAXED));
  int first = 1;
  for (int i = 0; i < FN_COUNT; i++) {
    unsigned long long n = __atomic_load_n(&g_calls[i], __ATOMIC_RELAXED);
    if (!n) continue;
    mj_buf_printf(b, "%s\"%s\":%llu", first ? "" : ",", fn_names[i], n);
    first = 0;
  }
  mj_buf_puts(b, "}}}\n");
}

static void *burst_main(void *arg) {
  struct burst *bu = arg;
  t_mock_thread = 1;
  struct subscription s;
  unsigned gen;
  pthread_mutex_lock(&g_mu);
  s = g_sub;
  gen = __atomic_load_n(&g_sub_gen, __ATOMIC_ACQUIRE);
  pthread_mutex_unlock(&g_mu);
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
    if (__atomic_load_n(&g_sub_gen, __ATOMIC_ACQUIRE) != gen) {
      pthread_mutex_lock(&g_mu);
      s = g_sub;
      gen = __atomic_load_n(&g_sub_gen, __ATOMIC_ACQUIRE);
      pthread_mutex_unlock(&g_mu);
    }
    if (!sub_matches(&s, &bu->spec)) continue;
    deliver(s.handler, &tmpl, (int)(i + 1));
    bu->fired++;
  }
  bu->elapsed_ns = mono_ns() - start;
  __atomic_store_n(&bu->finished, 1, __ATOMIC_RELEASE);
  wake(bu->srv);
  return NULL;
}

static const char *const base_fields[] = {"op", "t", NULL};
static const char *const fault_fields[] = {"op", "t", "logicId", "eventId", "assertion", "severity", NULL};
static const char *const burst_fields[] = {"op",       "t",     "logicId",    "eventId", "assertion",
                                           "severity", "count", "ratePerSec", NULL};
static const char *const health_fields[] = {"op", "t", "logicId", "value", NULL};
static const char *const link_fields[] = {"op", "t", "logicId", "status", NULL};
static const char *const logic_fields[] = {"op", "t", "logicId", NULL};
static const char *const processes_fields[] = {"op", "t", "logicId", "count", NULL};
static const char *const reset_fields[] = {"op", "t", "logicId", "result", "bootSeconds", NULL};
static const char *const stat_fields[] = {"op", "t", "logicId", "tx", "rx", "growPerQuery", NULL};
static const char *const roce_fields[] = {"op", "t", "phyId", NULL};

/* logicId field -> chip (g_mu held). */
static struct chip *req_chip(char *msg, const mj_value *req) {
  long long logic;
  if (get_int(msg, req, "", "logicId", 1, 0, 0x7FFFFFFFLL, &logic) < 0) return NULL;
  struct chip *c = chip_by_logic(logic);
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

/* Handles one request line; the reply goes to cl->out (or later, from a burst). */
static void handle_line(struct server *srv, struct client *cl, const char *line, size_t len) {
  char msg[MSG_LEN];
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
  char op[32];
  if (req.type != MJ_OBJECT) {
    reply_error(cl, "request must be a JSON object");
    goto done;
  }
  if (get_str(msg, &req, "", "op", 1, sizeof op - 1, op, sizeof op) < 0) {
    reply_error(cl, "%s", msg);
    goto done;
  }

  int is_fault = !strcmp(op, "fault"), is_silent = !strcmp(op, "silentFault");
  const char *const *allowed = NULL;
  if (is_fault || is_silent) allowed = fault_fields;
  else if (!strcmp(op, "burst")) allowed = burst_fields;
  else if (!strcmp(op, "health")) allowed = health_fields;
  else if (!strcmp(op, "link")) allowed = link_fields;
  else if (!strcmp(op, "drop") || !strcmp(op, "restore")) allowed = logic_fields;
  else if (!strcmp(op, "processes")) allowed = processes_fields;
  else if (!strcmp(op, "resetResult")) allowed = reset_fields;
  else if (!strcmp(op, "stat")) allowed = stat_fields;
  else if (!strcmp(op, "roceStat")) allowed = roce_fields;
  else if (!strcmp(op, "state")) allowed = base_fields;
  if (!allowed) {
    reply_error(cl, "unknown op \"%s\" (fault, silentFault, health, link, drop, restore, processes, resetResult, "
                    "state, burst, stat, roceStat)", op);
    goto done;
  }
  if (check_fields(msg, &req, "", allowed)) {
    reply_error(cl, "%s", msg);
    goto done;
  }

  pthread_mutex_lock(&g_mu);
  if (!g_sc) {
    pthread_mutex_unlock(&g_mu);
    reply_error(cl, "mock not loaded");
    goto done;
  }
  if (!strcmp(op, "state")) {
    put_state(&cl->out);
    pthread_mutex_unlock(&g_mu);
    goto done;
  }
  if (!strcmp(op, "roceStat")) {
    long long phy;
    struct chip *c = NULL;
    if (get_int(msg, &req, "", "phyId", 1, 0, 0x7FFFFFFFLL, &phy) < 0) {
      pthread_mutex_unlock(&g_mu);
      reply_error(cl, "%s", msg);
      goto done;
    }
    c = chip_by_phy(phy);
    if (!c || c->dropped) {
      pthread_mutex_unlock(&g_mu);
      if (!c) reply_error(cl, "unknown phyId %lld", phy);
      else reply_error(cl, "phyId %lld: chip dropped (card drop)", phy);
      goto done;
    }
    if (c->link_up) {
      c->tx += c->growth;
      c->rx += c->growth;
    }
    mj_buf_printf(&cl->out, "{\"ok\":true,\"logicId\":%u,\"phyId\":%u,\"link\":\"%s\",\"tx\":%llu,\"rx\":%llu}\n",
                  c->logic_id, c->phy_id, c->link_up ? "UP" : "DOWN", c->tx, c->rx);
    pthread_mutex_unlock(&g_mu);
    goto done;
  }

  struct chip *c = req_chip(msg, &req);
  if (!c) {
    pthread_mutex_unlock(&g_mu);
    reply_error(cl, "%s", msg);
    goto done;
  }
  int bad = 0;
  if (is_fault || is_silent) {
    unsigned code;
    int assertion = 1;
    unsigned char sev;
    if (req_event(msg, &req, 1, &code, &assertion, &sev) < 0) {
      bad = 1;
    } else if (apply_code(c, code, assertion) < 0) {
      failf(msg, "eventId", "error-code list of logicId %u is full (%d codes)", c->logic_id, DCMI_MAX_ERROR_CODES);
      bad = 1;
    } else {
      struct event_spec e = {c->card_id, c->device_id, c->logic_id, code, sev, (unsigned char)assertion};
      struct subscription s = g_sub;
      mj_buf reply;
      mj_buf_init(&reply);
      mj_buf_printf(&reply, "{\"ok\":true,\"logicId\":%u,\"eventId\":\"%08X\",\"assertion\":\"%s\",\"errorCodes\":",
                    c->logic_id, code, assertion_names[assertion]);
      put_codes(&reply, c);
      int fire = is_fault && sub_matches(&s, &e);
      int serial = fire ? __atomic_add_fetch(&g_event_serial, 1, __ATOMIC_RELAXED) : 0;
      pthread_mutex_unlock(&g_mu);
      if (fire) {
        struct dcmi_event tmpl;
        event_template(&tmpl, &e);
        deliver(s.handler, &tmpl, serial);
      }
      mj_buf_printf(&reply, ",\"fired\":%s}\n", fire ? "true" : "false");
      mj_buf_append(&cl->out, reply.data ? reply.data : "", reply.len);
      mj_buf_free(&reply);
      goto done;
    }
  } else if (!strcmp(op, "burst")) {
    unsigned code;
    int assertion = 2;
    unsigned char sev;
    long long count;
    double rate = 0;
    if (req_event(msg, &req, 0, &code, &assertion, &sev) < 0 ||
        get_int(msg, &req, "", "count", 1, 1, MAX_BURST, &count) < 0 ||
        get_num(msg, &req, "", "ratePerSec", 0, 0, 1e9, &rate) < 0) {
      bad = 1;
    } else if (!g_sub.active) {
      failf(msg, "", "not subscribed: call dcmi_subscribe_fault_event first");
      bad = 1;
    } else if (apply_code(c, code, assertion) < 0) {
      failf(msg, "eventId", "error-code list of logicId %u is full (%d codes)", c->logic_id, DCMI_MAX_ERROR_CODES);
      bad = 1;
    } else {
      struct burst *bu = calloc(1, sizeof *bu);
      if (!bu) {
        failf(msg, "", "out of memory");
        bad = 1;
      } else {
        struct event_spec e = {c->card_id, c->device_id, c->logic_id, code, sev, (unsigned char)assertion};
        bu->srv = srv;
        bu->cl = cl;
        bu->spec = e;
        bu->count = (long)count;
        bu->rate = rate;
        pthread_mutex_unlock(&g_mu);
        if (pthread_create(&bu->tid, NULL, burst_main, bu) != 0) {
          free(bu);
          reply_error(cl, "cannot start burst thread");
          goto done;
        }
        bu->next = srv->bursts;
        srv->bursts = bu;
        cl->busy = 1;
        goto done;
      }
    }
  } else if (!strcmp(op, "health")) {
    long long v;
    if (get_int(msg, &req, "", "value", 1, 0, 0xFFFFFFFFLL, &v) < 0) bad = 1;
    else c->health = (unsigned)v;
  } else if (!strcmp(op, "link")) {
    int up;
    if (get_choice(msg, &req, "", "status", 1, link_names, &up) < 0) bad = 1;
    else c->link_up = up;
  } else if (!strcmp(op, "drop")) {
    c->dropped = 1;
  } else if (!strcmp(op, "restore")) {
    c->dropped = 0;
  } else if (!strcmp(op, "processes")) {
    long long v;
    if (get_int(msg, &req, "", "count", 1, 0, DCMI_MAX_PROC_NUM, &v) < 0) bad = 1;
    else c->processes = (int)v;
  } else if (!strcmp(op, "resetResult")) {
    int mode;
    double boot = 0;
    if (get_choice(msg, &req, "", "result", 1, reset_names, &mode) < 0 ||
        get_num(msg, &req, "", "bootSeconds", 0, 0, 86400, &boot) < 0) {
      bad = 1;
    } else {
      c->reset_mode = mode;
      c->boot_seconds = boot;
    }
  } else if (!strcmp(op, "stat")) {
    long long tx = (long long)c->tx, rx = (long long)c->rx, grow = 0;
    if (get_int(msg, &req, "", "tx", 0, 0, 0x7FFFFFFFFFFFFFFFLL, &tx) < 0 ||
        get_int(msg, &req, "", "rx", 0, 0, 0x7FFFFFFFFFFFFFFFLL, &rx) < 0 ||
        get_int(msg, &req, "", "growPerQuery", 0, 0, 1LL << 40, &grow) < 0) {
      bad = 1;
    } else {
      c->tx = (unsigned long long)tx;
      c->rx = (unsigned long long)rx;
      c->growth = (unsigned long long)grow;
    }
  }
  if (bad) {
    pthread_mutex_unlock(&g_mu);
    reply_error(cl, "%s", msg);
    goto done;
  }
  mj_buf_printf(&cl->out, "{\"ok\":true,\"logicId\":%u}\n", c->logic_id);
  pthread_mutex_unlock(&g_mu);
done:
  mj_free(&req);
}

/* Runs every complete request line (in order) until a burst makes the client wait. */
static void client_process(struct server *srv, struct client *cl) {
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

static void client_read(struct server *srv, struct client *cl) {
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

static void reap_bursts(struct server *srv, int all) {
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

static void accept_clients(struct server *srv) {
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
  struct server *srv = arg;
  t_mock_thread = 1;
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

static struct server *server_start(const char *path, char *msg) {
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof addr.sun_path) {
    failf(msg, "", "control socket path longer than %zu bytes", sizeof addr.sun_path - 1);
    return NULL;
  }
  memcpy(addr.sun_path, path, strlen(path) + 1);
  struct server *srv = calloc(1, sizeof *srv);
  if (!srv || !(srv->path = strdup(path))) {
    free(srv);
    failf(msg, "", "out of memory");
    return NULL;
  }
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

static void server_stop(struct server *srv) {
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
