/* embedded/riscv/start.S - reset code for the riscv32 virt machine: the
 * global and stack pointers, a trap vector that reports a failure, .bss
 * zeroed, then main; its return value ends the emulation. */
    .section .text.start, "ax"
    .globl _start
_start:
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop
    la sp, __stack_top
    la t0, trap_entry
    .option push
    .option arch, +zicsr     /* -march=rv32imac leaves Zicsr out */
    csrw mtvec, t0
    .option pop
    la t0, __bss_start
    la t1, __bss_end
1:  bgeu t0, t1, 2f
    sw zero, 0(t0)
    addi t0, t0, 4
    j 1b
2:  call main
    call board_exit

    .align 2
trap_entry:
    la sp, __stack_top
    call board_trap
