// Role: the debug server's connection: listens on a TCP address (loopback
// unless told otherwise), accepts one gdb or LLDB client, and relays bytes
// between it and a GdbSession (gdb_session.h) until the client detaches,
// kills the session or disconnects.
// Who calls it: the CLI's `tracecorn debug`; one thread, blocking.
// Errors: the address cannot be resolved or bound (kIo, naming it); a client
// that disconnects ends the session normally.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "recorder/debug/gdb_session.h"
#include "recorder/support/expected.h"

namespace tracecorn::debug {

struct ServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 1234;  // 0: any free port (on_listening says which)
};

// Serves one client. `on_listening` is called once the socket listens, with
// the port it listens on (before accept), for the caller to tell the user.
Status serve_one_client(GdbSession& session, const ServerOptions& options,
                        const std::function<void(const std::string& host, std::uint16_t port)>& on_listening);

}  // namespace tracecorn::debug
