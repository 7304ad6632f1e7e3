/*
 * What the v1 exports (mock_abi.c) share with the dcmiv2_* exports (mock_abi_v2.c): the lifecycle and the chip-level
 * answers, so that both API generations report the same scenario state. Hidden, like every cross-file symbol.
 */
#ifndef ASCEND_NPU_AGENT_MOCK_ABI_V2_H
#define ASCEND_NPU_AGENT_MOCK_ABI_V2_H

#include <stddef.h>

#include "dcmi_abi.h"
#include "mock_fields.h"
#include "mock_model.h"

/* dcmi_init / dcmiv2_init: loads the scenario and starts the control server when its apiVersion is api_version;
 * -8255 (and nothing loaded) for a scenario of the other generation, -8005 for a bad scenario. */
MOCK_API int mock_init_api(enum fn_index fn, int api_version);

/* Chip-level answers (mu held, the chip found and not dropped). */
MOCK_API void put_chars(unsigned char *dst, size_t n, const char *src);
MOCK_API void chip_info_v2(const struct scenario *sc, struct dcmi_chip_info_v2 *chip_info);
MOCK_API int chip_device_info(struct scenario *sc, struct chip *c, int main_cmd, unsigned sub_cmd, void *buf,
                              unsigned *size);
MOCK_API int chip_ip(const struct chip *c, int input_type, struct dcmi_ip_addr *ip, struct dcmi_ip_addr *mask);
MOCK_API void chip_procs(const struct chip *c, struct dcmi_proc_mem_info *proc_info, int *proc_num);
MOCK_API void chip_die(const struct chip *c, int input_type, struct dcmi_die_id *die_id);
MOCK_API void chip_pcie(const struct chip *c, struct dcmi_pcie_info_all *pcie_info);
MOCK_API void chip_hbm(const struct scenario *sc, struct dcmi_hbm_info *hbm_info);

#endif
