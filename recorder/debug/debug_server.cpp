// Role: implementation of the debug server's connection (debug_server.h):
// POSIX sockets, one client, blocking reads.
#include "recorder/debug/debug_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tracecorn::debug {
namespace {

// Closes a descriptor when it goes out of scope.
class Descriptor {
 public:
  explicit Descriptor(int fd = -1) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Error socket_error(const std::string& what, const std::string& where) {
  return make_error(ErrorCode::kIo, what + ": " + std::strerror(errno), where);
}

Expected<int> listen_on(const ServerOptions& options, std::uint16_t& port) {
  const std::string where = options.host + ":" + std::to_string(options.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int error = ::getaddrinfo(options.host.c_str(), std::to_string(options.port).c_str(), &hints, &found))
    return make_error(ErrorCode::kIo, std::string("cannot resolve the address: ") + ::gai_strerror(error), where);
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, ::freeaddrinfo);
  const int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  if (fd < 0) return socket_error("cannot create a socket", where);
  const int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 1) != 0) {
    auto error = socket_error("cannot listen", where);
    ::close(fd);
    return error;
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
}

bool send_all(int fd, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

Status serve_one_client(GdbSession& session, const ServerOptions& options,
                        const std::function<void(const std::string& host, std::uint16_t port)>& on_listening) {
  std::uint16_t port = 0;
  auto listening = listen_on(options, port);
  if (!listening) return listening.error();
  Descriptor server(*listening);
  on_listening(options.host, port);
  int accepted = -1;
  do accepted = ::accept4(server.get(), nullptr, nullptr, SOCK_CLOEXEC);
  while (accepted < 0 && errno == EINTR);
  if (accepted < 0) return socket_error("cannot accept a client", options.host + ":" + std::to_string(port));
  Descriptor client(accepted);
  const int yes = 1;
  ::setsockopt(client.get(), IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  PacketParser parser;
  std::vector<ClientItem> items;
  std::uint8_t buffer[4096];
  for (;;) {
    const ssize_t n = ::recv(client.get(), buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ok_status();  // the client went away
    items.clear();
    parser.feed(std::span(buffer, static_cast<std::size_t>(n)), items);
    for (const auto& item : items) {
      const auto output = session.handle(item);
      if (!output.bytes.empty() && !send_all(client.get(), output.bytes)) return ok_status();
      if (output.close) return ok_status();
    }
  }
}

}  // namespace tracecorn::debug
