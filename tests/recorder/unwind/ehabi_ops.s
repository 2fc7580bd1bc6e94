@ Role: a fixture for tests/recorder/unwind/ehabi_test.cpp: functions whose
@ unwind directives (.save, .vsave, .pad, .setfp, .personality, .personalityindex,
@ .cantunwind, .unwind_raw) make gas emit every form of EHABI unwind instruction
@ Debian's glibc does not use (uleb128 pads, VFP d0-d31 in FSTMFDX and VPUSH
@ forms, WMMX pops, pop r0-r3, vsp = r7, refuse to unwind, a generic model
@ entry, Thumb code). The test links it with -nostdlib -static and compares
@ the reader with `readelf -u`; it is never run. The pr0/pr1/pr2 labels only
@ satisfy the references gas makes for the compact model.
	.syntax unified
	.fpu neon-vfpv4
	.arm
	.text
	.global _start
	.type _start, %function
_start:
	.fnstart
	.cantunwind
	bl f_core
	b .
	.fnend

	.type f_core, %function
f_core:
	.fnstart
	.save {r4-r11, lr}
	push {r4-r11, lr}
	.vsave {d8-d15}
	vpush {d8-d15}
	.pad #2048
	sub sp, sp, #2048
	bx lr
	.fnend

	.type f_setfp, %function
f_setfp:
	.fnstart
	.save {r4, r7, lr}
	push {r4, r7, lr}
	.setfp r7, sp, #4
	add r7, sp, #4
	.pad #12
	sub sp, sp, #12
	bx lr
	.fnend

	.type f_vfp, %function
f_vfp:
	.fnstart
	.save {r0-r3}
	push {r0-r3}
	.save {r4, r6, r9, r10, lr}
	push {r4, r6, r9, r10, lr}
	.vsave {d16-d20}
	vpush {d16-d20}
	.vsave {d0-d3}
	vpush {d0-d3}
	.pad #0x10000
	bx lr
	.fnend

	.type f_raw, %function
f_raw:
	.fnstart
	.personalityindex 1
	.unwind_raw 12, 0xb3, 0x12
	.unwind_raw 20, 0xba
	.unwind_raw 16, 0xc6, 0x21
	.unwind_raw 8, 0xc7, 0x05
	.unwind_raw 16, 0xc1
	.unwind_raw 4, 0x40
	bx lr
	.fnend

	.type f_generic, %function
f_generic:
	.fnstart
	.personality my_personality
	.save {r4, lr}
	push {r4, lr}
	bx lr
	.handlerdata
	.word 0
	.text
	.fnend

	.type f_refuse, %function
f_refuse:
	.fnstart
	.unwind_raw 0, 0x80, 0x00
	bx lr
	.fnend

	.thumb
	.thumb_func
	.type f_thumb, %function
f_thumb:
	.fnstart
	.save {r4-r6, lr}
	push {r4-r6, lr}
	.pad #8
	sub sp, #8
	bx lr
	.fnend

	.arm
	.type my_personality, %function
my_personality:
	bx lr
	.global __aeabi_unwind_cpp_pr0
	.global __aeabi_unwind_cpp_pr1
	.global __aeabi_unwind_cpp_pr2
__aeabi_unwind_cpp_pr0:
__aeabi_unwind_cpp_pr1:
__aeabi_unwind_cpp_pr2:
	bx lr
