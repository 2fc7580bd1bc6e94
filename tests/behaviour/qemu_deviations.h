// Role: which samples qemu-user (Debian 12's 7.2) runs differently from Linux
// on which architecture, so that a cross-architecture comparison takes the
// native run of the host build as its reference (its output does not depend on
// the architecture) or leaves the sample out. The entries and their evidence
// are in qemu_deviations.cpp.
// Invariant: constant data; callable from any thread.
#pragma once

#include <string>

namespace tracecorn::behaviour {

// True when qemu-`arch`-static departs from Linux on sample `name`.
bool qemu_deviates(const std::string& name, const std::string& arch);

}  // namespace tracecorn::behaviour
