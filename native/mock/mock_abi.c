/*
 * Mock libdcmi.so: exports the DCMI functions declared in native/dcmi/dcmi_abi.h, answers them from a JSON
 * scenario (ASCEND_MOCK_SCENARIO) and lets tests change the hardware state through a Unix control socket
 * (ASCEND_MOCK_CONTROL). Contract: design/architecture.md §5; schema and protocol: scenarios/README.md.
 *
 * This file is the library's face: the lifecycle (dcmi_init loads the scenario and starts the control server;
 * mock_dcmi_configure and unloading stop it) and the exported functions, each a thin read or change of the model
 * (mock_model.h) under its lock. The control server is mock_control.c.
 *
 * Threads: none before the first successful dcmi_init. Then the control thread and the burst threads of
 * mock_control.c; fault callbacks run only on those. Unloading the library (destructor) or mock_dcmi_configure()
 * stops and joins every thread and removes the socket.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#pragma GCC visibility push(default)
#include "dcmi_abi.h"
/* Mock-only export: switch scenario/control paths at run time (NULL = use the environment variable). */
int mock_dcmi_configure(const char *scenario_path, const char *control_path);
#pragma GCC visibility pop

#include "mock_abi_v2.h"
#include "mock_control.h"
#include "mock_fields.h"
#include "mock_model.h"
#include "mock_vdevice.h"

#define PROC_MEM_BYTES (1024ULL * 1024ULL * 1024ULL)

/* Every function of both lists must be defined here; with -Wl,-z,defs a missing one fails the link. */
__attribute__((used)) static const void *const all_exports[] = {
#define MOCK_FN_ADDR(name, params) (const void *)name,
    DCMI_BOUND_FUNCTIONS(MOCK_FN_ADDR) DCMI_UNBOUND_FUNCTIONS(MOCK_FN_ADDR)
#undef MOCK_FN_ADDR
};

void put_chars(unsigned char *dst, size_t n, const char *src) {
  memset(dst, 0, n);
  size_t l = strlen(src);
  memcpy(dst, src, l < n ? l : n);
}

/* ------------------------------------------------------------------------------ lifecycle */

int dcmi_init(void) { return mock_init_api(FN_dcmi_init, 1); }

/* dcmi_init (api_version 1) and dcmiv2_init (2): loads the scenario and starts the control server. A scenario of the
 * other generation (its apiVersion) makes the call fail with -8255, as v1 dcmi_init does on an Ascend910A5 driver
 * (dcmi-abi.md §1.3), and leaves nothing loaded. */
int mock_init_api(enum fn_index fn, int api_version) {
  struct mock_model *m;
  int rc = model_enter(fn, &m);
  if (rc != DCMI_ERR_INTERNAL) return model_leave(m, rc); /* loaded: OK, or -8255 for the other generation */
  model_leave(m, 0);
  pthread_mutex_lock(&m->life_mu);
  int r = model_load(m);
  if (r != 0) {
    pthread_mutex_unlock(&m->life_mu);
    if (r < 0) return DCMI_ERR_INTERNAL;
    pthread_mutex_lock(&m->mu); /* loaded meanwhile by another thread */
    int same = m->sc && m->sc->api_version == api_version;
    pthread_mutex_unlock(&m->mu);
    return same ? DCMI_OK : DCMI_ERR_NOT_SUPPORTED;
  }
  if (m->sc->api_version != api_version) {
    model_unload(m);
    pthread_mutex_unlock(&m->life_mu);
    return DCMI_ERR_NOT_SUPPORTED;
  }
  const char *cp = model_control_path(m);
  struct mock_server *srv = NULL;
  if (cp && cp[0]) {
    char msg[MSG_LEN];
    srv = control_start(m, cp, msg);
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
  if (srv) control_stop(srv); /* joins the control thread and all burst threads */
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
  chip_info_v2(m->sc, chip_info);
  return model_leave(m, DCMI_OK);
}

void chip_info_v2(const struct scenario *sc, struct dcmi_chip_info_v2 *chip_info) {
  put_chars(chip_info->chip_type, MAX_CHIP_NAME_LEN, sc->chip_type);
  put_chars(chip_info->chip_name, MAX_CHIP_NAME_LEN, sc->chip_name);
  put_chars(chip_info->chip_ver, MAX_CHIP_NAME_LEN, sc->chip_ver);
  put_chars(chip_info->npu_name, MAX_CHIP_NAME_LEN, sc->npu_name);
  chip_info->aicore_cnt = sc->aicore;
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
  return model_leave(m, chip_ip(c, (int)input_type, ip, mask));
}

int chip_ip(const struct chip *c, int input_type, struct dcmi_ip_addr *ip, struct dcmi_ip_addr *mask) {
  if (input_type != DCMI_ROCE_PORT) return DCMI_ERR_PARAM;
  if (ip->ip_type == DCMI_IPADDR_TYPE_V6) return DCMI_ERR_NOT_SUPPORTED; /* the mock has no IPv6 */
  if (!c->has_ip) return DCMI_ERR_NOT_SUPPORTED;
  memset(ip, 0, sizeof *ip);
  memset(mask, 0, sizeof *mask);
  memcpy(ip->u_addr.ip4, c->ip, 4);
  ip->ip_type = DCMI_IPADDR_TYPE_V4;
  static const unsigned char mask4[4] = {255, 255, 255, 0};
  memcpy(mask->u_addr.ip4, mask4, 4);
  mask->ip_type = DCMI_IPADDR_TYPE_V4;
  return DCMI_OK;
}

int dcmi_get_device_info(int card_id, int device_id, enum dcmi_main_cmd main_cmd, unsigned int sub_cmd, void *buf,
                         unsigned int *size) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_info, card_id, device_id, buf != NULL && size != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  return model_leave(m, chip_device_info(m->sc, c, (int)main_cmd, sub_cmd, buf, size));
}

int chip_device_info(struct scenario *sc, struct chip *c, int main_cmd, unsigned sub_cmd, void *buf,
                     unsigned *size) {
  if (main_cmd == DCMI_MAIN_CMD_VDEV_MNG) return vdev_device_info(sc, c, sub_cmd, buf, size);
  if (main_cmd == DCMI_MAIN_CMD_CHIP_INFO && sub_cmd == 1) {
    if (!sc->has_spod) return DCMI_ERR_NOT_SUPPORTED;
    if (*size < sizeof(struct dcmi_spod_info)) return DCMI_ERR_PARAM;
    struct dcmi_spod_info *s = buf;
    memset(s, 0, sizeof *s);
    s->sdid = c->logic_id;
    s->scale_type = sc->scale_type;
    s->super_pod_id = sc->spod_id;
    s->server_id = sc->server_id;
    s->chassis_id = sc->chassis_id;         /* upstream: RackID (A5) */
    s->super_pod_type = sc->super_pod_type; /* upstream: super-pod type (A5 topology file) */
    *size = sizeof *s;
    return DCMI_OK;
  }
  return DCMI_ERR_NOT_SUPPORTED;
}

int dcmi_create_vdevice(int card_id, int device_id, struct dcmi_create_vdev_res_stru *vdev,
                        struct dcmi_create_vdev_out *out) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_create_vdevice, card_id, device_id, vdev != NULL && out != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  return model_leave(m, vdev_create(m->sc, c, vdev, out));
}

int dcmi_set_destroy_vdevice(int card_id, int device_id, unsigned int vdevid) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_set_destroy_vdevice, card_id, device_id, 1, &m, &c);
  if (rc) return model_leave(m, rc);
  return model_leave(m, vdev_destroy(c, vdevid));
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
  return chip_reset_call(m, c);
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
  chip_procs(c, proc_info, proc_num);
  return model_leave(m, DCMI_OK);
}

void chip_procs(const struct chip *c, struct dcmi_proc_mem_info *proc_info, int *proc_num) {
  for (int i = 0; i < c->processes; i++) {
    proc_info[i].proc_id = 10000 + i;
    proc_info[i].proc_mem_usage = PROC_MEM_BYTES;
  }
  *proc_num = c->processes;
}

int dcmi_get_device_die_v2(int card_id, int device_id, enum dcmi_die_type input_type, struct dcmi_die_id *die_id) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_die_v2, card_id, device_id, die_id != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  if ((int)input_type != NDIE && (int)input_type != VDIE) return model_leave(m, DCMI_ERR_PARAM);
  chip_die(c, (int)input_type, die_id);
  return model_leave(m, DCMI_OK);
}

void chip_die(const struct chip *c, int input_type, struct dcmi_die_id *die_id) {
  if (c->has_die) { /* scenario "dieId" */
    for (int i = 0; i < DIE_ID_COUNT; i++) die_id->soc_die[i] = c->die[i];
    return;
  }
  die_id->soc_die[0] = 0x4D4F434Bu; /* "MOCK" */
  die_id->soc_die[1] = (unsigned)input_type;
  die_id->soc_die[2] = (unsigned)c->card_id;
  die_id->soc_die[3] = (unsigned)c->device_id;
  die_id->soc_die[4] = c->phy_id;
}

int dcmi_get_device_pcie_info_v2(int card_id, int device_id, struct dcmi_pcie_info_all *pcie_info) {
  struct mock_model *m;
  struct chip *c;
  int rc = model_enter_chip(FN_dcmi_get_device_pcie_info_v2, card_id, device_id, pcie_info != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  chip_pcie(c, pcie_info);
  return model_leave(m, DCMI_OK);
}

void chip_pcie(const struct chip *c, struct dcmi_pcie_info_all *pcie_info) {
  memset(pcie_info, 0, sizeof *pcie_info);
  pcie_info->venderid = 0x19e5;
  pcie_info->subvenderid = 0x0200;
  pcie_info->deviceid = 0xd802;
  pcie_info->subdeviceid = 0x0100;
  pcie_info->domain = 0;
  pcie_info->bdf_busid = c->pcie_bus;
  pcie_info->bdf_deviceid = 0;
  pcie_info->bdf_funcid = 0;
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
  chip_hbm(m->sc, hbm_info);
  return model_leave(m, DCMI_OK);
}

void chip_hbm(const struct scenario *sc, struct dcmi_hbm_info *hbm_info) {
  memset(hbm_info, 0, sizeof *hbm_info);
  hbm_info->memory_size = sc->hbm_mib;
  hbm_info->freq = 1600;
  hbm_info->memory_usage = 0;
  hbm_info->temp = 40;
  hbm_info->bandwith_util_rate = 0;
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
