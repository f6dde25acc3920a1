/* LD_PRELOAD shim for fault tests: makes a server listen on another port than the one it
 * was configured with and reports.
 *
 * A TubeMQ broker reports its configured port to the master, the master checks it
 * against its own record of the broker and hands that address to clients; the broker
 * also listens on it. To put a fault proxy between clients and the broker, the broker
 * must listen elsewhere while still reporting the configured port: with
 * TUBEMQ_TEST_BIND_REMAP="<from>:<to>", every bind() to port <from> binds <to> instead,
 * and the proxy takes <from>. Nothing else changes. Built by tests/faults/conftest.py. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

static int parse_ports(unsigned short *from, unsigned short *to) {
  const char *spec = getenv("TUBEMQ_TEST_BIND_REMAP");
  if (spec == NULL) return 0;
  char *end = NULL;
  unsigned long first = strtoul(spec, &end, 10);
  if (end == NULL || *end != ':') return 0;
  unsigned long second = strtoul(end + 1, NULL, 10);
  if (first == 0 || first > 65535 || second == 0 || second > 65535) return 0;
  *from = (unsigned short)first;
  *to = (unsigned short)second;
  return 1;
}

int bind(int fd, const struct sockaddr *address, socklen_t length) {
  bind_fn real = (bind_fn)dlsym(RTLD_NEXT, "bind");
  unsigned short from, to;
  if (address == NULL || !parse_ports(&from, &to)) return real(fd, address, length);
  if (address->sa_family == AF_INET && length >= (socklen_t)sizeof(struct sockaddr_in)) {
    struct sockaddr_in copy;
    memcpy(&copy, address, sizeof copy);
    if (ntohs(copy.sin_port) == from) {
      copy.sin_port = htons(to);
      return real(fd, (const struct sockaddr *)&copy, sizeof copy);
    }
  } else if (address->sa_family == AF_INET6 &&
             length >= (socklen_t)sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 copy;
    memcpy(&copy, address, sizeof copy);
    if (ntohs(copy.sin6_port) == from) {
      copy.sin6_port = htons(to);
      return real(fd, (const struct sockaddr *)&copy, sizeof copy);
    }
  }
  return real(fd, address, length);
}
