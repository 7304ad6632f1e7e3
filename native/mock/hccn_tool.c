/*
 * Mock hccn_tool: answers `-i <phyId> -link -g` and `-i <phyId> -stat -g` in the output format of the real tool
 * (spec dcmi-abi.md §7) from the state of the mock libdcmi.so, reached through the control socket named by
 * ASCEND_MOCK_CONTROL. Exit status 0 on success, 1 on any error (message on stderr).
 */
#define _GNU_SOURCE
#include <errno.h>
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
  fprintf(stderr, "hccn_tool: %s\nusage: hccn_tool -i <phyId> -link -g\n       hccn_tool -i <phyId> -stat -g\n", why);
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

int main(int argc, char **argv) {
  long phy = -1;
  int want_link = 0, want_stat = 0, get = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-i")) {
      if (i + 1 >= argc) return usage("-i needs a device id");
      const char *v = argv[++i];
      char *end;
      errno = 0;
      phy = strtol(v, &end, 10);
      if (!*v || *end || errno || phy < 0 || phy > 255 || (v[0] == '0' && v[1])) return usage("invalid device id");
    } else if (!strcmp(a, "-link")) {
      want_link = 1;
    } else if (!strcmp(a, "-stat")) {
      want_stat = 1;
    } else if (!strcmp(a, "-g")) {
      get = 1;
    } else {
      char why[300];
      snprintf(why, sizeof why, "unsupported argument '%.200s'", a);
      return usage(why);
    }
  }
  if (phy < 0) return usage("missing -i <phyId>");
  if (want_link + want_stat != 1) return usage("exactly one of -link or -stat is required");
  if (!get) return usage("missing -g (only get is supported)");
  return want_link ? link_status(phy) : roce_stat(phy);
}
