/*
 * The 910A3 switch (LingQu bus) part of the hardware model (scenarios/README.md "Switch"): the switch chips of the
 * scenario, their current faults, the switch fault subscription. The mock libdcmi.so keeps it (one model, one
 * control socket) and exports three bridge functions, mock_lq_*, that the mock liblingqu-dcmi.so calls; the agent
 * loads libdcmi.so with RTLD_GLOBAL (dcmi-abi.md §1.3), so the switch mock finds them with dlsym(RTLD_DEFAULT).
 */
#ifndef ASCEND_NPU_AGENT_MOCK_SWITCH_H
#define ASCEND_NPU_AGENT_MOCK_SWITCH_H

#include "lingqu_abi.h"
#include "mock_fields.h"
#include "mock_json.h"

#define MAX_SWITCH_CHIPS 16
#define MAX_SWITCH_FAULTS 256

struct switch_model {
  int present;      /* the scenario has a "switch" object */
  int chips;        /* switch chips (ids 0..chips-1) */
  int init_ok;      /* lq_dcmi_init answers 0 */
  int subscribe_ok; /* lq_dcmi_subscribe_fault_event answers 0 */
  int nfaults;
  struct LqDcmiEvent faults[MAX_SWITCH_FAULTS]; /* current faults (assertion occur or once) */
};

struct switch_sub {
  int active;
  LqDcmiFaultEventCallback handler;
};

/* Reads the scenario's optional "switch" object into sw. -1 with msg on a bad value. */
MOCK_API int switch_load(char *msg, const mj_value *root, struct switch_model *sw);
/* Reads one fault event (control op fields or a scenario "faults" entry) into ev. -1 with msg on a bad value. */
MOCK_API int switch_event_of(char *msg, const mj_value *obj, const char *base, const struct switch_model *sw,
                             struct LqDcmiEvent *ev);
/* Applies an event to the current faults: a recovery removes the faults it recovers, any other assertion adds it
 * (a repeat of a fault present replaces it). -1 when the list is full. */
MOCK_API int switch_apply(struct switch_model *sw, const struct LqDcmiEvent *ev);
/* {"present":..,"chips":..,"subscribed":..,"faults":[...]} of the switch model. */
MOCK_API void switch_put_state(mj_buf *b, const struct switch_model *sw, int subscribed);
/* The assembled code of an event, spec L.9 (buffer of at least 64 bytes). */
MOCK_API const char *switch_code(char *buf, size_t n, const struct LqDcmiEvent *ev);

#endif
