/*
 * A5 (Ascend950) port state of the mock (mock_ports.c): per chip the UB ports (hyper plane) and the UBoE bonding
 * ports (parameter plane), each with its UDie id, port id, speed and link status, as the port table of the real
 * `hccn_tool -g -dev_info -i <logicId>` lists them (spec device-plugin.md D.5, D.8; scenarios/README.md "A5 ports").
 * The scenario chip field `ports` sets them; A5 chips without it get the default set; the control ops `port` (set a
 * port UP/DOWN) and `ports` (read a chip's ports, used by the mock hccn_tool) change and read them.
 * All functions run with the model lock held. Every symbol is hidden.
 */
#ifndef ASCEND_NPU_AGENT_MOCK_PORTS_H
#define ASCEND_NPU_AGENT_MOCK_PORTS_H

#include "mock_fields.h"
#include "mock_json.h"

struct scenario;
struct chip;

#define MOCK_MAX_PORTS 16
#define MOCK_MAX_UDIE 7
#define MOCK_MAX_PORT_ID 63

enum port_type { PORT_UB, PORT_UBOE };

struct mock_port {
  unsigned udie, port, speed_gbps;
  int type; /* enum port_type */
  int up;
};

/* The ports of one chip (a member of struct chip). */
struct chip_ports {
  int n;
  struct mock_port p[MOCK_MAX_PORTS];
};

/* ports_control's answer for an op that is not a port op. */
#define PORTS_NOT_MINE (-2)

/* Chip field "ports" of chip object o at path (absent: the default set on Ascend950 chips, none otherwise).
 * 0 ok, -1 msg set. */
MOCK_API int ports_load(char *msg, const struct scenario *sc, struct chip *c, const mj_value *o, const char *path);
/* A control op: PORTS_NOT_MINE, 0 (reply appended to out) or -1 (msg set). */
MOCK_API int ports_control(struct scenario *sc, const char *op, const mj_value *req, mj_buf *out, char *msg);

#endif
