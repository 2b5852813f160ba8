/*
 * embedded/board.h - what a board gives the shared demo (demo.c).
 * Each board directory (cortex-m/, riscv/) implements these on top of its
 * startup code; demo.c uses nothing else from the machine.
 */
#ifndef DMM_EMBEDDED_BOARD_H
#define DMM_EMBEDDED_BOARD_H

#include <stdint.h>

/* A short name of the board and how its console and counter work. */
extern const char board_name[];
extern const char board_counter_name[];

/* Writes a NUL-terminated string to the console (semihosting or UART). */
void board_puts(const char *s);

/* Ends the emulation with status 0 (pass) or non-zero (fail). */
_Noreturn void board_exit(int status);

/* Sets the instruction counter up; returns 0 when the board has none. */
int board_counter_init(void);

/* A free-running count whose difference between two reads, after
 * board_counter_to_insns, is the number of instructions retired between
 * them (read overhead included: the demo subtracts an empty measurement). */
uint32_t board_counter_read(void);

/* Converts a difference of two reads to instructions. */
uint32_t board_counter_to_insns(uint32_t delta);

#endif
