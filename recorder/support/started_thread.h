// Role: start_thread(body), a std::thread that has begun to run `body` by the
// time it is returned. Header-only, no state; any thread.
// Why: the guest forks (the host forks) at any moment, perhaps a few
// instructions after a helper thread was created. A thread still in its
// set-up may hold a lock of the C++ runtime or of a sanitizer (whose
// allocator and thread registry, unlike glibc's malloc, are not made safe
// across fork); the forked child would inherit it held and hang at its own
// first thread. Once `body` runs, the set-up is over.
#pragma once

#include <future>
#include <thread>
#include <utility>

namespace tracecorn {

template <typename Body>
std::thread start_thread(Body body) {
  std::promise<void> started;
  std::future<void> running = started.get_future();
  std::thread thread([started = std::move(started), body = std::move(body)]() mutable {
    started.set_value();
    body();
  });
  running.wait();
  return thread;
}

}  // namespace tracecorn
