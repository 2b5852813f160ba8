/*
 * embedded/riscv/board.c - board services for QEMU's riscv32 virt machine
 * (-bios none, machine mode): console on the NS16550 UART at 0x10000000,
 * exit through the SiFive test device at 0x100000 (0x5555: pass; 0x3333
 * with the status in the upper half: fail), and the minstret CSR as the
 * instruction counter.  QEMU 7.2 derives minstret from the instruction
 * count when it runs with -icount (shift=0: one per instruction); without
 * -icount it reads the host's clock instead, which the demo's 64-no-op
 * check rejects.
 */
#include <stdint.h>

#include "../board.h"

const char board_name[] = "qemu-system-riscv32 virt (rv32imac, NS16550 UART)";
const char board_counter_name[] = "minstret under -icount shift=0";

#define UART_THR (*(volatile uint8_t *)0x10000000u)
#define UART_LSR (*(volatile uint8_t *)0x10000005u)
#define UART_LSR_THRE 0x20u
#define TEST_DEVICE (*(volatile uint32_t *)0x00100000u)

void board_trap(void);

void board_puts(const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\n') {
            while ((UART_LSR & UART_LSR_THRE) == 0) {
            }
            UART_THR = '\r';
        }
        while ((UART_LSR & UART_LSR_THRE) == 0) {
        }
        UART_THR = (uint8_t)*s;
    }
}

_Noreturn void board_exit(int status)
{
    if (status == 0)
        TEST_DEVICE = 0x5555u;
    else
        TEST_DEVICE = 0x3333u | ((uint32_t)(status & 0xFFFF) << 16);
    for (;;) {
    }
}

void board_trap(void)
{
    board_puts("DMM-DEMO FAIL: trap\n");
    board_exit(1);
}

int board_counter_init(void) { return 1; }

/* The CSR instructions need Zicsr, which -march=rv32imac leaves out with
 * binutils >= 2.38: enabled here only, for this one instruction. */
uint32_t board_counter_read(void)
{
    uint32_t v;
    __asm__ volatile(".option push\n\t.option arch, +zicsr\n\tcsrr %0, minstret\n\t.option pop"
                     : "=r"(v) : : "memory");
    return v;
}

uint32_t board_counter_to_insns(uint32_t delta) { return delta; }
