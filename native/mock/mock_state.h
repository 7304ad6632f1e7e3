/*
 * Chip state that outlives the process (issue [T] item 4; scenarios/README.md "State file"): when
 * ASCEND_MOCK_STATE names a file, the mock writes every chip's changeable state there on every change (a temporary
 * file renamed over it, so a reader or a killed writer never leaves half a file) and, at the next dcmi_init of any
 * process, reads it instead of the scenario's initial chip values. Real chips keep their faults, reset count and a
 * boot in progress across an agent restart; with this file the mock's chips do too.
 *
 * A boot in progress is kept as a deadline on CLOCK_BOOTTIME plus the kernel's boot id: that clock is one for the
 * whole system (so a restarted process reads the same time), never steps with the wall clock (an NTP correction or a
 * test's clock step cannot lengthen or shorten a boot) and counts a suspend as time passed; after a reboot (another
 * boot id) every boot in progress counts as finished.
 * Every symbol is hidden so that the mock library exports only the DCMI interface.
 */
#ifndef ASCEND_NPU_AGENT_MOCK_STATE_H
#define ASCEND_NPU_AGENT_MOCK_STATE_H

#include "mock_fields.h"

struct scenario;
struct mock_model;

/* The environment variable naming the state file. */
#define MOCK_STATE_ENV "ASCEND_MOCK_STATE"

/* CLOCK_BOOTTIME in ns: the clock of boot deadlines (chip.boot_until_ns). */
MOCK_API unsigned long long boot_ns(void);

/* Applies the state file at path to the freshly read scenario sc. 0 = applied, 1 = no such file (sc unchanged),
 * -1 = unreadable or invalid (msg: "<json path>: <reason>", sc partly changed: discard it). */
MOCK_API int state_restore(struct scenario *sc, const char *path, char *msg);

/* Writes the state file of m (m->state_path; nothing when NULL), mu held. The first failure after a success (or
 * after the load) is reported as one line on stderr; every later change tries again. */
MOCK_API void state_save(struct mock_model *m);

#endif
