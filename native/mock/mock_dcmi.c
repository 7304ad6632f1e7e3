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
#include "mock_model.h"

#define MAX_BURST 10000000L
#define MAX_CLIENT_OUT (64u * 1024u * 1024u)
#define PROC_MEM_BYTES (1024ULL * 1024ULL * 1024ULL)

/* ------------------------------------------------------------------------------------------ state */

static const char *const assertion_names[] = {"recover", "occur", "once", NULL};

/* Every function of both lists must be defined here; with -Wl,-z,defs a missing one fails the link. */
__attribute__((used)) static const void *const all_exports[] = {
#define MOCK_FN_ADDR(name, params) (const void *)name,
    DCMI_BOUND_FUNCTIONS(MOCK_FN_ADDR) DCMI_UNBOUND_FUNCTIONS(MOCK_FN_ADDR)
#undef MOCK_FN_ADDR
};

static void put_chars(unsigned char *dst, size_t n, const char *src) {
  memset(dst, 0, n);
  size_t l = strlen(src);
  memcpy(dst, src, l < n ? l : n);
}

/* ------------------------------------------------------------------------------ lifecycle */

static struct mock_server *server_start(struct mock_model *m, const char *path, char *msg);
static void server_stop(struct mock_server *srv);

int dcmi_init(void) {
  struct mock_model *m;
  if (model_enter(FN_dcmi_init, &m) == DCMI_OK) return model_leave(m, DCMI_OK);
  model_leave(m, 0);
  pthread_mutex_lock(&m->life_mu);
  int r = model_load(m);
  if (r != 0) {
    pthread_mutex_unlock(&m->life_mu);
    return r > 0 ? DCMI_OK : DCMI_ERR_INTERNAL;
  }
  const char *cp = model_control_path(m);
  struct mock_server *srv = NULL;
  if (cp && cp[0]) {
    char msg[MSG_LEN];
    srv = server_start(m, cp, msg);
    if (!srv) {
      report_load_error(cp, msg);
      model_unload(m);
      pthread_mutex_unlock(&m->life_mu);
      return DCMI_ERR_INTERNAL;
    }
  }
  m->control = srv;
  pthread_mutex_unlock(&m->life_mu);
  return DCMI_OK;
}

/* Stops every mock thread, removes the socket and forgets the scenario, subscription and counters. */
static void teardown(struct mock_model *m) {
  pthread_mutex_lock(&m->life_mu);
  struct mock_server *srv = m->control;
  m->control = NULL;
  if (srv) server_stop(srv); /* joins the control thread and all burst threads */
  model_reset(m);
  pthread_mutex_unlock(&m->life_mu);
}

__attribute__((visibility("default"))) int mock_dcmi_configure(const char *scenario, const char *control) {
  if (model_on_own_thread()) return -1; /* would have to join the calling thread */
  struct mock_model *m = mock_model();
  teardown(m);
  return model_set_paths(m, scenario, control);
}

__attribute__((destructor)) static void mock_unload(void) {
  struct mock_model *m = mock_model();
  teardown(m);
  model_set_paths(m, NULL, NULL);
}

/* --------------------------------------------------------------------------- topology */

int dcmi_get_card_list(int *card_num, int *card_list, int list_len) {
  struct mock_model *m;
  int rc = model_enter(FN_dcmi_get_card_list, &m);
  if (rc) return model_leave(m, rc);
  if (!card_num || list_len < 0 || (list_len > 0 && !card_list)) return model_leave(m, DCMI_ERR_PARAM);
  for (int i = 0; i < m->sc->ncards && i < list_len; i++) card_list[i] = m->sc->cards[i].card_id;
  *card_num = m->sc->ncards;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_num_in_card(int card_id, int *device_num) {
  struct mock_model *m;
  int rc = model_enter(FN_dcmi_get_device_num_in_card, &m);
  if (rc) return model_leave(m, rc);
  if (!device_num) return model_leave(m, DCMI_ERR_PARAM);
  struct card *cd = find_card(m->sc, card_id);
  if (!cd) return model_leave(m, DCMI_ERR_INVALID_DEVICE);
  *device_num = cd->nchips;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_logic_id(int *device_logic_id, int card_id, int device_id) {
  struct mock_model *m;
  int rc = model_enter(FN_dcmi_get_device_logic_id, &m);
  if (rc) return model_leave(m, rc);
  if (!device_logic_id) return model_leave(m, DCMI_ERR_PARAM);
  struct chip *c = find_chip(m->sc, card_id, device_id);
  if (!c) return model_leave(m, DCMI_ERR_INVALID_DEVICE);
  *device_logic_id = (int)c->logic_id;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_phyid_from_logicid(unsigned int logicid, unsigned int *phyid) {
  struct mock_model *m;
  int rc = model_enter(FN_dcmi_get_device_phyid_from_logicid, &m);
  if (rc) return model_leave(m, rc);
  if (!phyid) return model_leave(m, DCMI_ERR_PARAM);
  struct chip *c = chip_by_logic(m->sc, logicid);
  if (!c) return model_leave(m, DCMI_ERR_INVALID_DEVICE);
  *phyid = c->phy_id;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_logicid_from_phyid(unsigned int phyid, unsigned int *logicid) {
  struct mock_model *m;
  int rc = model_enter(FN_dcmi_get_device_logicid_from_phyid, &m);
  if (rc) return model_leave(m, rc);
  if (!logicid) return model_leave(m, DCMI_ERR_PARAM);
  struct chip *c = chip_by_phy(m->sc, phyid);
  if (!c) return model_leave(m, DCMI_ERR_INVALID_DEVICE);
  *logicid = c->logic_id;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_card_id_device_id_from_logicid(int *card_id, int *device_id, unsigned int device_logic_id) {
  struct mock_model *m;
  int rc = model_enter(FN_dcmi_get_card_id_device_id_from_logicid, &m);
  if (rc) return model_leave(m, rc);
  if (!card_id || !device_id) return model_leave(m, DCMI_ERR_PARAM);
  struct chip *c = chip_by_logic(m->sc, device_logic_id);
  if (!c) return model_leave(m, DCMI_ERR_INVALID_DEVICE);
  *card_id = c->card_id;
  *device_id = c->device_id;
  return model_leave(m, DCMI_OK);
}

/* --------------------------------------------------------------------------- identity */

int dcmi_get_device_chip_info_v2(int card_id, int device_id, struct dcmi_chip_info_v2 *chip_info) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_chip_info_v2, card_id, device_id, chip_info != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  put_chars(chip_info->chip_type, MAX_CHIP_NAME_LEN, m->sc->chip_type);
  put_chars(chip_info->chip_name, MAX_CHIP_NAME_LEN, m->sc->chip_name);
  put_chars(chip_info->chip_ver, MAX_CHIP_NAME_LEN, m->sc->chip_ver);
  put_chars(chip_info->npu_name, MAX_CHIP_NAME_LEN, m->sc->npu_name);
  chip_info->aicore_cnt = m->sc->aicore;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_chip_info(int card_id, int device_id, struct dcmi_chip_info *chip_info) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_chip_info, card_id, device_id, chip_info != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  put_chars(chip_info->chip_type, MAX_CHIP_NAME_LEN, m->sc->chip_type);
  put_chars(chip_info->chip_name, MAX_CHIP_NAME_LEN, m->sc->chip_name);
  put_chars(chip_info->chip_ver, MAX_CHIP_NAME_LEN, m->sc->chip_ver);
  chip_info->aicore_cnt = m->sc->aicore;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_board_info(int card_id, int device_id, struct dcmi_board_info *board_info) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_board_info, card_id, device_id, board_info != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  *board_info = m->sc->board;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_mainboard_id(int card_id, int device_id, unsigned int *mainboard_id) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_mainboard_id, card_id, device_id, mainboard_id != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  *mainboard_id = m->sc->mainboard;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_dcmi_version(char *dcmi_ver, int buf_size) {
  struct mock_model *m;
  int rc = model_enter(FN_dcmi_get_dcmi_version, &m);
  if (rc) return model_leave(m, rc);
  size_t n = strlen(m->sc->dcmi_version);
  if (!dcmi_ver || buf_size <= 0 || (size_t)buf_size < n + 1) return model_leave(m, DCMI_ERR_PARAM);
  memcpy(dcmi_ver, m->sc->dcmi_version, n + 1);
  return model_leave(m, DCMI_OK);
}

int dcmi_get_product_type(int card_id, int device_id, char *product_type_str, int buf_size) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_product_type, card_id, device_id, product_type_str != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  const struct card *cd = &m->sc->cards[c->card_index];
  const char *pt = cd->has_product ? cd->product_type : m->sc->product_type;
  size_t n = strlen(pt);
  if (n == 0) return model_leave(m, DCMI_ERR_NOT_SUPPORTED);
  if (buf_size <= 0 || (size_t)buf_size < n + 1) return model_leave(m, DCMI_ERR_PARAM);
  memcpy(product_type_str, pt, n + 1);
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_type(int card_id, int device_id, enum dcmi_unit_type *device_type) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_type, card_id, device_id, device_type != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  *device_type = NPU_TYPE;
  return model_leave(m, DCMI_OK);
}

/* ------------------------------------------------------------------------- health, codes */

int dcmi_get_device_health(int card_id, int device_id, unsigned int *health) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_health, card_id, device_id, health != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  *health = c->health;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_errorcode_v2(int card_id, int device_id, int *error_count, unsigned int *error_code_list,
                                 unsigned int list_len) {
  struct mock_model *m;
  struct chip *c;
  int ok = error_count != NULL && (list_len == 0 || error_code_list != NULL);
  int rc = model_enter_chip(FN_dcmi_get_device_errorcode_v2, card_id, device_id, ok, &m, &c);
  if (rc) return model_leave(m, rc);
  for (int i = 0; i < c->ncodes && (unsigned)i < list_len; i++) error_code_list[i] = c->codes[i];
  *error_count = c->ncodes;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_ip(int card_id, int device_id, enum dcmi_port_type input_type, int port_id,
                       struct dcmi_ip_addr *ip, struct dcmi_ip_addr *mask) {
  (void)port_id;
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_ip, card_id, device_id, ip != NULL && mask != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  if ((int)input_type != DCMI_ROCE_PORT) return model_leave(m, DCMI_ERR_PARAM);
  if (ip->ip_type == DCMI_IPADDR_TYPE_V6) return model_leave(m, DCMI_ERR_NOT_SUPPORTED); /* the mock has no IPv6 */
  if (!c->has_ip) return model_leave(m, DCMI_ERR_NOT_SUPPORTED);
  memset(ip, 0, sizeof *ip);
  memset(mask, 0, sizeof *mask);
  memcpy(ip->u_addr.ip4, c->ip, 4);
  ip->ip_type = DCMI_IPADDR_TYPE_V4;
  static const unsigned char mask4[4] = {255, 255, 255, 0};
  memcpy(mask->u_addr.ip4, mask4, 4);
  mask->ip_type = DCMI_IPADDR_TYPE_V4;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_info(int card_id, int device_id, enum dcmi_main_cmd main_cmd, unsigned int sub_cmd, void *buf,
                         unsigned int *size) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_info, card_id, device_id, buf != NULL && size != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  if ((int)main_cmd == DCMI_MAIN_CMD_VDEV_MNG && sub_cmd == 1) {
    if (*size < sizeof(struct dcmi_soc_total_resource)) return model_leave(m, DCMI_ERR_PARAM);
    struct dcmi_soc_total_resource *t = buf;
    memset(t, 0, sizeof *t);
    t->vdev_num = 0;
    t->computing.aic = (float)m->sc->aicore;
    t->computing.memory_size = m->sc->hbm_mib;
    *size = sizeof *t;
    return model_leave(m, DCMI_OK);
  }
  if ((int)main_cmd == DCMI_MAIN_CMD_CHIP_INFO && sub_cmd == 1) {
    if (!m->sc->has_spod) return model_leave(m, DCMI_ERR_NOT_SUPPORTED);
    if (*size < sizeof(struct dcmi_spod_info)) return model_leave(m, DCMI_ERR_PARAM);
    struct dcmi_spod_info *s = buf;
    memset(s, 0, sizeof *s);
    s->sdid = c->logic_id;
    s->scale_type = m->sc->scale_type;
    s->super_pod_id = m->sc->spod_id;
    s->server_id = m->sc->server_id;
    *size = sizeof *s;
    return model_leave(m, DCMI_OK);
  }
  return model_leave(m, DCMI_ERR_NOT_SUPPORTED);
}

int dcmi_create_vdevice(int card_id, int device_id, struct dcmi_create_vdev_res_stru *vdev,
                        struct dcmi_create_vdev_out *out) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_create_vdevice, card_id, device_id, vdev != NULL && out != NULL, &m, &c);
  return model_leave(m, rc ? rc : DCMI_ERR_NOT_SUPPORTED);
}

int dcmi_set_destroy_vdevice(int card_id, int device_id, unsigned int vdevid) {
  (void)vdevid;
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_set_destroy_vdevice, card_id, device_id, 1, &m, &c);
  return model_leave(m, rc ? rc : DCMI_ERR_NOT_SUPPORTED);
}

int dcmi_get_npu_work_mode(int card_id, unsigned char *work_mode) {
  struct mock_model *m;
  int rc = model_enter(FN_dcmi_get_npu_work_mode, &m);
  if (rc) return model_leave(m, rc);
  if (!work_mode) return model_leave(m, DCMI_ERR_PARAM);
  struct card *cd = find_card(m->sc, card_id);
  if (!cd) return model_leave(m, DCMI_ERR_INVALID_DEVICE);
  int dropped = 0;
  for (int d = 0; d < cd->nchips; d++) dropped += m->sc->chips[cd->chip_index[d]].dropped;
  if (dropped == cd->nchips) return model_leave(m, DCMI_ERR_NOT_READY);
  *work_mode = m->sc->work_mode;
  return model_leave(m, DCMI_OK);
}

/* ---------------------------------------------------------------------------------- reset */

int dcmi_set_device_reset(int card_id, int device_id, enum dcmi_reset_channel channel_type) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_set_device_reset, card_id, device_id, 1, &m, &c);
  if (rc) return model_leave(m, rc);
  if ((int)channel_type != OUTBAND_CHANNEL && (int)channel_type != INBAND_CHANNEL)
    return model_leave(m, DCMI_ERR_PARAM);
  return model_leave(m, chip_reset(c));
}

int dcmi_get_device_boot_status(int card_id, int device_id, enum dcmi_boot_status *boot_status) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_boot_status, card_id, device_id, boot_status != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  *boot_status = (enum dcmi_boot_status)chip_boot_status(c);
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_outband_channel_state(int card_id, int device_id, int *channel_state) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_outband_channel_state, card_id, device_id, channel_state != NULL, &m,
                            &c);
  if (rc) return model_leave(m, rc);
  *channel_state = 1;
  return model_leave(m, DCMI_OK);
}

int dcmi_pre_reset_soc(int card_id, int device_id) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_pre_reset_soc, card_id, device_id, 1, &m, &c);
  return model_leave(m, rc);
}

int dcmi_rescan_soc(int card_id, int device_id) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_rescan_soc, card_id, device_id, 1, &m, &c);
  return model_leave(m, rc);
}

int dcmi_get_netdev_brother_device(int card_id, int device_id, int *brother_card_id) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_netdev_brother_device, card_id, device_id, brother_card_id != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  const struct card *cd = &m->sc->cards[c->card_index];
  if (!cd->has_brother) return model_leave(m, DCMI_ERR_NOT_SUPPORTED);
  *brother_card_id = cd->brother;
  return model_leave(m, DCMI_OK);
}

/* ------------------------------------------------------------------- resources and misc */

int dcmi_get_device_resource_info(int card_id, int device_id, struct dcmi_proc_mem_info *proc_info, int *proc_num) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_resource_info, card_id, device_id,
                            proc_info != NULL && proc_num != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  for (int i = 0; i < c->processes; i++) {
    proc_info[i].proc_id = 10000 + i;
    proc_info[i].proc_mem_usage = PROC_MEM_BYTES;
  }
  *proc_num = c->processes;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_die_v2(int card_id, int device_id, enum dcmi_die_type input_type, struct dcmi_die_id *die_id) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_die_v2, card_id, device_id, die_id != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  if ((int)input_type != NDIE && (int)input_type != VDIE) return model_leave(m, DCMI_ERR_PARAM);
  die_id->soc_die[0] = 0x4D4F434Bu; /* "MOCK" */
  die_id->soc_die[1] = (unsigned)input_type;
  die_id->soc_die[2] = (unsigned)c->card_id;
  die_id->soc_die[3] = (unsigned)c->device_id;
  die_id->soc_die[4] = c->phy_id;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_pcie_info_v2(int card_id, int device_id, struct dcmi_pcie_info_all *pcie_info) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_pcie_info_v2, card_id, device_id, pcie_info != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  memset(pcie_info, 0, sizeof *pcie_info);
  pcie_info->venderid = 0x19e5;
  pcie_info->subvenderid = 0x0200;
  pcie_info->deviceid = 0xd802;
  pcie_info->subdeviceid = 0x0100;
  pcie_info->domain = 0;
  pcie_info->bdf_busid = c->pcie_bus;
  pcie_info->bdf_deviceid = 0;
  pcie_info->bdf_funcid = 0;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_affinity_cpu_info_by_device_id(int card_id, int device_id, char *affinity_cpu, int *length) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_affinity_cpu_info_by_device_id, card_id, device_id,
                            affinity_cpu != NULL && length != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  size_t n = strlen(c->affinity);
  memcpy(affinity_cpu, c->affinity, n + 1);
  *length = (int)n;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_hbm_info(int card_id, int device_id, struct dcmi_hbm_info *hbm_info) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_hbm_info, card_id, device_id, hbm_info != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  memset(hbm_info, 0, sizeof *hbm_info);
  hbm_info->memory_size = m->sc->hbm_mib;
  hbm_info->freq = 1600;
  hbm_info->memory_usage = 0;
  hbm_info->temp = 40;
  hbm_info->bandwith_util_rate = 0;
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_utilization_rate(int card_id, int device_id, int input_type, unsigned int *utilization_rate) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_utilization_rate, card_id, device_id, utilization_rate != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  if (input_type != 2 && input_type != 6) return model_leave(m, DCMI_ERR_NOT_SUPPORTED);
  *utilization_rate = 0;
  return model_leave(m, DCMI_OK);
}

int dcmi_set_multi_die_policy(enum dcmi_multi_die_policy policy) {
  struct mock_model *m;
  int rc = model_enter(FN_dcmi_set_multi_die_policy, &m);
  if (rc) return model_leave(m, rc);
  if ((int)policy != DCMI_MULTI_DIE_UNION_POLICY && (int)policy != DCMI_MULTI_DIE_INDEP_POLICY)
    return model_leave(m, DCMI_ERR_PARAM);
  return model_leave(m, DCMI_OK);
}

int dcmi_get_device_network_health(int card_id, int device_id, enum dcmi_rdfx_detect_result *result) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_network_health, card_id, device_id, result != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  *result = DCMI_RDFX_DETECT_OK;
  return model_leave(m, DCMI_OK);
}

/* ------------------------------------------------------------------------ fault events */

int dcmi_subscribe_fault_event(int card_id, int device_id, struct dcmi_event_filter filter,
                               dcmi_fault_event_handler handler) {
  struct mock_model *m = mock_model();
  __atomic_fetch_add(&m->subscribe_calls, 1, __ATOMIC_RELAXED);
  int rc = model_enter(FN_dcmi_subscribe_fault_event, &m);
  if (rc) return model_leave(m, rc);
  if (!m->sc->subscribe_ok) return model_leave(m, DCMI_ERR_INTERNAL);
  if (!handler) return model_leave(m, DCMI_ERR_PARAM);
  if (card_id == -1 || device_id == -1) {
    if (card_id != device_id) return model_leave(m, DCMI_ERR_PARAM);
  } else if (!find_chip(m->sc, card_id, device_id)) {
    return model_leave(m, DCMI_ERR_INVALID_DEVICE);
  }
  model_subscribe(m, card_id, device_id, &filter, handler);
  return model_leave(m, DCMI_OK);
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
    if (c->has_ip) mj_buf_printf(b, "\"ip\":\"%u.%u.%u.%u\"", c->ip[0], c->ip[1], c->ip[2], c->ip[3]);
    else mj_buf_puts(b, "\"ip\":null");
    mj_buf_printf(b, ",\"roceTx\":%llu,\"roceRx\":%llu}", c->tx, c->rx);
  }
  mj_buf_printf(b, "],\"counters\":{\"subscribeCalls\":%llu,\"subscribed\":%s,\"eventsFired\":%llu,\"callsByName\":{",
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

/* Handles one request line; the reply goes to cl->out (or later, from a burst). */
static void handle_line(struct mock_server *srv, struct client *cl, const char *line, size_t len) {
  struct mock_model *m = srv->model;
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

  pthread_mutex_lock(&m->mu);
  if (!m->sc) {
    pthread_mutex_unlock(&m->mu);
    reply_error(cl, "mock not loaded");
    goto done;
  }
  if (!strcmp(op, "state")) {
    put_state(m, &cl->out);
    pthread_mutex_unlock(&m->mu);
    goto done;
  }
  if (!strcmp(op, "roceStat")) {
    long long phy;
    struct chip *c = NULL;
    if (get_int(msg, &req, "", "phyId", 1, 0, 0x7FFFFFFFLL, &phy) < 0) {
      pthread_mutex_unlock(&m->mu);
      reply_error(cl, "%s", msg);
      goto done;
    }
    c = chip_by_phy(m->sc, phy);
    if (!c || c->dropped) {
      pthread_mutex_unlock(&m->mu);
      if (!c) reply_error(cl, "unknown phyId %lld", phy);
      else reply_error(cl, "phyId %lld: chip dropped (card drop)", phy);
      goto done;
    }
    chip_roce_query(c);
    mj_buf_printf(&cl->out, "{\"ok\":true,\"logicId\":%u,\"phyId\":%u,\"link\":\"%s\",\"tx\":%llu,\"rx\":%llu}\n",
                  c->logic_id, c->phy_id, c->link_up ? "UP" : "DOWN", c->tx, c->rx);
    pthread_mutex_unlock(&m->mu);
    goto done;
  }

  struct chip *c = req_chip(m->sc, msg, &req);
  if (!c) {
    pthread_mutex_unlock(&m->mu);
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
    } else if (chip_apply_code(c, code, assertion) < 0) {
      failf(msg, "eventId", "error-code list of logicId %u is full (%d codes)", c->logic_id, DCMI_MAX_ERROR_CODES);
      bad = 1;
    } else {
      struct event_spec e = {c->card_id, c->device_id, c->logic_id, code, sev, (unsigned char)assertion};
      struct subscription s = m->sub;
      mj_buf reply;
      mj_buf_init(&reply);
      mj_buf_printf(&reply, "{\"ok\":true,\"logicId\":%u,\"eventId\":\"%08X\",\"assertion\":\"%s\",\"errorCodes\":",
                    c->logic_id, code, assertion_names[assertion]);
      put_codes(&reply, c);
      int fire = is_fault && sub_matches(&s, &e);
      int serial = fire ? model_next_serial(m) : 0;
      pthread_mutex_unlock(&m->mu);
      if (fire) {
        struct dcmi_event tmpl;
        event_template(&tmpl, &e);
        model_deliver(m, s.handler, &tmpl, serial);
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
    } else if (!m->sub.active) {
      failf(msg, "", "not subscribed: call dcmi_subscribe_fault_event first");
      bad = 1;
    } else if (chip_apply_code(c, code, assertion) < 0) {
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
        pthread_mutex_unlock(&m->mu);
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
    pthread_mutex_unlock(&m->mu);
    reply_error(cl, "%s", msg);
    goto done;
  }
  mj_buf_printf(&cl->out, "{\"ok\":true,\"logicId\":%u}\n", c->logic_id);
  pthread_mutex_unlock(&m->mu);
done:
  mj_free(&req);
}

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

static struct mock_server *server_start(struct mock_model *m, const char *path, char *msg) {
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

static void server_stop(struct mock_server *srv) {
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
