// Role: guest sample "code_rewrite": a tiny JIT. It writes a function that
// returns a constant into a read-write-execute mapping, calls it, rewrites the
// constant in place (same address, same length), makes the instruction cache
// see it (__builtin___clear_cache: nothing on x86, the cacheflush syscalls of
// arm and mips, riscv_flush_icache, aarch64's cache maintenance instructions)
// and calls it again; then the same through a read-write mapping made
// executable with mprotect (write xor execute, as hardened JITs do).
// Invariants: each call returns the constant last written; the output names
// the values only, never addresses.
// Directives (see samples/README.md):
// archs: x86_64 i386 arm aarch64 riscv64 mips mipsel
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

typedef int (*constant_function)(void);

// Writes "return value;" (0 <= value < 256) at `code`; returns its length in bytes.
static size_t write_return(uint8_t* code, unsigned value) {
#if defined(__x86_64__) || defined(__i386__)
  const uint8_t bytes[] = {0xb8, (uint8_t)value, 0, 0, 0, 0xc3};  // mov eax, value; ret
  memcpy(code, bytes, sizeof bytes);
  return sizeof bytes;
#else
#if defined(__aarch64__)
  const uint32_t words[] = {0x52800000u | (value << 5), 0xd65f03c0u};  // mov w0, #value; ret
#elif defined(__arm__)
  const uint32_t words[] = {0xe3a00000u | value, 0xe12fff1eu};  // (A32) mov r0, #value; bx lr
#elif defined(__riscv)
  const uint32_t words[] = {(value << 20) | 0x513u, 0x8067u};  // li a0, value; ret
#elif defined(__mips__)
  const uint32_t words[] = {0x24020000u | value, 0x03e00008u, 0};  // li v0, value; jr ra; nop
#else
#error "code_rewrite: no machine code for this architecture"
#endif
  memcpy(code, words, sizeof words);
  return sizeof words;
#endif
}

static constant_function publish(uint8_t* code, size_t length) {
  __builtin___clear_cache((char*)code, (char*)code + length);
  constant_function function;
  void* address = code;
  memcpy(&function, &address, sizeof function);  // (data to function pointer, as JITs do)
  return function;
}

int main(void) {
  const size_t page = 4096;
  uint8_t* rwx = mmap(NULL, page, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (rwx == MAP_FAILED) {
    perror("mmap rwx");
    return 1;
  }
  int sum = 0;
  for (unsigned value = 1; value <= 4; ++value) {  // rewritten in place after each pair of calls
    constant_function function = publish(rwx, write_return(rwx, value * 10));
    const int first = function(), second = function();
    printf("read-write-execute, version %u: %d %d\n", value, first, second);
    sum += first + second;
  }

  uint8_t* wx = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (wx == MAP_FAILED) {
    perror("mmap rw");
    return 1;
  }
  for (unsigned value = 5; value <= 6; ++value) {
    if (mprotect(wx, page, PROT_READ | PROT_WRITE) != 0) return 2;
    const size_t length = write_return(wx, value * 10);
    if (mprotect(wx, page, PROT_READ | PROT_EXEC) != 0) return 3;
    const int result = publish(wx, length)();
    printf("write xor execute, version %u: %d\n", value, result);
    sum += result;
  }
  printf("sum: %d\n", sum);
  munmap(rwx, page);
  munmap(wx, page);
  return 0;
}
