/*
 * embedded/cortex-m/board.c - startup and board services for the MPS2
 * AN385/AN386 boards under qemu-system-arm: the vector table, a reset
 * handler that copies .data and zeroes .bss before main, console output and
 * exit through Arm semihosting (bkpt 0xab), and SysTick as the instruction
 * counter.
 *
 * Instruction counts: QEMU does not model the DWT cycle counter, but with
 * -icount shift=S every instruction advances the virtual clock by 2^S ns,
 * and SysTick (CLKSOURCE = the processor clock, 25 MHz on MPS2, one tick
 * per 40 ns) counts that virtual clock down.  At S = 8 one instruction is
 * 256 ns = 6.4 ticks, so ticks / 6.4 rounded to the nearest integer is the
 * exact instruction count (a tick of rounding at either end is well under
 * half an instruction).  scripts/test.sh runs QEMU with -icount shift=8;
 * demo.c checks the conversion on 64 no-ops.
 */
#include <stdint.h>

#include "../board.h"

extern uint32_t __data_start[], __data_end[], __data_load[];
extern uint32_t __bss_start[], __bss_end[], __stack_top[];

int main(void);
void reset_handler(void);
void fault_handler(void);

const char board_name[] = "qemu-system-arm mps2 (Cortex-M, semihosting)";
const char board_counter_name[] = "SysTick at 25 MHz under -icount shift=8 (6.4 ticks per instruction)";

/* ---- semihosting ---------------------------------------------------------------- */

#define SYS_WRITE0 0x04u
#define SYS_EXIT 0x18u
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u
#define ADP_STOPPED_RUNTIME_ERROR_UNKNOWN 0x20023u

static uintptr_t semihost(uintptr_t op, uintptr_t arg)
{
    register uintptr_t r0 __asm__("r0") = op;
    register uintptr_t r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void board_puts(const char *s)
{
    semihost(SYS_WRITE0, (uintptr_t)s);
}

/* On 32-bit Arm SYS_EXIT takes only a reason code: QEMU exits with 0 for
 * "application exit" and 1 for anything else. */
_Noreturn void board_exit(int status)
{
    semihost(SYS_EXIT, status == 0 ? ADP_STOPPED_APPLICATION_EXIT : ADP_STOPPED_RUNTIME_ERROR_UNKNOWN);
    for (;;) {
    }
}

/* ---- SysTick ---------------------------------------------------------------------- */

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYST_MASK 0x00FFFFFFu

int board_counter_init(void)
{
    SYST_RVR = SYST_MASK;
    SYST_CVR = 0;        /* any write clears it; it reloads on the next tick */
    SYST_CSR = 0x5u;     /* ENABLE | CLKSOURCE (processor clock), no interrupt */
    return 1;
}

/* SysTick counts down: negate so that differences are positive. */
uint32_t board_counter_read(void)
{
    return (uint32_t)0 - SYST_CVR;
}

/* 24-bit wrap-around, then ticks * 5 / 32 (= / 6.4) rounded to nearest.
 * A measurement must stay below 2^24 ticks (2.6 million instructions). */
uint32_t board_counter_to_insns(uint32_t delta)
{
    delta &= SYST_MASK;
    return (delta * 5u + 16u) / 32u;
}

/* ---- startup -------------------------------------------------------------------- */

void reset_handler(void)
{
    uint32_t *src = __data_load;
    for (uint32_t *dst = __data_start; dst < __data_end;)
        *dst++ = *src++;
    for (uint32_t *dst = __bss_start; dst < __bss_end;)
        *dst++ = 0;
    board_exit(main());
}

void fault_handler(void)
{
    board_puts("DMM-DEMO FAIL: processor fault\n");
    board_exit(1);
}

/* Initial stack pointer, then reset, NMI, HardFault, MemManage, BusFault,
 * UsageFault, 4 reserved, SVCall, DebugMonitor, reserved, PendSV, SysTick:
 * every exception but reset reports a failure. */
typedef struct vector_table {
    uint32_t *initial_sp;
    void (*handler[15])(void);
} vector_table;

__attribute__((section(".vectors"), used)) static const vector_table vectors = {
    __stack_top,
    {
        reset_handler,
        fault_handler, fault_handler, fault_handler, fault_handler, fault_handler,
        0, 0, 0, 0,
        fault_handler, fault_handler, 0, fault_handler, fault_handler,
    },
};
