// Role: hostile guest sample "net": talks to itself over TCP on 127.0.0.1 (a
// listening socket on an ephemeral port, a client that connects, accept, one
// message each way), one line per step (report.h). Without --allow-net the first
// step fails (EACCES) and it stops.
// Invariants: prints no port or address; exit 0 when every step worked, 1 at
// the first failure.
#include "report.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

static int step(const char* what, long result) {
  report_result(what, result, 0);
  return result >= 0;
}

int main(void) {
  const int server = socket(AF_INET, SOCK_STREAM, 0);
  if (!step("socket", server)) return 1;
  struct sockaddr_in address = {0};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int one = 1;
  if (!step("setsockopt", setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one))) return 1;
  if (!step("bind", bind(server, (struct sockaddr*)&address, sizeof address))) return 1;
  if (!step("listen", listen(server, 1))) return 1;
  socklen_t length = sizeof address;
  if (!step("getsockname", getsockname(server, (struct sockaddr*)&address, &length))) return 1;
  printf("port_assigned: %s\n", address.sin_port != 0 && length == sizeof address ? "yes" : "no");
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  if (!step("client_socket", client)) return 1;
  if (!step("connect", connect(client, (struct sockaddr*)&address, sizeof address))) return 1;
  struct sockaddr_in peer;
  length = sizeof peer;
  const int accepted = accept(server, (struct sockaddr*)&peer, &length);
  if (!step("accept", accepted)) return 1;
  printf("peer_is_loopback: %s\n", peer.sin_addr.s_addr == htonl(INADDR_LOOPBACK) ? "yes" : "no");
  if (!step("send", sendto(client, "ping", 4, 0, NULL, 0))) return 1;
  char buffer[16] = {0};
  if (!step("recv", recvfrom(accepted, buffer, sizeof buffer - 1, 0, NULL, NULL))) return 1;
  printf("server_got: %s\n", buffer);
  int type = 0;
  length = sizeof type;
  if (!step("getsockopt", getsockopt(accepted, SOL_SOCKET, SO_TYPE, &type, &length))) return 1;
  printf("type_is_stream: %s\n", type == SOCK_STREAM ? "yes" : "no");
  if (!step("shutdown", shutdown(client, SHUT_WR))) return 1;
  return 0;
}
