# Role: a function whose CFI uses the DW_CFA instructions glibc's own code
# does not (so that the readelf comparison in tests/recorder/unwind covers them):
# restore, restore_extended, undefined, same_value, register, remember/restore
# state, def_cfa_register/offset, offset_extended_sf, val_offset(_sf),
# expression, val_expression, def_cfa_expression, GNU_args_size,
# GNU_negative_offset_extended, advance_loc1/2/4. The code itself never runs.
        .text
        .globl  cfi_ops
        .type   cfi_ops, @function
cfi_ops:
        .cfi_startproc
        pushq   %rbp
        .cfi_def_cfa_offset 16
        .cfi_offset %rbp, -16
        movq    %rsp, %rbp
        .cfi_def_cfa_register %rbp
        pushq   %rbx
        .cfi_offset %rbx, -24
        .cfi_remember_state
        nop
        .cfi_register %r12, %r13
        .cfi_undefined %r14
        .cfi_same_value %r15
        nop
        .cfi_escape 0x14, 0x0c, 0x04        # DW_CFA_val_offset r12, 4 * data_align(-8) = cfa-32
        .cfi_escape 0x15, 0x0d, 0x7e        # DW_CFA_val_offset_sf r13, -2 * -8 = cfa+16
        .cfi_escape 0x2e, 0x10              # DW_CFA_GNU_args_size 16
        .cfi_escape 0x2f, 0x0e, 0x05        # DW_CFA_GNU_negative_offset_extended r14, -(5 * -8) = cfa+40
        .cfi_escape 0x11, 0x0f, 0x7d        # DW_CFA_offset_extended_sf r15, -3 * -8 = cfa+24
        nop
        .cfi_escape 0x10, 0x03, 0x02, 0x76, 0x08  # DW_CFA_expression rbx: DW_OP_breg6 +8
        .cfi_escape 0x16, 0x0c, 0x02, 0x76, 0x10  # DW_CFA_val_expression r12: DW_OP_breg6 +16
        .fill 300, 1, 0x90                  # forces advance_loc2
        .cfi_restore %rbx
        .cfi_escape 0x06, 0x0c              # DW_CFA_restore_extended r12
        nop
        .cfi_restore_state
        nop
        .cfi_escape 0x0f, 0x03, 0x77, 0x20, 0x06  # DW_CFA_def_cfa_expression: DW_OP_breg7 +32; DW_OP_deref
        nop
        .cfi_def_cfa %rsp, 8
        .fill 70000, 1, 0x90                # forces advance_loc4
        popq    %rbx
        .cfi_escape 0x0c, 0x07, 0x10        # DW_CFA_def_cfa rsp+16
        ret
        .cfi_endproc
        .size   cfi_ops, .-cfi_ops
