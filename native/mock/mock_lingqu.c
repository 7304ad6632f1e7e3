/*
 * Mock liblingqu-dcmi.so: the 910A3 switch library's C ABI (native/dcmi/lingqu_abi.h, dcmi-abi.md §8) over the
 * switch part of the mock libdcmi.so's model (mock_switch.h), so one scenario and one control socket drive both.
 * The model's bridge functions are looked up in the process (the agent loads libdcmi.so with RTLD_GLOBAL); without
 * the mock libdcmi.so loaded every call fails with LQ_ERR_NO_MODEL.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

#pragma GCC visibility push(default)
#include "lingqu_abi.h"
#pragma GCC visibility pop

#define LQ_ERR_NO_MODEL (-8005)

typedef int (*init_fn)(void);
typedef int (*subscribe_fn)(LqDcmiFaultEventCallback);
typedef int (*query_fn)(unsigned int, unsigned int *, struct LqDcmiEvent *);

static void *bridge(const char *name) { return dlsym(RTLD_DEFAULT, name); }

int lq_dcmi_init(void) {
  init_fn f = (init_fn)bridge("mock_lq_init");
  return f ? f() : LQ_ERR_NO_MODEL;
}

int lq_dcmi_subscribe_fault_event(struct lq_dcmi_event_filter filter, LqDcmiFaultEventCallback handler) {
  (void)filter; /* the agent subscribes with a zero filter (dcmi-abi.md §8): every switch fault */
  subscribe_fn f = (subscribe_fn)bridge("mock_lq_subscribe");
  return f ? f(handler) : LQ_ERR_NO_MODEL;
}

int lq_dcmi_get_fault_info(unsigned int listLen, unsigned int *eventListLen, struct LqDcmiEvent *eventList) {
  query_fn f = (query_fn)bridge("mock_lq_get_fault_info");
  return f ? f(listLen, eventListLen, eventList) : LQ_ERR_NO_MODEL;
}
