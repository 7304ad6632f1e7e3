/*
 * Mock hccn_tool: answers `-i <phyId> -link -g` and `-i <phyId> -stat -g` in the output format of the real tool
 * (spec dcmi-abi.md §7) from the state of the mock libdcmi.so, reached through the control socket named by
 * ASCEND_MOCK_CONTROL. Exit status 0 on success, 1 on any error (message on stderr).
 *
 * A5 (Ascend950) forms, where -i is the logic id and ports are named by UDie and port id (mock_ports.c):
 *   hccn_tool -g -dev_info -i <logicId>                       the port table (then a netdev table), as the real tool
 *   hccn_tool -g -link -i <logicId> -u <udie> -p <port>       `link status: UP|DOWN`
 *   hccn_tool -g -stat -i <logicId> -u <udie> -p <port>       `key:value` packet counters of the port
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "mock_json.h"

#define MAX_REPLY (64u * 1024u * 1024u)

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int die(const char *fmt, ...) {
  va_list ap;
  fputs("hccn_tool: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return 1;
}

static int usage(const char *why) {
  fprintf(stderr,
          "hccn_tool: %s\nusage: hccn_tool -i <phyId> -link -g\n       hccn_tool -i <phyId> -stat -g\n"
          "       hccn_tool -g -dev_info -i <logicId>\n       hccn_tool -g -link -i <logicId> -u <udie> -p <port>\n"
          "       hccn_tool -g -stat -i <logicId> -u <udie> -p <port>\n",
          why);
  return 1;
}

/* Sends one request line and returns the parsed one-line reply (0) or prints an error (1). */
static int ask(const char *request, mj_value *reply) {
  const char *path = getenv("ASCEND_MOCK_CONTROL");
  if (!path || !path[0]) return die("ASCEND_MOCK_CONTROL is not set (it names the mock's control socket)");
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof addr.sun_path) return die("%s: socket path too long", path);
  memcpy(addr.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return die("socket: %s", strerror(errno));
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    int e = errno;
    close(fd);
    return die("%s: cannot connect to the mock DCMI library: %s", path, strerror(e));
  }
  size_t len = strlen(request), off = 0;
  while (off < len) {
    ssize_t w = send(fd, request + off, len - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int e = errno;
      close(fd);
      return die("%s: send: %s", path, strerror(e));
    }
    off += (size_t)w;
  }
  shutdown(fd, SHUT_WR);
  mj_buf in;
  mj_buf_init(&in);
  char chunk[65536];
  for (;;) {
    ssize_t r = recv(fd, chunk, sizeof chunk, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      close(fd);
      mj_buf_free(&in);
      return die("%s: no reply: %s", path, strerror(e));
    }
    if (r == 0) break;
    mj_buf_append(&in, chunk, (size_t)r);
    if (in.failed || in.len > MAX_REPLY) {
      close(fd);
      mj_buf_free(&in);
      return die("%s: reply too large", path);
    }
    if (memchr(chunk, '\n', (size_t)r)) break;
  }
  close(fd);
  char *nl = in.data ? memchr(in.data, '\n', in.len) : NULL;
  if (!nl) {
    mj_buf_free(&in);
    return die("%s: incomplete reply from the mock", path);
  }
  char err[512];
  int rc = mj_parse(in.data, (size_t)(nl - in.data), 0, reply, err, sizeof err);
  mj_buf_free(&in);
  if (rc != 0) return die("invalid reply from the mock: %s", err);
  const mj_value *ok = mj_get(reply, "ok");
  if (!ok || ok->type != MJ_BOOL || !ok->boolean) {
    const mj_value *e = mj_get(reply, "error");
    die("%s", e && e->type == MJ_STRING ? e->string : "request failed");
    mj_free(reply);
    return 1;
  }
  return 0;
}

static long long num(const mj_value *obj, const char *key) {
  const mj_value *v = mj_get(obj, key);
  return v && v->type == MJ_NUMBER && v->is_int ? v->integer : -1;
}

static int link_status(long phy) {
  mj_value st;
  if (ask("{\"op\":\"state\"}\n", &st)) return 1;
  const mj_value *chips = mj_get(&st, "chips");
  int rc = 1;
  const mj_value *chip = NULL;
  for (size_t i = 0; chips && chips->type == MJ_ARRAY && i < chips->count; i++)
    if (num(&chips->items[i], "phyId") == phy) chip = &chips->items[i];
  if (!chip) {
    die("device %ld does not exist", phy);
  } else {
    const mj_value *dropped = mj_get(chip, "dropped");
    const mj_value *link = mj_get(chip, "link");
    if (dropped && dropped->type == MJ_BOOL && dropped->boolean) die("device %ld is not ready (card drop)", phy);
    else if (!link || link->type != MJ_STRING) die("invalid reply from the mock: no link status");
    else {
      printf("link status: %s\n", link->string);
      rc = 0;
    }
  }
  mj_free(&st);
  return rc;
}

static int roce_stat(long phy) {
  char req[64];
  snprintf(req, sizeof req, "{\"op\":\"roceStat\",\"phyId\":%ld}\n", phy);
  mj_value st;
  if (ask(req, &st)) return 1;
  long long tx = num(&st, "tx"), rx = num(&st, "rx");
  mj_free(&st);
  if (tx < 0 || rx < 0) return die("invalid reply from the mock: no packet counters");
  printf("packet statistics:\n"
         "mac_tx_mac_pause_num:0\n"
         "mac_rx_mac_pause_num:0\n"
         "mac_tx_pfc_pkt_num:0\n"
         "mac_rx_pfc_pkt_num:0\n"
         "mac_tx_bad_pkt_num:0\n"
         "mac_rx_bad_pkt_num:0\n"
         "roce_tx_rc_pkt_num:%lld\n"
         "roce_tx_all_pkt_num:%lld\n"
         "roce_tx_err_pkt_num:0\n"
         "roce_rx_rc_pkt_num:%lld\n"
         "roce_rx_all_pkt_num:%lld\n"
         "roce_rx_err_pkt_num:0\n"
         "roce_tx_cnp_pkt_num:0\n"
         "roce_rx_cnp_pkt_num:0\n",
         tx, tx, rx, rx);
  return 0;
}

static const char *str(const mj_value *obj, const char *key) {
  const mj_value *v = mj_get(obj, key);
  return v && v->type == MJ_STRING ? v->string : NULL;
}

/* The chip's ports from the mock ({"op":"ports"}); 1 = error printed. */
static int ask_ports(long logic, mj_value *st, const mj_value **ports) {
  char req[80];
  snprintf(req, sizeof req, "{\"op\":\"ports\",\"logicId\":%ld}\n", logic);
  if (ask(req, st)) return 1;
  const mj_value *dropped = mj_get(st, "dropped");
  *ports = mj_get(st, "ports");
  if (dropped && dropped->type == MJ_BOOL && dropped->boolean) {
    mj_free(st);
    return die("device %ld is not ready (card drop)", logic);
  }
  if (!*ports || (*ports)->type != MJ_ARRAY) {
    mj_free(st);
    return die("invalid reply from the mock: no port list");
  }
  return 0;
}

#define BAR7 "---------"
#define BAR9 "-----------"
#define BAR10 "------------"
#define BAR11 "-------------"
#define BAR15 "-----------------"
#define BAR19 "---------------------"
#define BAR42 "--------------------------------------------"

static int dev_info(long logic) {
  mj_value st;
  const mj_value *ports;
  if (ask_ports(logic, &st, &ports)) return 1;
  if (ports->count > 0) {
    const char *line = "+" BAR7 "+" BAR7 "+" BAR19 "+" BAR9 "+" BAR11 "+" BAR10 "+\n";
    fputs(line, stdout);
    printf("| %-7s | %-7s | %-19s | %-9s | %-11s | %-10s |\n", "UDie ID", "Port ID", "Speed Ability(Gbps)",
           "Port Type", "Link Status", "Media Type");
    fputs(line, stdout);
    for (size_t i = 0; i < ports->count; i++) {
      const mj_value *p = &ports->items[i];
      const char *type = str(p, "type"), *link = str(p, "link");
      printf("| %-7lld | %-7lld | %-19lld | %-9s | %-11s | %-10s |\n", num(p, "udie"), num(p, "port"),
             num(p, "speedGbps"), type ? type : "NA", link ? link : "NA",
             type && !strcmp(type, "UB") ? "Electrical" : "Optical");
    }
    fputs(line, stdout);
  }
  /* the real tool prints the netdev table next; a reader stops after the port table's closing line */
  const char *nline = "+" BAR15 "+" BAR42 "+" BAR42 "+" BAR9 "+" BAR15 "+\n";
  fputs(nline, stdout);
  printf("| %-15s | %-42s | %-42s | %-9s | %-15s |\n", "Interface Name", "IP Address", "Netmask", "Bond Mode",
         "Slaves");
  fputs(nline, stdout);
  printf("| %-15s | %-42s | %-42s | %-9s | %-15s |\n", "ubond0", "NA", "NA", "NA", "NA");
  fputs(nline, stdout);
  mj_free(&st);
  return 0;
}

/* The port (udie, port) of the chip; NULL (error printed) when it has none. */
static const mj_value *find_port(const mj_value *ports, long logic, long udie, long port) {
  for (size_t i = 0; i < ports->count; i++)
    if (num(&ports->items[i], "udie") == udie && num(&ports->items[i], "port") == port) return &ports->items[i];
  die("device %ld has no port (udie %ld, port %ld)", logic, udie, port);
  return NULL;
}

static int port_link(long logic, long udie, long port) {
  mj_value st;
  const mj_value *ports;
  if (ask_ports(logic, &st, &ports)) return 1;
  const mj_value *p = find_port(ports, logic, udie, port);
  const char *link = p ? str(p, "link") : NULL;
  if (p && !link) die("invalid reply from the mock: no link status");
  if (link) printf("link status: %s\n", link);
  mj_free(&st);
  return link ? 0 : 1;
}

static int port_stat(long logic, long udie, long port) {
  mj_value st;
  const mj_value *ports;
  if (ask_ports(logic, &st, &ports)) return 1;
  const mj_value *p = find_port(ports, logic, udie, port);
  long long tx = num(&st, "tx"), rx = num(&st, "rx");
  int rc = 1;
  if (p && (tx < 0 || rx < 0)) die("invalid reply from the mock: no packet counters");
  else if (p) {
    printf("port statistics:\n"
           "tx_pkt_num:%lld\n"
           "rx_pkt_num:%lld\n"
           "tx_err_pkt_num:0\n"
           "rx_err_pkt_num:0\n",
           tx, rx);
    rc = 0;
  }
  mj_free(&st);
  return rc;
}

static int parse_id(const char *v, long max, long *out) {
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (!*v || *end || errno || n < 0 || n > max || (v[0] == '0' && v[1])) return -1;
  *out = n;
  return 0;
}

int main(int argc, char **argv) {
  long phy = -1, udie = -1, port = -1;
  int want_link = 0, want_stat = 0, want_info = 0, get = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-i") || !strcmp(a, "-u") || !strcmp(a, "-p")) {
      if (i + 1 >= argc) return usage(a[1] == 'i' ? "-i needs a device id" : a[1] == 'u' ? "-u needs a udie id" : "-p needs a port id");
      long *dst = a[1] == 'i' ? &phy : a[1] == 'u' ? &udie : &port;
      if (parse_id(argv[++i], a[1] == 'i' ? 255 : a[1] == 'u' ? 7 : 63, dst))
        return usage(a[1] == 'i' ? "invalid device id" : a[1] == 'u' ? "invalid udie id" : "invalid port id");
    } else if (!strcmp(a, "-link")) {
      want_link = 1;
    } else if (!strcmp(a, "-stat")) {
      want_stat = 1;
    } else if (!strcmp(a, "-dev_info")) {
      want_info = 1;
    } else if (!strcmp(a, "-g")) {
      get = 1;
    } else {
      char why[300];
      snprintf(why, sizeof why, "unsupported argument '%.200s'", a);
      return usage(why);
    }
  }
  if (phy < 0) return usage("missing -i <phyId>");
  if (want_link + want_stat + want_info != 1) return usage("exactly one of -link, -stat or -dev_info is required");
  if (!get) return usage("missing -g (only get is supported)");
  if (want_info) {
    if (udie >= 0 || port >= 0) return usage("-dev_info takes no -u or -p");
    return dev_info(phy);
  }
  if ((udie >= 0) != (port >= 0)) return usage("-u and -p go together");
  if (udie >= 0) return want_link ? port_link(phy, udie, port) : port_stat(phy, udie, port);
  return want_link ? link_status(phy) : roce_stat(phy);
}
