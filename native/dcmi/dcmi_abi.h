/*
 * Our own declarations of the DCMI C interface, written from spec/dcmi-abi.md (§4, §5, §6).
 * No vendor header is used. Both the N-API binding (which dlopens the library and calls these
 * through function pointers) and the mock libdcmi.so (which exports them) compile against this file,
 * so one layout serves both; native/dcmi/abi_check.c asserts every size and offset the spec states.
 * LP64 Linux only (x86_64 / aarch64).
 */
#ifndef ASCEND_NPU_AGENT_DCMI_ABI_H
#define ASCEND_NPU_AGENT_DCMI_ABI_H

#ifdef __cplusplus
extern "C" {
#endif

/* §2.1 return codes used by the binding and the mock */
#define DCMI_OK 0
#define DCMI_ERR_PARAM (-8001)
#define DCMI_ERR_INTERNAL (-8005)
#define DCMI_ERR_INVALID_DEVICE (-8007)
#define DCMI_ERR_NO_DEVICE (-8008)
#define DCMI_ERR_NOT_READY (-8012)
#define DCMI_ERR_RESET_FAILED (-8015)
#define DCMI_ERR_NOT_SUPPORTED (-8255)
#define DCMI_WRAP_DLCLOSE_FAILED (-99997)
#define DCMI_WRAP_SYMBOL_MISSING (-99998)
#define DCMI_WRAP_LOAD_FAILED (-99999)

/* §6 constants */
#define MAX_CHIP_NAME_LEN 32
#define TEMPLATE_NAME_LEN 32
#define DIE_ID_COUNT 5
#define DCMI_VDEV_RES_NAME_LEN 16
#define DCMI_VDEV_SIZE 20
#define DCMI_VDEV_FOR_RESERVE 32
#define DCMI_SOC_SPLIT_MAX 32
#define DCMI_MAX_EVENT_NAME_LENGTH 256
#define DCMI_MAX_EVENT_DATA_LENGTH 32
#define DCMI_MAX_EVENT_RESV_LENGTH 32

/* wrapper constants (§6 last paragraph, §4.1, §4.3, §4.8) */
#define DCMI_CARD_LIST_LEN 64
#define DCMI_MAX_ERROR_CODES 128
#define DCMI_MAX_PROC_NUM 32
#define DCMI_VERSION_BUF 33
#define DCMI_PRODUCT_TYPE_BUF 65
#define DCMI_AFFINITY_BUF 33
#define DCMI_BOOT_STATUS_STARTED 16 /* §4.7: DCMI_SYSTEM_START_FINISH */

/* §5.3 */
#define DCMI_EVENT_FILTER_FLAG_EVENT_ID (1UL << 0)
#define DCMI_EVENT_FILTER_FLAG_SERVERITY (1UL << 1)
#define DCMI_EVENT_FILTER_FLAG_NODE_TYPE (1UL << 2)

/* §5.4 */
enum dcmi_event_type { DCMI_DMS_FAULT_EVENT = 0 };

struct dcmi_dms_fault_event { /* size 352, align 8 */
  unsigned int event_id;
  unsigned short deviceid;
  unsigned char node_type;
  unsigned char node_id;
  unsigned char sub_node_type;
  unsigned char sub_node_id;
  unsigned char severity;
  unsigned char assertion;
  int event_serial_num;
  int notify_serial_num;
  unsigned long long alarm_raised_time;
  char event_name[DCMI_MAX_EVENT_NAME_LENGTH];
  char additional_info[DCMI_MAX_EVENT_DATA_LENGTH];
  unsigned char resv[DCMI_MAX_EVENT_RESV_LENGTH];
};

struct dcmi_event { /* size 360, align 8 */
  enum dcmi_event_type type;
  union {
    struct dcmi_dms_fault_event dms_event;
  } event_t;
};

struct dcmi_event_filter { /* size 48, align 8 */
  unsigned long long filter_flag;
  unsigned int event_id;
  unsigned char severity;
  unsigned char node_type;
  unsigned char resv[DCMI_MAX_EVENT_RESV_LENGTH];
};

/* §5.1: the effective 4-argument signature; the handler runs on a DCMI-owned thread. */
typedef void (*dcmi_fault_event_handler)(struct dcmi_event *fault_event);

/* §6 structures */
struct dcmi_chip_info { /* size 100, align 4 */
  unsigned char chip_type[MAX_CHIP_NAME_LEN];
  unsigned char chip_name[MAX_CHIP_NAME_LEN];
  unsigned char chip_ver[MAX_CHIP_NAME_LEN];
  unsigned int aicore_cnt;
};

struct dcmi_chip_info_v2 { /* size 132, align 4 */
  unsigned char chip_type[MAX_CHIP_NAME_LEN];
  unsigned char chip_name[MAX_CHIP_NAME_LEN];
  unsigned char chip_ver[MAX_CHIP_NAME_LEN];
  unsigned int aicore_cnt;
  unsigned char npu_name[MAX_CHIP_NAME_LEN];
};

struct dcmi_board_info { /* size 16, align 4 */
  unsigned int board_id;
  unsigned int pcb_id;
  unsigned int bom_id;
  unsigned int slot_id;
};

struct dcmi_pcie_info_all { /* size 64, align 4 */
  unsigned int venderid;
  unsigned int subvenderid;
  unsigned int deviceid;
  unsigned int subdeviceid;
  int domain;
  unsigned int bdf_busid;
  unsigned int bdf_deviceid;
  unsigned int bdf_funcid;
  unsigned char reserve[32];
};

struct dcmi_die_id { /* size 20, align 4 */
  unsigned int soc_die[DIE_ID_COUNT];
};

struct dcmi_hbm_info { /* size 32, align 8 */
  unsigned long long memory_size;
  unsigned int freq;
  unsigned long long memory_usage;
  int temp;
  unsigned int bandwith_util_rate;
};

enum dcmi_ip_addr_type { DCMI_IPADDR_TYPE_V4 = 0, DCMI_IPADDR_TYPE_V6 = 1, DCMI_IPADDR_TYPE_ANY = 2 };

struct dcmi_ip_addr { /* size 20, align 4 */
  union {
    unsigned char ip6[16];
    unsigned char ip4[4];
  } u_addr;
  enum dcmi_ip_addr_type ip_type;
};

enum dcmi_unit_type { NPU_TYPE = 0, MCU_TYPE = 1, CPU_TYPE = 2, INVALID_TYPE = 0xFF };

enum dcmi_rdfx_detect_result {
  DCMI_RDFX_DETECT_OK = 0,
  DCMI_RDFX_DETECT_SOCK_FAIL = 1,
  DCMI_RDFX_DETECT_RECV_TIMEOUT = 2,
  DCMI_RDFX_DETECT_UNREACH = 3,
  DCMI_RDFX_DETECT_TIME_EXCEEDED = 4,
  DCMI_RDFX_DETECT_FAULT = 5,
  DCMI_RDFX_DETECT_INIT = 6,
  DCMI_RDFX_DETECT_THREAD_ERR = 7,
  DCMI_RDFX_DETECT_IP_SET = 8,
  DCMI_RDFX_DETECT_MAX = 0xFF
};

enum dcmi_port_type { DCMI_VNIC_PORT = 0, DCMI_ROCE_PORT = 1, DCMI_INVALID_PORT };

enum dcmi_main_cmd {
  DCMI_MAIN_CMD_DVPP = 0,
  DCMI_MAIN_CMD_ISP,
  DCMI_MAIN_CMD_TS_GROUP_NUM,
  DCMI_MAIN_CMD_CAN,
  DCMI_MAIN_CMD_UART,
  DCMI_MAIN_CMD_UPGRADE = 5,
  DCMI_MAIN_CMD_HCCS = 16,
  DCMI_MAIN_CMD_TEMP = 50,
  DCMI_MAIN_CMD_SVM = 51,
  DCMI_MAIN_CMD_VDEV_MNG,
  DCMI_MAIN_CMD_SIO = 56,
  DCMI_MAIN_CMD_DEVICE_SHARE = 0x8001,
  DCMI_MAIN_CMD_MAX
};
/* §4.5: main_cmd 12 ("chip info", super-pod sub_cmd 1) is not in the enum; passed by numeric cast. */
#define DCMI_MAIN_CMD_CHIP_INFO 12

enum dcmi_reset_channel { OUTBAND_CHANNEL = 0, INBAND_CHANNEL };

enum dcmi_boot_status { DCMI_BOOT_STATUS_UNINIT = 0, DCMI_BOOT_STATUS_BIOS, DCMI_BOOT_STATUS_OS, DCMI_BOOT_STATUS_FINISH };

enum dcmi_die_type { NDIE, VDIE };

enum dcmi_multi_die_policy {
  DCMI_MULTI_DIE_UNION_POLICY = 0,
  DCMI_MULTI_DIE_INDEP_POLICY = 1,
  DCMI_MULTI_DIE_POLICY_MAX = 2
};

struct dcmi_proc_mem_info { /* size 16, align 8 */
  int proc_id;
  unsigned long proc_mem_usage;
};

struct dcmi_spod_info { /* size 48, align 4 */
  unsigned int sdid;
  unsigned int scale_type;
  unsigned int super_pod_id;
  unsigned int server_id;
  unsigned int chassis_id;
  unsigned int super_pod_type;
  unsigned int reserve[6];
};

struct dcmi_base_resource { /* size 64, align 8 */
  unsigned long long token;
  unsigned long long token_max;
  unsigned long long task_timeout;
  unsigned int vfg_id;
  unsigned char vip_mode;
  unsigned char reserved[DCMI_VDEV_FOR_RESERVE - 1];
};

struct dcmi_computing_resource { /* size 96, align 8 */
  float aic;
  float aiv;
  unsigned short dsa;
  unsigned short rtsq;
  unsigned short acsq;
  unsigned short cdqm;
  unsigned short c_core;
  unsigned short ffts;
  unsigned short sdma;
  unsigned short pcie_dma;
  unsigned long long memory_size;
  unsigned int event_id;
  unsigned int notify_id;
  unsigned int stream_id;
  unsigned int model_id;
  unsigned short topic_schedule_aicpu;
  unsigned short host_ctrl_cpu;
  unsigned short host_aicpu;
  unsigned short device_aicpu;
  unsigned short topic_ctrl_cpu_slot;
  unsigned int vdev_aicore_utilization;
  unsigned long long vdev_memory_total;
  unsigned long long vdev_memory_free;
  unsigned char reserved[DCMI_VDEV_FOR_RESERVE - DCMI_VDEV_SIZE];
};

struct dcmi_media_resource { /* size 56, align 4 */
  float jpegd;
  float jpege;
  float vpc;
  float vdec;
  float pngd;
  float venc;
  unsigned char reserved[DCMI_VDEV_FOR_RESERVE];
};

struct dcmi_create_vdev_out { /* size 52, align 4 */
  unsigned int vdev_id;
  unsigned int pcie_bus;
  unsigned int pcie_device;
  unsigned int pcie_func;
  unsigned int vfg_id;
  unsigned char reserved[DCMI_VDEV_FOR_RESERVE];
};

struct dcmi_create_vdev_res_stru { /* size 104, align 4 */
  unsigned int vdev_id;
  unsigned int vfg_id;
  char template_name[TEMPLATE_NAME_LEN];
  unsigned char reserved[64];
};

struct dcmi_vdev_query_info { /* size 256, align 8 */
  char name[DCMI_VDEV_RES_NAME_LEN];
  unsigned int status;
  unsigned int is_container_used;
  unsigned int vfid;
  unsigned int vfg_id;
  unsigned long long container_id;
  struct dcmi_base_resource base;
  struct dcmi_computing_resource computing;
  struct dcmi_media_resource media;
};

struct dcmi_vdev_query_stru { /* size 264, align 8 */
  unsigned int vdev_id;
  struct dcmi_vdev_query_info query_info;
};

struct dcmi_soc_free_resource { /* size 224, align 8 */
  unsigned int vfg_num;
  unsigned int vfg_bitmap;
  struct dcmi_base_resource base;
  struct dcmi_computing_resource computing;
  struct dcmi_media_resource media;
};

struct dcmi_soc_total_resource { /* size 360, align 8 */
  unsigned int vdev_num;
  unsigned int vdev_id[DCMI_SOC_SPLIT_MAX];
  unsigned int vfg_num;
  unsigned int vfg_bitmap;
  struct dcmi_base_resource base;
  struct dcmi_computing_resource computing;
  struct dcmi_media_resource media;
};


/* Compile-time check of every size and offset dcmi-abi.md §5.4 and §6 state (LP64). */
#ifdef __cplusplus
#include <cstddef>
#define DCMI_ABI_ASSERT(cond, msg) static_assert(cond, msg)
#else
#include <stddef.h>
#define DCMI_ABI_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
#define DCMI_SZ(T, n) DCMI_ABI_ASSERT(sizeof(struct T) == (n), "sizeof " #T " differs from dcmi-abi.md");
#define DCMI_OFF(T, f, n) DCMI_ABI_ASSERT(offsetof(struct T, f) == (n), "offsetof " #T "." #f " differs from dcmi-abi.md");
DCMI_SZ(dcmi_dms_fault_event, 352)
DCMI_OFF(dcmi_dms_fault_event, deviceid, 4)
DCMI_OFF(dcmi_dms_fault_event, node_type, 6)
DCMI_OFF(dcmi_dms_fault_event, sub_node_type, 8)
DCMI_OFF(dcmi_dms_fault_event, severity, 10)
DCMI_OFF(dcmi_dms_fault_event, assertion, 11)
DCMI_OFF(dcmi_dms_fault_event, event_serial_num, 12)
DCMI_OFF(dcmi_dms_fault_event, notify_serial_num, 16)
DCMI_OFF(dcmi_dms_fault_event, alarm_raised_time, 24)
DCMI_OFF(dcmi_dms_fault_event, event_name, 32)
DCMI_OFF(dcmi_dms_fault_event, additional_info, 288)
DCMI_OFF(dcmi_dms_fault_event, resv, 320)
DCMI_SZ(dcmi_event, 360)
DCMI_OFF(dcmi_event, event_t, 8)
DCMI_SZ(dcmi_event_filter, 48)
DCMI_OFF(dcmi_event_filter, event_id, 8)
DCMI_OFF(dcmi_event_filter, severity, 12)
DCMI_OFF(dcmi_event_filter, node_type, 13)
DCMI_OFF(dcmi_event_filter, resv, 14)
DCMI_SZ(dcmi_chip_info, 100)
DCMI_OFF(dcmi_chip_info, aicore_cnt, 96)
DCMI_SZ(dcmi_chip_info_v2, 132)
DCMI_OFF(dcmi_chip_info_v2, aicore_cnt, 96)
DCMI_OFF(dcmi_chip_info_v2, npu_name, 100)
DCMI_SZ(dcmi_board_info, 16)
DCMI_SZ(dcmi_pcie_info_all, 64)
DCMI_OFF(dcmi_pcie_info_all, domain, 16)
DCMI_SZ(dcmi_die_id, 20)
DCMI_SZ(dcmi_hbm_info, 32)
DCMI_OFF(dcmi_hbm_info, freq, 8)
DCMI_OFF(dcmi_hbm_info, memory_usage, 16)
DCMI_OFF(dcmi_hbm_info, temp, 24)
DCMI_OFF(dcmi_hbm_info, bandwith_util_rate, 28)
DCMI_SZ(dcmi_ip_addr, 20)
DCMI_OFF(dcmi_ip_addr, ip_type, 16)
DCMI_SZ(dcmi_proc_mem_info, 16)
DCMI_OFF(dcmi_proc_mem_info, proc_mem_usage, 8)
DCMI_SZ(dcmi_spod_info, 48)
DCMI_SZ(dcmi_base_resource, 64)
DCMI_SZ(dcmi_computing_resource, 96)
DCMI_OFF(dcmi_computing_resource, memory_size, 24)
DCMI_OFF(dcmi_computing_resource, vdev_aicore_utilization, 60)
DCMI_OFF(dcmi_computing_resource, vdev_memory_total, 64)
DCMI_SZ(dcmi_media_resource, 56)
DCMI_SZ(dcmi_create_vdev_out, 52)
DCMI_SZ(dcmi_create_vdev_res_stru, 104)
DCMI_SZ(dcmi_vdev_query_info, 256)
DCMI_OFF(dcmi_vdev_query_info, status, 16)
DCMI_OFF(dcmi_vdev_query_info, container_id, 32)
DCMI_OFF(dcmi_vdev_query_info, base, 40)
DCMI_OFF(dcmi_vdev_query_info, computing, 104)
DCMI_OFF(dcmi_vdev_query_info, media, 200)
DCMI_SZ(dcmi_vdev_query_stru, 264)
DCMI_OFF(dcmi_vdev_query_stru, query_info, 8)
DCMI_SZ(dcmi_soc_free_resource, 224)
DCMI_SZ(dcmi_soc_total_resource, 360)
DCMI_OFF(dcmi_soc_total_resource, vdev_id, 4)
DCMI_OFF(dcmi_soc_total_resource, vfg_num, 132)
DCMI_OFF(dcmi_soc_total_resource, base, 144)
DCMI_OFF(dcmi_soc_total_resource, computing, 208)
DCMI_OFF(dcmi_soc_total_resource, media, 304)
#undef DCMI_SZ
#undef DCMI_OFF

/*
 * Prototypes (§4, §5.1). The X-macro lists every function the binding resolves, in the order of the
 * §3 inventory, with its return type and parameter list. Every row is bound (rows 20, 21 for dynamic vNPU,
 * issue 17 item 3; row 30, the die ID, for soft share, issue 17 item 2).
 * DCMI_FN(name, params)
 */
#define DCMI_BOUND_FUNCTIONS(DCMI_FN)                                                                              \
  DCMI_FN(dcmi_init, (void))                                                                                       \
  DCMI_FN(dcmi_get_card_list, (int *card_num, int *card_list, int list_len))                                       \
  DCMI_FN(dcmi_get_device_num_in_card, (int card_id, int *device_num))                                             \
  DCMI_FN(dcmi_get_device_logic_id, (int *device_logic_id, int card_id, int device_id))                            \
  DCMI_FN(dcmi_get_device_phyid_from_logicid, (unsigned int logicid, unsigned int *phyid))                         \
  DCMI_FN(dcmi_get_device_logicid_from_phyid, (unsigned int phyid, unsigned int *logicid))                         \
  DCMI_FN(dcmi_get_card_id_device_id_from_logicid, (int *card_id, int *device_id, unsigned int device_logic_id))   \
  DCMI_FN(dcmi_get_device_chip_info_v2, (int card_id, int device_id, struct dcmi_chip_info_v2 *chip_info))         \
  DCMI_FN(dcmi_get_device_chip_info, (int card_id, int device_id, struct dcmi_chip_info *chip_info))               \
  DCMI_FN(dcmi_get_device_board_info, (int card_id, int device_id, struct dcmi_board_info *board_info))            \
  DCMI_FN(dcmi_get_mainboard_id, (int card_id, int device_id, unsigned int *mainboard_id))                         \
  DCMI_FN(dcmi_get_dcmi_version, (char *dcmi_ver, int buf_size))                                                   \
  DCMI_FN(dcmi_get_product_type, (int card_id, int device_id, char *product_type_str, int buf_size))               \
  DCMI_FN(dcmi_get_device_health, (int card_id, int device_id, unsigned int *health))                              \
  DCMI_FN(dcmi_get_device_errorcode_v2,                                                                            \
          (int card_id, int device_id, int *error_count, unsigned int *error_code_list, unsigned int list_len))    \
  DCMI_FN(dcmi_subscribe_fault_event,                                                                              \
          (int card_id, int device_id, struct dcmi_event_filter filter, dcmi_fault_event_handler handler))          \
  DCMI_FN(dcmi_get_device_ip, (int card_id, int device_id, enum dcmi_port_type input_type, int port_id,           \
                               struct dcmi_ip_addr *ip, struct dcmi_ip_addr *mask))                                \
  DCMI_FN(dcmi_get_device_type, (int card_id, int device_id, enum dcmi_unit_type *device_type))                    \
  DCMI_FN(dcmi_get_device_info, (int card_id, int device_id, enum dcmi_main_cmd main_cmd, unsigned int sub_cmd,    \
                                 void *buf, unsigned int *size))                                                   \
  DCMI_FN(dcmi_create_vdevice, (int card_id, int device_id, struct dcmi_create_vdev_res_stru *vdev,               \
                                struct dcmi_create_vdev_out *out))                                                 \
  DCMI_FN(dcmi_set_destroy_vdevice, (int card_id, int device_id, unsigned int vdevid))                             \
  DCMI_FN(dcmi_get_npu_work_mode, (int card_id, unsigned char *work_mode))                                         \
  DCMI_FN(dcmi_set_device_reset, (int card_id, int device_id, enum dcmi_reset_channel channel_type))               \
  DCMI_FN(dcmi_get_device_outband_channel_state, (int card_id, int device_id, int *channel_state))                 \
  DCMI_FN(dcmi_pre_reset_soc, (int card_id, int device_id))                                                        \
  DCMI_FN(dcmi_rescan_soc, (int card_id, int device_id))                                                           \
  DCMI_FN(dcmi_get_netdev_brother_device, (int card_id, int device_id, int *brother_card_id))                      \
  DCMI_FN(dcmi_get_device_boot_status, (int card_id, int device_id, enum dcmi_boot_status *boot_status))           \
  DCMI_FN(dcmi_get_device_resource_info,                                                                           \
          (int card_id, int device_id, struct dcmi_proc_mem_info *proc_info, int *proc_num))                       \
  DCMI_FN(dcmi_get_device_die_v2, (int card_id, int device_id, enum dcmi_die_type input_type, struct dcmi_die_id *die_id)) \
  DCMI_FN(dcmi_get_device_pcie_info_v2, (int card_id, int device_id, struct dcmi_pcie_info_all *pcie_info))        \
  DCMI_FN(dcmi_get_affinity_cpu_info_by_device_id, (int card_id, int device_id, char *affinity_cpu, int *length))  \
  DCMI_FN(dcmi_get_device_hbm_info, (int card_id, int device_id, struct dcmi_hbm_info *hbm_info))                  \
  DCMI_FN(dcmi_get_device_utilization_rate,                                                                        \
          (int card_id, int device_id, int input_type, unsigned int *utilization_rate))                            \
  DCMI_FN(dcmi_set_multi_die_policy, (enum dcmi_multi_die_policy policy))                                          \
  DCMI_FN(dcmi_get_device_network_health, (int card_id, int device_id, enum dcmi_rdfx_detect_result *result))

/* Rows of §3 exported by the mock but not bound by the addon: none left. */
#define DCMI_UNBOUND_FUNCTIONS(DCMI_FN)

#define DCMI_DECLARE_PROTOTYPE(name, params) int name params;
DCMI_BOUND_FUNCTIONS(DCMI_DECLARE_PROTOTYPE)
DCMI_UNBOUND_FUNCTIONS(DCMI_DECLARE_PROTOTYPE)
#undef DCMI_DECLARE_PROTOTYPE

#ifdef __cplusplus
}
#endif

#endif
