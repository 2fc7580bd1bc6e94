// Role: answers "can the ~100 ns that Debian's Unicorn 2.0.1 spends on every guest
// store (upstream #1970) be avoided from the outside?" by timing the same store
// loop with the data page mapped in different ways: read-write, read-write-execute,
// and host memory through uc_mem_map_ptr (code always in its own read-execute page),
// and with Unicorn's cache controls applied to the data page before the run
// (uc_ctl_remove_cache: drop translated blocks there; uc_ctl_flush_tlb).
// Each variant runs 1,000,000 iterations of a 5-instruction loop with one 8-byte
// store; the figure is CPU time (the process is single-threaded; wall time on a shared machine includes waiting for a core) per iteration. Not a test: run by hand
// (bench/README.md records what it showed).
#include <unicorn/unicorn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
static double now(){ struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&t); return t.tv_sec+t.tv_nsec*1e-9; }
// mov ecx,N; mov edi,DATA; loop: mov [rdi+rbx*8],rax ; and ebx..., 
static unsigned char code[] = {
 0xb9,0x40,0x42,0x0f,0x00,            // mov ecx, 1000000
 0xbf,0x00,0x00,0x20,0x00,            // mov edi, 0x200000
 0x48,0x89,0xcb,                      // L: mov rbx, rcx
 0x81,0xe3,0xff,0x01,0x00,0x00,       // and ebx, 0x1ff
 0x48,0x89,0x04,0xdf,                 // mov [rdi+rbx*8], rax
 0x48,0xff,0xc9,                      // dec rcx
 0x75,0xee,                           // jnz L
 0xf4 };
// cache_control: 1 = uc_ctl_remove_cache on the data page, 2 = uc_ctl_flush_tlb, before the run.
static void run(const char* what, int data_prot, int use_ptr, int same_page, int cache_control){
  uc_engine* uc; uc_open(UC_ARCH_X86, UC_MODE_64, &uc);
  uint64_t data = same_page ? 0x100000 + 0x800 : 0x200000;
  code[6]= data & 0xff; code[7]=(data>>8)&0xff; code[8]=(data>>16)&0xff;
  if (same_page) { uc_mem_map(uc, 0x100000, 0x1000, UC_PROT_ALL); }
  else {
    uc_mem_map(uc, 0x100000, 0x1000, UC_PROT_READ|UC_PROT_EXEC);
    if (use_ptr) { void* p = mmap(0, 0x1000, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0); uc_mem_map_ptr(uc, 0x200000, 0x1000, data_prot, p); }
    else uc_mem_map(uc, 0x200000, 0x1000, data_prot);
  }
  uc_mem_write(uc, 0x100000, code, sizeof code);
  if (cache_control == 1 && uc_ctl_remove_cache(uc, data, data + 0x1000) != UC_ERR_OK) printf("uc_ctl_remove_cache failed\n");
  if (cache_control == 2 && uc_ctl_flush_tlb(uc) != UC_ERR_OK) printf("uc_ctl_flush_tlb failed\n");
  double t=now(); uc_emu_start(uc, 0x100000, 0x100000+sizeof code-1, 0, 0); double e=now()-t;
  uc_err err = UC_ERR_OK; (void)err;
  uint64_t rcx = 1; uc_reg_read(uc, UC_X86_REG_RCX, &rcx);
  printf("%-45s %.1f ns/store%s\n", what, e/1e6*1e9, rcx == 0 ? "" : " (loop did not finish!)");
  uc_close(uc);
}
int main(void){
  run("data RW, separate page", UC_PROT_READ|UC_PROT_WRITE, 0, 0, 0);
  run("data RWX, separate page", UC_PROT_ALL, 0, 0, 0);
  run("data RW via uc_mem_map_ptr", UC_PROT_READ|UC_PROT_WRITE, 1, 0, 0);
  run("data RW, uc_ctl_remove_cache on it first", UC_PROT_READ|UC_PROT_WRITE, 0, 0, 1);
  run("data RW, uc_ctl_flush_tlb first", UC_PROT_READ|UC_PROT_WRITE, 0, 0, 2);
  return 0; }
