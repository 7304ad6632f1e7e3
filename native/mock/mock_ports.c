/*
 * A5 port state of the mock: see mock_ports.h. The default set of an Ascend950 chip is four UB ports (UDie 0 and 1,
 * ports 0 and 1, 400 Gbps) and two UBoE bonding ports (UDie 0 and 1, port 4, 200 Gbps), all UP.
 */
#define _GNU_SOURCE
#include "mock_ports.h"

#include <stdio.h>
#include <string.h>

#include "mock_model.h"

static const char *const type_names[] = {"UB", "UBoE", NULL};
static const char *const port_fields[] = {"udie", "port", "type", "link", "speedGbps", NULL};

static void add_port(struct chip_ports *ps, unsigned udie, unsigned port, int type, unsigned speed) {
  struct mock_port *p = &ps->p[ps->n++];
  p->udie = udie;
  p->port = port;
  p->type = type;
  p->speed_gbps = speed;
  p->up = 1;
}

static void default_ports(const struct scenario *sc, struct chip_ports *ps) {
  ps->n = 0;
  if (strncmp(sc->chip_name, "Ascend950", 9) != 0) return;
  for (unsigned u = 0; u < 2; u++)
    for (unsigned p = 0; p < 2; p++) add_port(ps, u, p, PORT_UB, 400);
  for (unsigned u = 0; u < 2; u++) add_port(ps, u, 4, PORT_UBOE, 200);
}

int ports_load(char *msg, const struct scenario *sc, struct chip *c, const mj_value *o, const char *path) {
  struct chip_ports *ps = &c->ports;
  const mj_value *arr = mj_get(o, "ports");
  if (!arr) {
    default_ports(sc, ps);
    return 0;
  }
  char fp[256];
  join_path(fp, sizeof fp, path, "ports");
  if (arr->type != MJ_ARRAY) return failf(msg, fp, "expected an array, found %s", found(arr));
  if (arr->count > MOCK_MAX_PORTS) return failf(msg, fp, "%zu ports, at most %d allowed", arr->count, MOCK_MAX_PORTS);
  ps->n = 0;
  for (size_t i = 0; i < arr->count; i++) {
    char ip[300];
    index_path(ip, sizeof ip, fp, i);
    const mj_value *e = &arr->items[i];
    if (e->type != MJ_OBJECT) return failf(msg, ip, "expected an object, found %s", found(e));
    if (check_fields(msg, e, ip, port_fields)) return -1;
    long long udie, port, speed = 400;
    int type, up = 1;
    if (get_int(msg, e, ip, "udie", 1, 0, MOCK_MAX_UDIE, &udie) < 0 ||
        get_int(msg, e, ip, "port", 1, 0, MOCK_MAX_PORT_ID, &port) < 0 ||
        get_choice(msg, e, ip, "type", 1, type_names, &type) < 0 ||
        get_choice(msg, e, ip, "link", 0, link_names, &up) < 0 ||
        get_int(msg, e, ip, "speedGbps", 0, 1, 100000, &speed) < 0)
      return -1;
    for (int j = 0; j < ps->n; j++)
      if (ps->p[j].udie == (unsigned)udie && ps->p[j].port == (unsigned)port)
        return failf(msg, ip, "duplicate port (udie %lld, port %lld)", udie, port);
    add_port(ps, (unsigned)udie, (unsigned)port, type, (unsigned)speed);
    ps->p[ps->n - 1].up = up;
  }
  return 0;
}

static void put_ports(mj_buf *out, const struct chip *c) {
  mj_buf_printf(out, "{\"ok\":true,\"logicId\":%u,\"dropped\":%s,\"ports\":[", c->logic_id,
                c->dropped ? "true" : "false");
  for (int i = 0; i < c->ports.n; i++) {
    const struct mock_port *p = &c->ports.p[i];
    mj_buf_printf(out, "%s{\"udie\":%u,\"port\":%u,\"type\":\"%s\",\"link\":\"%s\",\"speedGbps\":%u}", i ? "," : "",
                  p->udie, p->port, type_names[p->type], p->up ? "UP" : "DOWN", p->speed_gbps);
  }
  mj_buf_printf(out, "],\"tx\":%llu,\"rx\":%llu}\n", c->tx, c->rx);
}

static const char *const ports_fields[] = {"op", "t", "logicId", NULL};
static const char *const port_op_fields[] = {"op", "t", "logicId", "udie", "port", "status", NULL};

int ports_control(struct scenario *sc, const char *op, const mj_value *req, mj_buf *out, char *msg) {
  const char *const *fields = !strcmp(op, "ports") ? ports_fields : !strcmp(op, "port") ? port_op_fields : NULL;
  if (!fields) return PORTS_NOT_MINE;
  if (check_fields(msg, req, "", fields)) return -1;
  long long logic;
  if (get_int(msg, req, "", "logicId", 1, 0, 0x7FFFFFFFLL, &logic) < 0) return -1;
  struct chip *c = chip_by_logic(sc, logic);
  if (!c) return failf(msg, "logicId", "unknown logicId %lld", logic);
  if (!strcmp(op, "ports")) {
    put_ports(out, c);
    return 0;
  }
  long long udie, port;
  int up;
  if (get_int(msg, req, "", "udie", 1, 0, MOCK_MAX_UDIE, &udie) < 0 ||
      get_int(msg, req, "", "port", 1, 0, MOCK_MAX_PORT_ID, &port) < 0 ||
      get_choice(msg, req, "", "status", 1, link_names, &up) < 0)
    return -1;
  for (int i = 0; i < c->ports.n; i++) {
    struct mock_port *p = &c->ports.p[i];
    if (p->udie != (unsigned)udie || p->port != (unsigned)port) continue;
    p->up = up;
    mj_buf_printf(out, "{\"ok\":true,\"logicId\":%u,\"udie\":%u,\"port\":%u,\"type\":\"%s\",\"link\":\"%s\"}\n",
                  c->logic_id, p->udie, p->port, type_names[p->type], up ? "UP" : "DOWN");
    return 0;
  }
  return failf(msg, "port", "logicId %u has no port (udie %lld, port %lld)", c->logic_id, udie, port);
}
