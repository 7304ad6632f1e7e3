/*
 * The mock's control server: a Unix socket (ASCEND_MOCK_CONTROL, or the path given to mock_dcmi_configure) on
 * which tests change the hardware model and fire fault events while the library runs. Protocol:
 * scenarios/README.md "Control socket"; contract: design/architecture.md §5.
 * Every symbol is hidden so that the mock library exports only the DCMI interface.
 */
#ifndef ASCEND_NPU_AGENT_MOCK_CONTROL_H
#define ASCEND_NPU_AGENT_MOCK_CONTROL_H

#include "mock_fields.h"

struct mock_model;
struct mock_server;

/* Binds path (replacing a stale socket of an earlier run, never another file), listens with mode 0600 and starts
 * the control thread over model m. NULL on failure, with the reason in msg (MSG_LEN bytes). */
MOCK_API struct mock_server *control_start(struct mock_model *m, const char *path, char *msg);
/* Stops and joins the control thread and every burst thread, closes every connection and removes the socket if it
 * is still the one this server bound. Never call it on a thread of the server (model_on_own_thread). */
MOCK_API void control_stop(struct mock_server *srv);

#endif
