/*
 * Mock libdcmi.so, second API generation: the dcmiv2_* functions of native/dcmi/dcmi_abi_v2.h that an Ascend910A5
 * (Ascend950) driver offers (dcmi-abi.md §1.3). Each addresses one chip by dev_id, which is the chip's logic id
 * (upstream devmanager_v2.go passes the logic id as dev_id). They answer from the same model as the v1 functions
 * (mock_abi.c), so the control socket acts on v2 chips exactly as on v1 ones, and fault events reach a v2 subscriber
 * through the same callback path.
 *
 * A scenario with "apiVersion": 2 makes these work and every v1 function (dcmi_init included) return -8255; with the
 * default apiVersion 1 it is the other way round (model_enter in mock_model.c).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#pragma GCC visibility push(default)
#include "dcmi_abi_v2.h"
#pragma GCC visibility pop

#include "mock_abi_v2.h"
#include "mock_model.h"

/* Every v2 function must be defined here; with -Wl,-z,defs a missing one fails the link. */
__attribute__((used)) static const void *const all_v2_exports[] = {
#define MOCK_FN_ADDR(name, params) (const void *)name,
    DCMI_V2_FUNCTIONS(MOCK_FN_ADDR)
#undef MOCK_FN_ADDR
};

/* model_enter, then check the pointers, the dev_id (a logic id) and card drop; *out = the chip. */
static int enter_dev(enum fn_index fn, long long dev_id, int pointers_ok, struct mock_model **m, struct chip **out) {
  int rc = model_enter(fn, m);
  if (rc) return rc;
  if (!pointers_ok) return DCMI_ERR_PARAM;
  struct chip *c = chip_by_logic((*m)->sc, dev_id);
  if (!c) return DCMI_ERR_INVALID_DEVICE;
  if (c->dropped) return DCMI_ERR_NOT_READY;
  *out = c;
  return DCMI_OK;
}

int dcmiv2_init(void) { return mock_init_api(FN_dcmiv2_init, 2); }

/* ------------------------------------------------------------------------------------ topology */

int dcmiv2_get_device_list(int *device_list, int *device_num, int list_len) {
  struct mock_model *m;
  int rc = model_enter(FN_dcmiv2_get_device_list, &m);
  if (rc) return model_leave(m, rc);
  if (!device_num || list_len < 0 || (list_len > 0 && !device_list)) return model_leave(m, DCMI_ERR_PARAM);
  int n = 0; /* cards in scenario order, devices 0..n-1: the v1 enumeration order */
  for (int i = 0; i < m->sc->ncards; i++) {
    const struct card *cd = &m->sc->cards[i];
    for (int d = 0; d < cd->nchips; d++, n++)
      if (n < list_len) device_list[n] = (int)m->sc->chips[cd->chip_index[d]].logic_id;
  }
  *device_num = n;
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_all_device_count(int *all_device_count) {
  struct mock_model *m;
  int rc = model_enter(FN_dcmiv2_get_all_device_count, &m);
  if (rc) return model_leave(m, rc);
  if (!all_device_count) return model_leave(m, DCMI_ERR_PARAM);
  *all_device_count = m->sc->nchips;
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_chip_phy_id_by_dev_id(unsigned int dev_id, unsigned int *phyid) {
  struct mock_model *m;
  int rc = model_enter(FN_dcmiv2_get_chip_phy_id_by_dev_id, &m);
  if (rc) return model_leave(m, rc);
  if (!phyid) return model_leave(m, DCMI_ERR_PARAM);
  struct chip *c = chip_by_logic(m->sc, dev_id);
  if (!c) return model_leave(m, DCMI_ERR_INVALID_DEVICE);
  *phyid = c->phy_id;
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_dev_id_by_chip_phy_id(unsigned int phyid, unsigned int *dev_id) {
  struct mock_model *m;
  int rc = model_enter(FN_dcmiv2_get_dev_id_by_chip_phy_id, &m);
  if (rc) return model_leave(m, rc);
  if (!dev_id) return model_leave(m, DCMI_ERR_PARAM);
  struct chip *c = chip_by_phy(m->sc, phyid);
  if (!c) return model_leave(m, DCMI_ERR_INVALID_DEVICE);
  *dev_id = c->logic_id;
  return model_leave(m, DCMI_OK);
}

/* ------------------------------------------------------------------------------------ identity */

int dcmiv2_get_device_type(int dev_id, enum dcmi_unit_type *device_type) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_type, dev_id, device_type != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  *device_type = NPU_TYPE;
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_device_chip_info(int dev_id, struct dcmi_chip_info_v2 *chip_info) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_chip_info, dev_id, chip_info != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  chip_info_v2(m->sc, chip_info);
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_device_board_info(int dev_id, struct dcmi_board_info *board_info) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_board_info, dev_id, board_info != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  *board_info = m->sc->board;
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_mainboard_id(int dev_id, unsigned int *mainboard_id) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_mainboard_id, dev_id, mainboard_id != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  *mainboard_id = m->sc->mainboard;
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_dcmi_version(char *dcmi_ver, int buf_size) {
  struct mock_model *m;
  int rc = model_enter(FN_dcmiv2_get_dcmi_version, &m);
  if (rc) return model_leave(m, rc);
  size_t n = strlen(m->sc->dcmi_version);
  if (!dcmi_ver || buf_size <= 0 || (size_t)buf_size < n + 1) return model_leave(m, DCMI_ERR_PARAM);
  memcpy(dcmi_ver, m->sc->dcmi_version, n + 1);
  return model_leave(m, DCMI_OK);
}

/* ------------------------------------------------------------------------------- health, codes */

int dcmiv2_get_device_health(int dev_id, unsigned int *health) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_health, dev_id, health != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  *health = c->health;
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_device_error_code_list(int dev_id, int *error_count, unsigned int *error_code_list,
                                      unsigned int list_len) {
  struct mock_model *m;
  struct chip *c;
  int ok = error_count != NULL && (list_len == 0 || error_code_list != NULL);
  int rc = enter_dev(FN_dcmiv2_get_device_error_code_list, dev_id, ok, &m, &c);
  if (rc) return model_leave(m, rc);
  for (int i = 0; i < c->ncodes && (unsigned)i < list_len; i++) error_code_list[i] = c->codes[i];
  *error_count = c->ncodes;
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_device_network_health(int dev_id, enum dcmi_rdfx_detect_result *result) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_network_health, dev_id, result != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  *result = DCMI_RDFX_DETECT_OK;
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_device_ip(int dev_id, enum dcmi_port_type input_type, int port_id, struct dcmi_ip_addr *ip,
                         struct dcmi_ip_addr *mask) {
  (void)port_id;
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_ip, dev_id, ip != NULL && mask != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  return model_leave(m, chip_ip(c, (int)input_type, ip, mask));
}

int dcmiv2_get_device_info(int dev_id, enum dcmi_main_cmd main_cmd, unsigned int sub_cmd, void *buf,
                           unsigned int *size) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_info, dev_id, buf != NULL && size != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  return model_leave(m, chip_device_info(m->sc, c, (int)main_cmd, sub_cmd, buf, size));
}

/* -------------------------------------------------------------------------------------- reset */

int dcmiv2_reset_device(int dev_id, enum dcmi_reset_channel channel_type) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_reset_device, dev_id, 1, &m, &c);
  if (rc) return model_leave(m, rc);
  if ((int)channel_type != OUTBAND_CHANNEL && (int)channel_type != INBAND_CHANNEL)
    return model_leave(m, DCMI_ERR_PARAM);
  return chip_reset_call(m, c);
}

int dcmiv2_get_device_boot_status(int dev_id, enum dcmi_boot_status *boot_status) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_boot_status, dev_id, boot_status != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  *boot_status = (enum dcmi_boot_status)chip_boot_status(c);
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_device_outband_channel_state(int dev_id, int *channel_state) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_outband_channel_state, dev_id, channel_state != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  *channel_state = 1;
  return model_leave(m, DCMI_OK);
}

int dcmiv2_pre_reset_device(int dev_id) {
  struct mock_model *m;
  struct chip *c;
  return model_leave(m, enter_dev(FN_dcmiv2_pre_reset_device, dev_id, 1, &m, &c));
}

int dcmiv2_rescan_device(int dev_id) {
  struct mock_model *m;
  struct chip *c;
  return model_leave(m, enter_dev(FN_dcmiv2_rescan_device, dev_id, 1, &m, &c));
}

/* -------------------------------------------------------------------------- resources and misc */

int dcmiv2_get_device_proc_mem_info(int dev_id, struct dcmi_proc_mem_info *proc_info, int *proc_num) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_proc_mem_info, dev_id, proc_info != NULL && proc_num != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  chip_procs(c, proc_info, proc_num);
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_device_die_id(int dev_id, enum dcmi_die_type input_type, struct dcmi_die_id *die_id) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_die_id, dev_id, die_id != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  /* upstream dcmi_v2.go also accepts DDIE (2) */
  if ((int)input_type != NDIE && (int)input_type != VDIE && (int)input_type != 2) return model_leave(m, DCMI_ERR_PARAM);
  chip_die(c, (int)input_type, die_id);
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_device_pcie_info(int dev_id, struct dcmi_pcie_info_all *pcie_info) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_pcie_info, dev_id, pcie_info != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  chip_pcie(c, pcie_info);
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_device_hbm_info(int dev_id, struct dcmi_hbm_info *hbm_info) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_hbm_info, dev_id, hbm_info != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  chip_hbm(m->sc, hbm_info);
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_device_utilization_rate(int dev_id, int input_type, unsigned int *utilization_rate) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_utilization_rate, dev_id, utilization_rate != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  if (input_type != 2 && input_type != 6) return model_leave(m, DCMI_ERR_NOT_SUPPORTED);
  *utilization_rate = 0;
  return model_leave(m, DCMI_OK);
}

/* ------------------------------------------------------------------------------- fault events */

/* dev_id -1 = every chip (the §5.2 "all devices" convention); events reach the handler exactly as v1 ones do. */
int dcmiv2_subscribe_fault_event(int dev_id, struct dcmi_event_filter filter, dcmi_fault_event_handler handler) {
  struct mock_model *m = mock_model();
  __atomic_fetch_add(&m->subscribe_calls, 1, __ATOMIC_RELAXED);
  int rc = model_enter(FN_dcmiv2_subscribe_fault_event, &m);
  if (rc) return model_leave(m, rc);
  if (!m->sc->subscribe_ok) return model_leave(m, DCMI_ERR_INTERNAL);
  if (!handler) return model_leave(m, DCMI_ERR_PARAM);
  int card = -1, dev = -1;
  if (dev_id != -1) {
    const struct chip *c = chip_by_logic(m->sc, dev_id);
    if (!c) return model_leave(m, DCMI_ERR_INVALID_DEVICE);
    card = c->card_id;
    dev = c->device_id;
  }
  model_subscribe(m, card, dev, &filter, handler);
  return model_leave(m, DCMI_OK);
}

/* ----------------------------------------------------------------------------- electronic label */

/* Scenario "elabel" (absent: -8255); the serial number is the scenario's followed by the chip's phy id. */
int dcmiv2_get_device_elabel_info(int dev_id, struct dcmi_elabel_info *elabel_info) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_device_elabel_info, dev_id, elabel_info != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  if (!m->sc->has_elabel) return model_leave(m, DCMI_ERR_NOT_SUPPORTED);
  memset(elabel_info, 0, sizeof *elabel_info);
  snprintf(elabel_info->product_name, DCMI_ELABEL_LEN, "%s", m->sc->elabel[0]);
  snprintf(elabel_info->model, DCMI_ELABEL_LEN, "%s", m->sc->elabel[1]);
  snprintf(elabel_info->manufacturer, DCMI_ELABEL_LEN, "%s", m->sc->elabel[2]);
  snprintf(elabel_info->manufacturer_date, DCMI_ELABEL_LEN, "%s", m->sc->elabel[3]);
  size_t n = strnlen(m->sc->elabel[4], DCMI_ELABEL_LEN - 4); /* the loader keeps room for the 3 digits */
  memcpy(elabel_info->serial_number, m->sc->elabel[4], n);
  snprintf(elabel_info->serial_number + n, 4, "%u", (unsigned)(unsigned char)c->phy_id); /* phy ids are 0..255 */
  return model_leave(m, DCMI_OK);
}

/* URMA EIDs (scenario chip "urma"): the device count, then each device's EIDs with their index (0, 1, ...). */
int dcmiv2_get_urma_device_cnt(int dev_id, unsigned int *dev_cnt) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_urma_device_cnt, dev_id, dev_cnt != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  *dev_cnt = (unsigned)c->nurma;
  return model_leave(m, DCMI_OK);
}

int dcmiv2_get_eid_list_by_urma_dev_index(int dev_id, unsigned int dev_index, dcmi_urma_eid_info_t *eid_list,
                                          unsigned int *eid_cnt) {
  struct mock_model *m;
  struct chip *c;
  int rc = enter_dev(FN_dcmiv2_get_eid_list_by_urma_dev_index, dev_id, eid_list != NULL && eid_cnt != NULL, &m, &c);
  if (rc) return model_leave(m, rc);
  if (dev_index >= (unsigned)c->nurma) return model_leave(m, DCMI_ERR_PARAM);
  unsigned n = (unsigned)c->neids[dev_index];
  if (*eid_cnt < n) return model_leave(m, DCMI_ERR_PARAM); /* in: the list's length */
  for (unsigned i = 0; i < n; i++) {
    memset(&eid_list[i], 0, sizeof eid_list[i]);
    memcpy(eid_list[i].eid.raw, c->eids[dev_index][i], DCMI_URMA_EID_SIZE);
    eid_list[i].eid_index = i;
  }
  *eid_cnt = n;
  return model_leave(m, DCMI_OK);
}
