// SPDX-License-Identifier: GPL-2.0
/*
 * rpage_mbguest: the guest of the VM demo, a freestanding multiboot
 * program that stock QEMU boots with -kernel (no disk, no firmware of
 * its own). It runs in 32-bit protected mode without paging, so every
 * address below is guest-physical, that is an offset in the guest's RAM
 * file.
 *
 * It fills its RAM from 4 MiB to the end of memory (rounded down to a
 * MiB) with a pattern that depends on the address and a seed, prints the
 * checksum, and then verifies the whole region again and again, for
 * ever, printing one line per pass on the first serial port:
 *
 *   mbguest: filled 59 MiB from 0x400000, seed 0x..., checksum 0x...
 *   mbguest: pass 3 ok, checksum 0x..., 59 MiB
 *   mbguest: pass 4 BAD at 0x01234000: 0x00000000, want 0x...
 *
 * Its pass counter, seed and stack live in guest RAM too, so a VM moved
 * to another host with that RAM carries on counting where it stopped,
 * and the pass after the move tells whether every word arrived.
 */
#include <stdint.h>

#define MB_MAGIC	0x1BADB002u
#define MB_BOOTED	0x2BADB002u
#define MB_MEMINFO	(1u << 1)
#define MB_INFO_MEM	(1u << 0)

#define REGION_START	(4u << 20)
#define COM1		0x3f8

struct mb_header {
	uint32_t magic;
	uint32_t flags;
	uint32_t checksum;
};

/* Where QEMU's multiboot loader looks: the first 8 KiB of the image. */
__attribute__((section(".multiboot"), used, aligned(4)))
static const struct mb_header mb_header = {
	.magic = MB_MAGIC,
	.flags = MB_MEMINFO,
	.checksum = -(MB_MAGIC + MB_MEMINFO),
};

struct mb_info {
	uint32_t flags;
	uint32_t mem_lower;	/* KiB below 1 MiB */
	uint32_t mem_upper;	/* KiB above 1 MiB */
};

void mbguest_main(uint32_t magic, const struct mb_info *info);

/* The loader leaves no stack: make one, and never return. */
__asm__(".section .bss\n"
	".align 16\n"
	"mbguest_stack: .skip 16384\n"
	"mbguest_stack_top:\n"
	".text\n"
	".globl _start\n"
	"_start:\n"
	"	mov $mbguest_stack_top, %esp\n"
	"	push %ebx\n"
	"	push %eax\n"
	"	call mbguest_main\n"
	"1:	hlt\n"
	"	jmp 1b\n");

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static void put_char(char c)
{
	/* Until the transmit holding register is empty. */
	while (!(inb(COM1 + 5) & 0x20))
		;
	outb(COM1, (uint8_t)c);
}

static void put_str(const char *s)
{
	while (*s)
		put_char(*s++);
}

static void put_hex(uint32_t v)
{
	static const char digits[] = "0123456789abcdef";
	int shift;

	put_str("0x");
	for (shift = 28; shift >= 0; shift -= 4)
		put_char(digits[(v >> shift) & 0xf]);
}

static void put_dec(uint32_t v)
{
	char buf[11];
	int i = sizeof(buf);

	buf[--i] = '\0';
	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put_str(&buf[i]);
}

/* What the word at @addr holds: a hash of the address and the seed. */
static inline uint32_t pattern(uint32_t addr, uint32_t seed)
{
	uint32_t x = (addr ^ seed) * 0x9e3779b1u;

	return x ^ (x >> 15) ^ seed;
}

/* The state that moves with the VM: in guest RAM, like everything. */
static volatile uint32_t passes;
static uint32_t seed, region_end, filled_sum;

static uint32_t checksum_step(uint32_t sum, uint32_t v)
{
	return ((sum << 5) | (sum >> 27)) + v;
}

static void fill(void)
{
	uint32_t a, sum = 0;

	for (a = REGION_START; a < region_end; a += 4) {
		uint32_t v = pattern(a, seed);

		*(volatile uint32_t *)a = v;
		sum = checksum_step(sum, v);
	}
	filled_sum = sum;
	put_str("mbguest: filled ");
	put_dec((region_end - REGION_START) >> 20);
	put_str(" MiB from ");
	put_hex(REGION_START);
	put_str(", seed ");
	put_hex(seed);
	put_str(", checksum ");
	put_hex(sum);
	put_str("\n");
}

/* One pass over the region; says how it went. */
static void verify(void)
{
	uint32_t a, sum = 0, bad = 0, bad_at = 0, got = 0, want = 0;

	for (a = REGION_START; a < region_end; a += 4) {
		uint32_t v = *(volatile uint32_t *)a;

		if (v != pattern(a, seed) && !bad++) {
			bad_at = a;
			got = v;
			want = pattern(a, seed);
		}
		sum = checksum_step(sum, v);
	}
	passes++;
	put_str("mbguest: pass ");
	put_dec(passes);
	if (bad || sum != filled_sum) {
		put_str(" BAD at ");
		put_hex(bad_at);
		put_str(": ");
		put_hex(got);
		put_str(", want ");
		put_hex(want);
		put_str(", ");
		put_dec(bad);
		put_str(" words wrong, checksum ");
		put_hex(sum);
		put_str("\n");
		return;
	}
	put_str(" ok, checksum ");
	put_hex(sum);
	put_str(", ");
	put_dec((region_end - REGION_START) >> 20);
	put_str(" MiB\n");
}

/* A seed that differs from boot to boot: the time-stamp counter. */
static uint32_t read_tsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return lo ^ hi;
}

void mbguest_main(uint32_t magic, const struct mb_info *info)
{
	if (magic != MB_BOOTED || !(info->flags & MB_INFO_MEM)) {
		put_str("mbguest: not booted by a multiboot loader with memory info\n");
		return;
	}
	region_end = ((1u << 20) + (info->mem_upper << 10)) & ~((1u << 20) - 1);
	if (region_end <= REGION_START + (1u << 20)) {
		put_str("mbguest: too little memory\n");
		return;
	}
	seed = read_tsc() | 1;
	fill();
	for (;;)
		verify();
}
