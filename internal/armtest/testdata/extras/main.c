/* SPDX-License-Identifier: Apache-2.0 */
/* The program behind the elf package's extra tests: flash code at
 * 0x60000000 (extras.ld), one hot function in ITCM at 0x00000000 loaded
 * from flash, two static archives and newlib. Flash and ITCM are more than
 * 16 MB apart, so GNU ld must insert long-branch veneers both ways. */
#include <stdint.h>
#include <string.h>

uint32_t alpha_mix(uint32_t a, uint32_t b);
uint32_t alpha_sum(const uint32_t *v, int n);
void alpha_table_fill_with_a_rather_long_function_name(uint32_t seed);
uint32_t alpha_table_get(int i);
uint32_t beta_apply(int which, uint32_t x);
size_t beta_copy(char *dst, const char *src);

extern uint32_t __itcm_load_start[], __itcm_start[], __itcm_end[];
extern uint32_t __data_load_start[], __data_start[], __data_end[];
extern uint32_t __bss_start[], __bss_end[];

volatile uint32_t sink;
uint32_t counter = 5;
static char buf[32];

/* Runs from ITCM; calls back into flash through a veneer. */
__attribute__((section(".itcm_text"), noinline)) uint32_t itcm_hot(uint32_t x)
{
	uint32_t v[4] = { x, x + 1u, x + 2u, x + 3u };
	return alpha_sum(v, 4) ^ alpha_mix(x, counter);
}

/* A leaf in ITCM: no frame, LR stays live throughout. */
__attribute__((section(".itcm_text"), noinline)) uint32_t itcm_leaf(uint32_t x)
{
	return (x >> 3) ^ (x * 7u);
}

__attribute__((noinline)) static void boot_copy(uint32_t *dst, const uint32_t *src, const uint32_t *end)
{
	while (dst < end)
		*dst++ = *src++;
}

int main(void)
{
	alpha_table_fill_with_a_rather_long_function_name(counter);
	uint32_t acc = 0;
	for (int i = 0; i < 8; i++) {
		acc += itcm_hot(acc + (uint32_t)i);
		acc += itcm_leaf(acc);
		acc += beta_apply(i, acc) + alpha_table_get(i);
	}
	acc += (uint32_t)beta_copy(buf, "tcmprof");
	sink = acc;
	for (;;)
		;
}

void Reset_Handler(void)
{
	boot_copy(__itcm_start, __itcm_load_start, __itcm_end);
	boot_copy(__data_start, __data_load_start, __data_end);
	memset(__bss_start, 0, (size_t)((char *)__bss_end - (char *)__bss_start));
	main();
}

__attribute__((section(".vectors"), used)) const uint32_t vectors[2] = {
	0x20020000u, (uint32_t)Reset_Handler,
};
