/*
 * vNPUs of the mock (dynamic virtual devices, dcmi-abi.md §4.5, §4.6): the templates a scenario offers
 * (`vnpuTemplates`), the vNPUs created on each chip with their AI-core accounting, the main-52 queries of
 * dcmi_get_device_info, and the control ops that inspect and drive them (scenarios/README.md "vNPU").
 * Every function runs with the model lock (mu) held.
 */
#define _GNU_SOURCE
#include "mock_vdevice.h"

#include <stdio.h>
#include <string.h>

#include "mock_model.h"

#define VDEV_ID_ANY 0xFFFFFFFFu
#define TEMPLATE_FIELDS_MAX_MEMORY (1LL << 30)

static const char *const template_fields[] = {"name", "aicore", "aicpu", "memoryMiB", NULL};

int vdev_load_templates(char *msg, const mj_value *root, struct scenario *sc) {
  const mj_value *t = mj_get(root, "vnpuTemplates");
  sc->ntemplates = 0;
  if (!t) return 0;
  if (t->type != MJ_ARRAY) return failf(msg, "vnpuTemplates", "expected an array, found %s", found(t));
  if (t->count > MOCK_MAX_TEMPLATES)
    return failf(msg, "vnpuTemplates", "%zu templates, at most %d allowed", t->count, MOCK_MAX_TEMPLATES);
  for (size_t i = 0; i < t->count; i++) {
    char path[64];
    snprintf(path, sizeof path, "vnpuTemplates[%zu]", i);
    const mj_value *o = &t->items[i];
    if (o->type != MJ_OBJECT) return failf(msg, path, "expected an object, found %s", found(o));
    if (check_fields(msg, o, path, template_fields)) return -1;
    struct vnpu_template *tp = &sc->templates[sc->ntemplates];
    memset(tp, 0, sizeof *tp);
    if (get_str(msg, o, path, "name", 1, DCMI_VDEV_RES_NAME_LEN - 1, tp->name, sizeof tp->name) < 0) return -1;
    if (!tp->name[0]) return failf(msg, path, "name must not be empty");
    for (int j = 0; j < sc->ntemplates; j++)
      if (!strcmp(sc->templates[j].name, tp->name)) return failf(msg, path, "template \"%s\" listed twice", tp->name);
    long long v;
    if (get_int(msg, o, path, "aicore", 1, 1, 64, &v) < 0) return -1;
    tp->aicore = (unsigned)v;
    v = 0;
    if (get_int(msg, o, path, "aicpu", 0, 0, 64, &v) < 0) return -1;
    tp->aicpu = (unsigned)v;
    v = 0;
    if (get_int(msg, o, path, "memoryMiB", 0, 0, TEMPLATE_FIELDS_MAX_MEMORY, &v) < 0) return -1;
    tp->memory_mib = (unsigned long long)v;
    sc->ntemplates++;
  }
  return 0;
}

unsigned vdev_free_aicore(const struct scenario *sc, const struct chip *c) {
  unsigned used = 0;
  for (int i = 0; i < c->nvdevs; i++) used += sc->templates[c->vdevs[i].tmpl].aicore;
  return used >= sc->aicore ? 0 : sc->aicore - used;
}

static const struct vdev *find_vdev(const struct chip *c, unsigned id) {
  for (int i = 0; i < c->nvdevs; i++)
    if (c->vdevs[i].id == id) return &c->vdevs[i];
  return NULL;
}

static int find_template(const struct scenario *sc, const char *name) {
  for (int i = 0; i < sc->ntemplates; i++)
    if (!strcmp(sc->templates[i].name, name)) return i;
  return -1;
}

static void fill_query(const struct scenario *sc, const struct vdev *v, struct dcmi_vdev_query_info *q) {
  const struct vnpu_template *t = &sc->templates[v->tmpl];
  memset(q, 0, sizeof *q);
  snprintf(q->name, sizeof q->name, "%s", t->name);
  q->status = 1; /* created */
  q->vfid = v->id;
  q->vfg_id = v->vfg_id;
  q->base.vfg_id = v->vfg_id;
  q->computing.aic = (float)t->aicore;
  q->computing.device_aicpu = (unsigned short)t->aicpu;
  q->computing.memory_size = t->memory_mib;
  q->computing.vdev_memory_total = t->memory_mib;
  q->computing.vdev_memory_free = t->memory_mib;
}

int vdev_device_info(const struct scenario *sc, const struct chip *c, unsigned sub_cmd, void *buf, unsigned *size) {
  if (sub_cmd == 1) {
    if (*size < sizeof(struct dcmi_soc_total_resource)) return DCMI_ERR_PARAM;
    struct dcmi_soc_total_resource *t = buf;
    memset(t, 0, sizeof *t);
    t->vdev_num = (unsigned)c->nvdevs;
    for (int i = 0; i < c->nvdevs; i++) t->vdev_id[i] = c->vdevs[i].id;
    t->vfg_num = (unsigned)c->nvdevs;
    for (int i = 0; i < c->nvdevs; i++) t->vfg_bitmap |= 1u << (c->vdevs[i].vfg_id & 31u);
    t->computing.aic = (float)sc->aicore;
    t->computing.memory_size = sc->hbm_mib;
    *size = sizeof *t;
    return DCMI_OK;
  }
  if (sub_cmd == 2) {
    if (*size < sizeof(struct dcmi_soc_free_resource)) return DCMI_ERR_PARAM;
    struct dcmi_soc_free_resource *f = buf;
    memset(f, 0, sizeof *f);
    f->vfg_num = (unsigned)(MOCK_MAX_VDEVS - c->nvdevs);
    f->computing.aic = (float)vdev_free_aicore(sc, c);
    f->computing.memory_size = sc->hbm_mib;
    *size = sizeof *f;
    return DCMI_OK;
  }
  if (sub_cmd == 0 || sub_cmd == 5) {
    if (*size < sizeof(struct dcmi_vdev_query_stru)) return DCMI_ERR_PARAM;
    struct dcmi_vdev_query_stru *q = buf;
    unsigned id = q->vdev_id;
    if (sub_cmd == 5 && (id < MOCK_VDEV_ID_MIN || id >= MOCK_VDEV_ID_END)) return DCMI_ERR_PARAM;
    const struct vdev *v = find_vdev(c, id);
    if (!v) return DCMI_ERR_INVALID_DEVICE;
    fill_query(sc, v, &q->query_info);
    *size = sizeof *q;
    return DCMI_OK;
  }
  return DCMI_ERR_NOT_SUPPORTED;
}

int vdev_create(struct scenario *sc, struct chip *c, const struct dcmi_create_vdev_res_stru *in,
                struct dcmi_create_vdev_out *out) {
  if (sc->ntemplates == 0) return DCMI_ERR_NOT_SUPPORTED;
  if (!memchr(in->template_name, 0, sizeof in->template_name)) return DCMI_ERR_PARAM;
  int tmpl = find_template(sc, in->template_name);
  if (tmpl < 0) return DCMI_ERR_PARAM;
  if (c->vdev_fail) return DCMI_ERR_INTERNAL;
  if (c->nvdevs >= MOCK_MAX_VDEVS) return DCMI_ERR_NO_DEVICE;
  if (sc->templates[tmpl].aicore > vdev_free_aicore(sc, c)) return DCMI_ERR_NO_DEVICE;
  unsigned id = in->vdev_id;
  if (id == VDEV_ID_ANY) {
    for (id = MOCK_VDEV_ID_MIN; id < MOCK_VDEV_ID_END && find_vdev(c, id); id++) continue;
  } else if (id < MOCK_VDEV_ID_MIN || id >= MOCK_VDEV_ID_END || find_vdev(c, id)) {
    return DCMI_ERR_PARAM;
  }
  unsigned vfg = 0;
  for (int used = 1; used;) {
    used = 0;
    for (int i = 0; i < c->nvdevs; i++)
      if (c->vdevs[i].vfg_id == vfg) used = 1;
    if (used) vfg++;
  }
  struct vdev *v = &c->vdevs[c->nvdevs++];
  v->id = id;
  v->vfg_id = vfg;
  v->tmpl = tmpl;
  memset(out, 0, sizeof *out);
  out->vdev_id = id;
  out->pcie_bus = c->pcie_bus;
  out->vfg_id = vfg;
  return DCMI_OK;
}

int vdev_destroy(struct chip *c, unsigned vdev_id) {
  for (int i = 0; i < c->nvdevs; i++) {
    if (c->vdevs[i].id != vdev_id) continue;
    memmove(&c->vdevs[i], &c->vdevs[i + 1], (size_t)(c->nvdevs - i - 1) * sizeof c->vdevs[0]);
    c->nvdevs--;
    return DCMI_OK;
  }
  return DCMI_ERR_INVALID_DEVICE;
}

void vdev_put_state(mj_buf *b, const struct scenario *sc, const struct chip *c) {
  mj_buf_printf(b, "\"aicoreFree\":%u,\"vdevs\":[", vdev_free_aicore(sc, c));
  for (int i = 0; i < c->nvdevs; i++) {
    const struct vdev *v = &c->vdevs[i];
    const struct vnpu_template *t = &sc->templates[v->tmpl];
    mj_buf_printf(b, "%s{\"vdevId\":%u,\"vfgId\":%u,\"template\":", i ? "," : "", v->id, v->vfg_id);
    mj_buf_string(b, t->name);
    mj_buf_printf(b, ",\"aicore\":%u}", t->aicore);
  }
  mj_buf_puts(b, "]");
}

static const char *const vdevs_fields[] = {"op", "t", "logicId", NULL};
static const char *const create_fields[] = {"op", "t", "logicId", "template", NULL};
static const char *const destroy_fields[] = {"op", "t", "logicId", "vdevId", NULL};
static const char *const result_fields[] = {"op", "t", "logicId", "result", NULL};
static const char *const result_names[] = {"ok", "fail", NULL};

int vdev_control(struct scenario *sc, const char *op, const mj_value *req, mj_buf *out, char *msg) {
  const char *const *fields = !strcmp(op, "vdevs")         ? vdevs_fields
                              : !strcmp(op, "createVdev")  ? create_fields
                              : !strcmp(op, "destroyVdev") ? destroy_fields
                              : !strcmp(op, "vdevResult")  ? result_fields
                                                           : NULL;
  if (!fields) return VDEV_NOT_MINE;
  if (check_fields(msg, req, "", fields)) return -1;
  long long logic;
  if (get_int(msg, req, "", "logicId", 1, 0, 0x7FFFFFFFLL, &logic) < 0) return -1;
  struct chip *c = chip_by_logic(sc, logic);
  if (!c) return failf(msg, "logicId", "unknown logicId %lld", logic);
  if (!strcmp(op, "createVdev")) {
    struct dcmi_create_vdev_res_stru in;
    struct dcmi_create_vdev_out res;
    memset(&in, 0, sizeof in);
    in.vdev_id = in.vfg_id = VDEV_ID_ANY;
    if (get_str(msg, req, "", "template", 1, sizeof in.template_name - 1, in.template_name,
                sizeof in.template_name) < 0)
      return -1;
    int rc = vdev_create(sc, c, &in, &res);
    if (rc) return failf(msg, "template", "dcmi_create_vdevice of \"%s\" on logicId %u returned %d",
                         in.template_name, c->logic_id, rc);
    mj_buf_printf(out, "{\"ok\":true,\"logicId\":%u,\"vdevId\":%u,\"vfgId\":%u}\n", c->logic_id, res.vdev_id,
                  res.vfg_id);
    return 0;
  }
  if (!strcmp(op, "destroyVdev")) {
    long long id;
    if (get_int(msg, req, "", "vdevId", 1, 0, 0xFFFFFFFFLL, &id) < 0) return -1;
    if (vdev_destroy(c, (unsigned)id)) return failf(msg, "vdevId", "no vNPU %lld on logicId %u", id, c->logic_id);
    mj_buf_printf(out, "{\"ok\":true,\"logicId\":%u}\n", c->logic_id);
    return 0;
  }
  if (!strcmp(op, "vdevResult")) {
    int fail;
    if (get_choice(msg, req, "", "result", 1, result_names, &fail) < 0) return -1;
    c->vdev_fail = fail;
    mj_buf_printf(out, "{\"ok\":true,\"logicId\":%u}\n", c->logic_id);
    return 0;
  }
  mj_buf_printf(out, "{\"ok\":true,\"logicId\":%u,", c->logic_id);
  vdev_put_state(out, sc, c);
  mj_buf_puts(out, "}\n");
  return 0;
}
