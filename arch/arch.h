// Role: the umbrella header for code that needs both sides of an architecture:
// its facts (arch/arch_info.h: registers, ABIs, format ids; no Unicorn, no
// Capstone) and its engine (arch/arch_engine.h: GuestCpu, Unicorn's and
// Capstone's ids, the Capstone hooks and helpers). The Linux layer, the recorder
// core and the tests include this one; formats and the unwinder include
// arch/arch_info.h (and arch/instruction_decoder.h) only, which
// scripts/check_layering.sh enforces.
#pragma once

#include "arch/arch_engine.h"
#include "arch/arch_info.h"
