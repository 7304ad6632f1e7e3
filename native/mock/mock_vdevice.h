/*
 * vNPUs of the mock (mock_vdevice.c): scenario templates, vNPU create/destroy/query with AI-core accounting, and
 * the control ops `vdevs`, `createVdev`, `destroyVdev`, `vdevResult` (scenarios/README.md "vNPU").
 * All functions run with the model lock held. Every symbol is hidden.
 */
#ifndef ASCEND_NPU_AGENT_MOCK_VDEVICE_H
#define ASCEND_NPU_AGENT_MOCK_VDEVICE_H

#include "dcmi_abi.h"
#include "mock_fields.h"
#include "mock_json.h"

struct scenario;
struct chip;

/* vdev_control's answer for an op that is not a vNPU op. */
#define VDEV_NOT_MINE (-2)

/* Scenario field vnpuTemplates (absent = no templates: every create fails with -8255). 0 ok, -1 msg set. */
MOCK_API int vdev_load_templates(char *msg, const mj_value *root, struct scenario *sc);
/* AI cores of the chip not taken by its vNPUs. */
MOCK_API unsigned vdev_free_aicore(const struct scenario *sc, const struct chip *c);
/* dcmi_get_device_info main 52, sub 0 (one vNPU), 1 (totals and vNPU ids), 2 (free), 5 (activity). */
MOCK_API int vdev_device_info(const struct scenario *sc, const struct chip *c, unsigned sub_cmd, void *buf,
                              unsigned *size);
/* dcmi_create_vdevice / dcmi_set_destroy_vdevice on one chip: DCMI_OK or an error code. */
MOCK_API int vdev_create(struct scenario *sc, struct chip *c, const struct dcmi_create_vdev_res_stru *in,
                         struct dcmi_create_vdev_out *out);
MOCK_API int vdev_destroy(struct chip *c, unsigned vdev_id);
/* `"aicoreFree":N,"vdevs":[...]` of one chip, for the state reply. */
MOCK_API void vdev_put_state(mj_buf *b, const struct scenario *sc, const struct chip *c);
/* A control op: VDEV_NOT_MINE, 0 (reply appended to out) or -1 (msg set). */
MOCK_API int vdev_control(struct scenario *sc, const char *op, const mj_value *req, mj_buf *out, char *msg);

#endif
