/*
 * Our own declarations of the second DCMI API generation (`dcmiv2_*`), used by Ascend910A5 (Ascend950 chips) in the
 * same libdcmi.so (dcmi-abi.md §1.3; upstream header dcmi_interface_api_v2.h, Go callers dcmi/dcmi_v2.go and
 * devmanager_v2.go). Every function addresses one chip by a single `dev_id` instead of (card_id, device_id); the
 * upstream wrapper passes the chip's logic ID as dev_id. The structures are the v1 ones of dcmi_abi.h.
 *
 * Prototypes are interface facts; two of them are not in the upstream header but are called by the upstream wrapper:
 * dcmiv2_get_device_ip and the 3-argument dcmiv2_subscribe_fault_event (the header declares two parameters, the
 * wrapper's function-pointer type and the library take the handler as a third one, as in v1 §5.1).
 * dcmiv2_get_device_list takes the list first and the count second (the header's order; the upstream wrapper's
 * parameter names are swapped but it passes the arguments in the header's order).
 */
#ifndef ASCEND_NPU_AGENT_DCMI_ABI_V2_H
#define ASCEND_NPU_AGENT_DCMI_ABI_V2_H

#include "dcmi_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Electronic label (dcmiv2_get_device_elabel_info): five NUL-terminated strings of MAX_LENTH (256) bytes. */
#define DCMI_ELABEL_LEN 256
struct dcmi_elabel_info { /* size 1280, align 1 */
  char product_name[DCMI_ELABEL_LEN];
  char model[DCMI_ELABEL_LEN];
  char manufacturer[DCMI_ELABEL_LEN];
  char manufacturer_date[DCMI_ELABEL_LEN];
  char serial_number[DCMI_ELABEL_LEN];
};
DCMI_ABI_ASSERT(sizeof(struct dcmi_elabel_info) == 1280, "sizeof dcmi_elabel_info");
DCMI_ABI_ASSERT(offsetof(struct dcmi_elabel_info, serial_number) == 1024, "offsetof dcmi_elabel_info.serial_number");

/*
 * URMA entity ids (dcmiv2_get_urma_device_cnt / dcmiv2_get_eid_list_by_urma_dev_index): a chip has several URMA
 * devices, each with up to DCMI_URMA_MAX_EIDS 16-byte EIDs (network order) and their index.
 */
#define DCMI_URMA_EID_SIZE 16
#define DCMI_URMA_MAX_EIDS 32
typedef union dcmi_urma_eid { /* size 16, align 8 */
  unsigned char raw[DCMI_URMA_EID_SIZE];
  struct {
    unsigned long subnet_prefix;
    unsigned long interface_id;
  } in6;
} dcmi_urma_eid_t;
typedef struct dcmi_urma_eid_info { /* size 24, align 8 */
  dcmi_urma_eid_t eid;
  unsigned int eid_index;
} dcmi_urma_eid_info_t;
DCMI_ABI_ASSERT(sizeof(dcmi_urma_eid_info_t) == 24, "sizeof dcmi_urma_eid_info_t");
DCMI_ABI_ASSERT(offsetof(dcmi_urma_eid_info_t, eid_index) == 16, "offsetof dcmi_urma_eid_info_t.eid_index");

/* DCMI_FN(name, params), in the order of the upstream header. */
#define DCMI_V2_FUNCTIONS(DCMI_FN)                                                                                 \
  DCMI_FN(dcmiv2_init, (void))                                                                                     \
  DCMI_FN(dcmiv2_get_device_list, (int *device_list, int *device_num, int list_len))                               \
  DCMI_FN(dcmiv2_get_all_device_count, (int *all_device_count))                                                    \
  DCMI_FN(dcmiv2_get_device_type, (int dev_id, enum dcmi_unit_type *device_type))                                  \
  DCMI_FN(dcmiv2_get_device_pcie_info, (int dev_id, struct dcmi_pcie_info_all *pcie_info))                         \
  DCMI_FN(dcmiv2_get_device_chip_info, (int dev_id, struct dcmi_chip_info_v2 *chip_info))                          \
  DCMI_FN(dcmiv2_get_device_health, (int dev_id, unsigned int *health))                                            \
  DCMI_FN(dcmiv2_get_device_error_code_list,                                                                       \
          (int dev_id, int *error_count, unsigned int *error_code_list, unsigned int list_len))                    \
  DCMI_FN(dcmiv2_get_device_hbm_info, (int dev_id, struct dcmi_hbm_info *hbm_info))                                \
  DCMI_FN(dcmiv2_get_device_utilization_rate, (int dev_id, int input_type, unsigned int *utilization_rate))        \
  DCMI_FN(dcmiv2_get_device_info,                                                                                  \
          (int dev_id, enum dcmi_main_cmd main_cmd, unsigned int sub_cmd, void *buf, unsigned int *size))          \
  DCMI_FN(dcmiv2_get_device_network_health, (int dev_id, enum dcmi_rdfx_detect_result *result))                   \
  DCMI_FN(dcmiv2_get_chip_phy_id_by_dev_id, (unsigned int dev_id, unsigned int *phyid))                            \
  DCMI_FN(dcmiv2_get_dev_id_by_chip_phy_id, (unsigned int phyid, unsigned int *dev_id))                            \
  DCMI_FN(dcmiv2_reset_device, (int dev_id, enum dcmi_reset_channel channel_type))                                 \
  DCMI_FN(dcmiv2_get_device_outband_channel_state, (int dev_id, int *channel_state))                               \
  DCMI_FN(dcmiv2_pre_reset_device, (int dev_id))                                                                   \
  DCMI_FN(dcmiv2_rescan_device, (int dev_id))                                                                      \
  DCMI_FN(dcmiv2_get_device_boot_status, (int dev_id, enum dcmi_boot_status *boot_status))                         \
  DCMI_FN(dcmiv2_subscribe_fault_event,                                                                            \
          (int dev_id, struct dcmi_event_filter filter, dcmi_fault_event_handler handler))                         \
  DCMI_FN(dcmiv2_get_device_die_id, (int dev_id, enum dcmi_die_type input_type, struct dcmi_die_id *die_id))       \
  DCMI_FN(dcmiv2_get_device_proc_mem_info, (int dev_id, struct dcmi_proc_mem_info *proc_info, int *proc_num))      \
  DCMI_FN(dcmiv2_get_device_board_info, (int dev_id, struct dcmi_board_info *board_info))                          \
  DCMI_FN(dcmiv2_get_dcmi_version, (char *dcmi_ver, int buf_size))                                                 \
  DCMI_FN(dcmiv2_get_mainboard_id, (int dev_id, unsigned int *mainboard_id))                                       \
  DCMI_FN(dcmiv2_get_device_ip, (int dev_id, enum dcmi_port_type input_type, int port_id, struct dcmi_ip_addr *ip, \
                                 struct dcmi_ip_addr *mask))                                                       \
  DCMI_FN(dcmiv2_get_device_elabel_info, (int dev_id, struct dcmi_elabel_info *elabel_info))                       \
  DCMI_FN(dcmiv2_get_urma_device_cnt, (int dev_id, unsigned int *dev_cnt))                                         \
  DCMI_FN(dcmiv2_get_eid_list_by_urma_dev_index,                                                                   \
          (int dev_id, unsigned int dev_index, dcmi_urma_eid_info_t *eid_list, unsigned int *eid_cnt))

#define DCMI_V2_DECLARE_PROTOTYPE(name, params) int name params;
DCMI_V2_FUNCTIONS(DCMI_V2_DECLARE_PROTOTYPE)
#undef DCMI_V2_DECLARE_PROTOTYPE

#ifdef __cplusplus
}
#endif

#endif
