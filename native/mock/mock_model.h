/*
 * The hardware model of the mock libdcmi.so: the scenario read from ASCEND_MOCK_SCENARIO (schema:
 * scenarios/README.md), the state of every chip, the fault subscription and the call counters, gathered in one
 * object with its locks. The exported DCMI functions (mock_abi.c) answer from it; the control server
 * (mock_control.c) changes it for tests and fires fault events from it.
 *
 * Locks: life_mu serialises load and tear-down (mock_abi.c); mu guards sc, sub and the chips; cb_mu lets one user
 * callback run at a time. A fault callback never runs while mu is held. Counters are atomics.
 * Every symbol is hidden so that the mock library exports only the DCMI interface.
 */
#ifndef ASCEND_NPU_AGENT_MOCK_MODEL_H
#define ASCEND_NPU_AGENT_MOCK_MODEL_H

#include <pthread.h>

#include "dcmi_abi.h"
#include "dcmi_abi_v2.h"
#include "mock_fields.h"
#include "mock_ports.h"
#include "mock_switch.h"

#define MAX_CARDS DCMI_CARD_LIST_LEN
#define MAX_CHIPS_PER_CARD 4
#define MAX_CHIPS (MAX_CARDS * MAX_CHIPS_PER_CARD)
#define MAX_ID 255

enum reset_mode { RESET_OK, RESET_FAIL, RESET_HANG };

/* vNPU (dynamic virtual devices, mock_vdevice.c): templates from the scenario, vNPUs per chip. */
#define MOCK_MAX_TEMPLATES 16
#define MOCK_MAX_VDEVS DCMI_SOC_SPLIT_MAX /* dcmi-abi.md §4.5: vdev_num <= 32 */
#define MOCK_MAX_URMA 8                     /* scenario "urma": URMA devices per chip */
#define MOCK_MAX_URMA_EIDS 32               /* EIDs per URMA device (the v2 header's limit) */
#define MOCK_VDEV_ID_MIN 100              /* dcmi-abi.md §6: vNPU ids are 100..1123 */
#define MOCK_VDEV_ID_END 1124

struct vnpu_template {
  char name[DCMI_VDEV_RES_NAME_LEN];
  unsigned aicore, aicpu;
  unsigned long long memory_mib;
};

struct vdev {
  unsigned id, vfg_id;
  int tmpl; /* index into scenario.templates */
};
/* Names of the scenario and control values, NULL-terminated, indexed by value. */
MOCK_API extern const char *const reset_names[]; /* enum reset_mode */
MOCK_API extern const char *const link_names[];  /* link_up: 0 DOWN, 1 UP */

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
  double call_seconds; /* how long dcmi_set_device_reset blocks (the reset takes effect when it is called) */
  unsigned long long resets, reset_attempts;
  int hung;
  unsigned long long boot_until_ns; /* CLOCK_BOOTTIME deadline (boot_ns, mock_state.h); 0 = not booting */
  unsigned long long tx, rx, growth;
  int has_die; /* scenario "dieId": dcmi_get_device_die_v2 answers it (soft share, L.7) */
  unsigned die[DIE_ID_COUNT];
  struct vdev vdevs[MOCK_MAX_VDEVS]; /* vNPUs created on the chip (mock_vdevice.c) */
  int nvdevs;
  int vdev_fail; /* 1: every dcmi_create_vdevice fails with -8005 (control op vdevResult) */
  struct chip_ports ports; /* A5 UB / UBoE ports (mock_ports.c) */
  int nurma;               /* scenario "urma": the chip's URMA devices (dcmiv2_get_urma_device_cnt) */
  int neids[MOCK_MAX_URMA];
  unsigned char eids[MOCK_MAX_URMA][MOCK_MAX_URMA_EIDS][16]; /* raw EIDs, network order */
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
  unsigned chassis_id, super_pod_type; /* scenario superPod.chassisId / superPodType (A5: rack id, super-pod type) */
  int api_version;                     /* scenario apiVersion: 1 dcmi_*, 2 dcmiv2_* (Ascend910A5) */
  int has_elabel;                      /* scenario elabel: dcmiv2_get_device_elabel_info */
  char elabel[5][DCMI_ELABEL_LEN];     /* product name, model, manufacturer, date, serial-number prefix */
  struct vnpu_template templates[MOCK_MAX_TEMPLATES]; /* scenario vnpuTemplates */
  int ntemplates;
  int ncards, nchips;
  struct card cards[MAX_CARDS];
  struct chip chips[MAX_CHIPS];
  int by_logic[MAX_ID + 1], by_phy[MAX_ID + 1]; /* chip index or -1 */
  struct switch_model sw;                          /* 910A3 switch chips (mock_switch.h) */
};

struct subscription {
  int active;
  dcmi_fault_event_handler handler;
  int card, dev; /* -1,-1 = all chips */
  unsigned long long flags;
  unsigned event_id;
  unsigned char severity, node_type;
};

/* One value per exported DCMI function, for the call counters. */
enum fn_index {
#define MOCK_FN_ENUM(name, params) FN_##name,
  DCMI_BOUND_FUNCTIONS(MOCK_FN_ENUM) DCMI_UNBOUND_FUNCTIONS(MOCK_FN_ENUM)
      FN_V2_FIRST_MARK, /* not a function: the dcmiv2_* ones (mock_abi_v2.c) follow */
  DCMI_V2_FUNCTIONS(MOCK_FN_ENUM)
#undef MOCK_FN_ENUM
      FN_COUNT
};
MOCK_API extern const char *const fn_names[FN_COUNT];

struct mock_server; /* mock_control.h */

struct mock_model {
  pthread_mutex_t life_mu; /* serialises load and tear-down */
  pthread_mutex_t mu;      /* guards sc (and its chips) and sub */
  pthread_mutex_t cb_mu;   /* one user callback at a time */
  struct scenario *sc;     /* non-NULL = loaded */
  struct subscription sub;
  unsigned sub_gen;                           /* atomic; bumped on every subscription change */
  struct mock_server *control;                /* the running control server; life_mu */
  char *scenario_override, *control_override; /* mock_dcmi_configure paths; life_mu */
  unsigned long long calls[FN_COUNT];         /* atomic, by enum fn_index */
  unsigned long long subscribe_calls;         /* atomic */
  unsigned long long events_fired;            /* atomic */
  int event_serial;                           /* atomic; last serial handed out by model_next_serial */
  /* the switch library (mock_switch.c), all under mu but the atomics */
  int lq_inited;                      /* lq_dcmi_init succeeded */
  struct switch_sub lq_sub;           /* switch fault subscription */
  unsigned long long lq_calls[3];     /* atomic: init, subscribe, get_fault_info */
  unsigned long long lq_events_fired; /* atomic */
  unsigned lq_serial;                 /* atomic */
  /* the chip state file (mock_state.h), under mu: its path while loaded with ASCEND_MOCK_STATE set, else NULL */
  char *state_path;
  int state_write_failed; /* the last write failed (reported once until a write succeeds) */
};

/* The one model of the library. */
MOCK_API struct mock_model *mock_model(void);

MOCK_API unsigned long long mono_ns(void);

/* ---------------------------------------------------------------------------------------- lifecycle */
/* All with life_mu held. */

/* Reads the scenario (override or ASCEND_MOCK_SCENARIO) and installs it. 1 = was already loaded, 0 = loaded now,
 * -1 = failed after printing the one-line "mock_dcmi: <file>: <reason>" diagnostic. */
MOCK_API int model_load(struct mock_model *m);
/* Forgets the scenario installed by model_load (after a later start-up step failed). */
MOCK_API void model_unload(struct mock_model *m);
/* Forgets the scenario, the subscription and every counter. No mock thread may be running. */
MOCK_API void model_reset(struct mock_model *m);
/* The control socket path: override or ASCEND_MOCK_CONTROL. */
MOCK_API const char *model_control_path(struct mock_model *m);
/* Replaces the path overrides (NULL = use the environment variable). Takes life_mu itself; -1 = out of memory. */
MOCK_API int model_set_paths(struct mock_model *m, const char *scenario, const char *control);

/* Writes "mock_dcmi: <file>: <msg>" as one line to stderr. */
MOCK_API void report_load_error(const char *file, const char *msg);

/* Marks the calling thread as one of the mock's own (control and burst threads). */
MOCK_API void model_mark_own_thread(void);
MOCK_API int model_on_own_thread(void);

/* --------------------------------------------------------------------------------------- call entry */

/* Counts a call of fn, locks mu and sets *m; DCMI_OK if a scenario is loaded, else DCMI_ERR_INTERNAL. The lock is
 * held on return whatever the result; model_leave releases it and returns rc. */
MOCK_API int model_enter(enum fn_index fn, struct mock_model **m);
MOCK_API int model_leave(struct mock_model *m, int rc);
/* model_enter, then check the pointers, the ids and card drop; *out = the chip. */
MOCK_API int model_enter_chip(enum fn_index fn, int card_id, int device_id, int pointers_ok, struct mock_model **m,
                              struct chip **out);

/* ------------------------------------------------------------------------------------ chips (mu held) */

MOCK_API struct card *find_card(struct scenario *sc, int card_id);
MOCK_API struct chip *find_chip(struct scenario *sc, int card_id, int device_id);
MOCK_API struct chip *chip_by_logic(struct scenario *sc, long long logic);
MOCK_API struct chip *chip_by_phy(struct scenario *sc, long long phy);

/* DCMI_BOOT_STATUS_OS while hung or booting after a reset, else DCMI_BOOT_STATUS_STARTED. */
MOCK_API int chip_boot_status(const struct chip *c);
/* assertion: 0 recover (remove), 1 occur (add), 2 once (no change). Returns -1 when the list is full. */
MOCK_API int chip_apply_code(struct chip *c, unsigned code, int assertion);
/* A reset as its resetResult says: DCMI_ERR_RESET_FAILED, or DCMI_OK with the chip clean (and maybe booting). */
MOCK_API int chip_reset(struct chip *c);
/* dcmi_set_device_reset's body, entered with mu held: chip_reset, the state saved, mu released (model_leave), then
 * the call blocks for the chip's callSeconds (the reset is already under way, as in hardware). Returns the code. */
MOCK_API int chip_reset_call(struct mock_model *m, struct chip *c);
/* Records a change of chip state (mu held): writes the state file when there is one (mock_state.h). */
MOCK_API void model_changed(struct mock_model *m);
/* One read of the RoCE counters: they grow by the chip's growth while the link is UP. */
MOCK_API void chip_roce_query(struct chip *c);

/* ----------------------------------------------------------------------------------------- fault events */

/* Replaces the subscription (mu held). */
MOCK_API void model_subscribe(struct mock_model *m, int card_id, int device_id, const struct dcmi_event_filter *filter,
                              dcmi_fault_event_handler handler);

/* What an event needs, captured under mu. */
struct event_spec {
  int card, dev;
  unsigned logic, event_id;
  unsigned char severity, assertion;
};

MOCK_API int sub_matches(const struct subscription *s, const struct event_spec *e);
MOCK_API void event_template(struct dcmi_event *ev, const struct event_spec *e);
/* Next event serial number (1, 2, ...; reset by model_reset). */
MOCK_API int model_next_serial(struct mock_model *m);
/* Calls h with a copy of tmpl stamped with serial, the time and "mono=<ns>". On a mock thread, mu not held. */
MOCK_API void model_deliver(struct mock_model *m, dcmi_fault_event_handler h, const struct dcmi_event *tmpl,
                            int serial);

/* Calls the switch subscriber h with a copy of tmpl (serials stamped). On a mock thread, mu not held. */
MOCK_API void switch_deliver(struct mock_model *m, LqDcmiFaultEventCallback h, const struct LqDcmiEvent *tmpl);

#endif
