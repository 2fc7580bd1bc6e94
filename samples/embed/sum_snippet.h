/*
 * Role: the guest program of the embed examples (embed_example.cpp,
 * embed_example_c.c) and of the C API's unit tests: x86-64 machine code that
 * sums an array of 64-bit integers and stores the running sums, so that a trace
 * of it shows loads, adds, stores and a loop. Plain C, usable from C and C++.
 * Who uses it: the host programs map kEmbedSumCode at EMBED_CODE_ADDRESS, the
 * array at EMBED_ARRAY_ADDRESS, set rdi/rsi/rdx as below and run
 * uc_emu_start(engine, EMBED_CODE_ADDRESS, EMBED_CODE_END, 0, 0).
 * Invariants: the offsets in the listing are those of the bytes (checked by
 * samples/embed/check_embed_output.cmake against the disassembled trace).
 *
 *   ; rdi = array of uint64, rsi = count, rdx = output (count uint64); returns rax = sum
 *   0x00  31 c0           xor  eax, eax
 *   0x02  31 c9           xor  ecx, ecx
 *   0x04  48 39 f1        cmp  rcx, rsi          ; loop:
 *   0x07  73 10           jae  0x19
 *   0x09  4c 8b 04 cf     mov  r8, [rdi + rcx*8] ; load array[i]
 *   0x0d  4c 01 c0        add  rax, r8
 *   0x10  48 89 04 ca     mov  [rdx + rcx*8], rax; store the running sum
 *   0x14  48 ff c1        inc  rcx
 *   0x17  eb eb           jmp  0x04
 *   0x19  f4              hlt                    ; EMBED_CODE_END: never executed, the emulation stops here
 */
#ifndef TRACECORN_SAMPLES_EMBED_SUM_SNIPPET_H
#define TRACECORN_SAMPLES_EMBED_SUM_SNIPPET_H

#include <stdint.h>

#define EMBED_CODE_ADDRESS 0x10000u
#define EMBED_CODE_END (EMBED_CODE_ADDRESS + 0x19u)
#define EMBED_ARRAY_ADDRESS 0x20000u  /* rdi: the array */
#define EMBED_OUTPUT_ADDRESS 0x20100u /* rdx: the running sums */
#define EMBED_PAGE_SIZE 0x1000u
#define EMBED_ARRAY_COUNT 8u          /* rsi */
#define EMBED_EXPECTED_SUM 31u

static const uint8_t kEmbedSumCode[] = {
    0x31, 0xc0,                    /* xor  eax, eax */
    0x31, 0xc9,                    /* xor  ecx, ecx */
    0x48, 0x39, 0xf1,              /* cmp  rcx, rsi */
    0x73, 0x10,                    /* jae  0x19 */
    0x4c, 0x8b, 0x04, 0xcf,        /* mov  r8, [rdi + rcx*8] */
    0x4c, 0x01, 0xc0,              /* add  rax, r8 */
    0x48, 0x89, 0x04, 0xca,        /* mov  [rdx + rcx*8], rax */
    0x48, 0xff, 0xc1,              /* inc  rcx */
    0xeb, 0xeb,                    /* jmp  0x04 */
    0xf4,                          /* hlt */
};

static const uint64_t kEmbedArray[EMBED_ARRAY_COUNT] = {3, 1, 4, 1, 5, 9, 2, 6};

#endif /* TRACECORN_SAMPLES_EMBED_SUM_SNIPPET_H */
