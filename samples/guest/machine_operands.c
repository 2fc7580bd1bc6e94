// Role: guest sample "machine_operands": one hand-written x86-64 routine whose
// every instruction reads and writes known registers and memory: loads, stores
// (base, base+index*scale, rip-relative), push/pop, call/ret, string
// instructions (movsq, stosd, lodsb, cmpsb), flag-setting arithmetic (add, sub,
// cmp, adc, inc on memory, shl) and xchg with memory. The BAP frames test
// (tests/formats/bap/check_operands.py) compares the operands each of its
// std_frames lists with the routine's native run under gdb.
// Invariants: the routine runs on a private stack and private data (no
// addresses from the environment), sets every register and the arithmetic
// flags it uses before use, so its register and memory values are the same
// natively and emulated in the static (non-PIE) build; it prints only the
// values it computed. The labels probe_begin/probe_end delimit it for gdb.
// Directives (see samples/README.md):
// archs: x86_64
#include <stdint.h>
#include <stdio.h>

uint64_t probe_source[4] = {0x0102030405060708ull, 0x1112131415161718ull, 0x2122232425262728ull, 0x3132333435363738ull};
uint64_t probe_dest[6];
uint64_t probe_stack[32];
uint64_t probe_results[4];
uint64_t probe_saved_rsp;

void operands_probe(void);

__asm__(
    ".text\n"
    ".globl operands_probe\n"
    ".type operands_probe, @function\n"
    "operands_probe:\n"
    "  push %rbx\n"
    "  push %rbp\n"
    "  push %r12\n"
    "  mov %rsp, probe_saved_rsp(%rip)\n"
    "  lea probe_stack+192(%rip), %rsp\n"
    ".globl probe_begin\n"
    "probe_begin:\n"
    "  push $0x202\n"                       // known flags: only IF (and the fixed bit 1)
    "  popfq\n"
    "  movabs $0x1122334455667788, %rax\n"
    "  mov $0xdeadbeef, %ebx\n"
    "  lea probe_source(%rip), %rsi\n"
    "  lea probe_dest(%rip), %rdi\n"
    "  mov (%rsi), %rcx\n"                   // load, base
    "  mov $1, %r8d\n"
    "  mov (%rsi,%r8,8), %rdx\n"             // load, base + index*8
    "  mov %rax, 8(%rdi)\n"                  // store, base + displacement
    "  mov %rdx, probe_results(%rip)\n"      // store, rip-relative
    "  push %rax\n"                          // push
    "  pop %r9\n"                            // pop
    "  call probe_leaf\n"                    // call (the leaf returns with ret)
    "  add %rbx, %rax\n"                     // flag-setting arithmetic
    "  sub %rdx, %rcx\n"
    "  cmp %rcx, %rax\n"
    "  adc $1, %r9\n"                        // reads CF
    "  shl $4, %r8\n"
    "  cld\n"
    "  movsq\n"                              // string: [rsi] -> [rdi], both advance
    "  mov $0x55aa55aa, %eax\n"
    "  stosl\n"                              // string: eax -> [rdi]
    "  lodsb\n"                              // string: [rsi] -> al
    "  cmpsb\n"                              // string: compares [rsi] with [rdi], sets flags
    "  incq 16(%rdi)\n"                      // read-modify-write memory, flags
    "  xchg %rcx, 8(%rdi)\n"                 // exchange with memory
    "  mov %rax, probe_results+8(%rip)\n"
    "  mov %rcx, probe_results+16(%rip)\n"
    "  mov %r9, probe_results+24(%rip)\n"
    ".globl probe_end\n"
    "probe_end:\n"
    "  mov probe_saved_rsp(%rip), %rsp\n"
    "  pop %r12\n"
    "  pop %rbp\n"
    "  pop %rbx\n"
    "  ret\n"
    "probe_leaf:\n"
    "  lea 1(%rax), %r10\n"
    "  ret\n");

int main(void) {
  operands_probe();
  for (int i = 0; i < 6; ++i) printf("dest[%d] = %016llx\n", i, (unsigned long long)probe_dest[i]);
  for (int i = 0; i < 4; ++i) printf("result[%d] = %016llx\n", i, (unsigned long long)probe_results[i]);
  return 0;
}
