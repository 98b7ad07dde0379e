/* SPDX-License-Identifier: Apache-2.0 */
/*
 * C with CFI calling hand-written assembly without any (leaf.S), as
 * firmware calls the C library's assembly memcpy: the unwinder's test of
 * code without CFI.
 */
void copy_words(unsigned *dst, const unsigned *src, unsigned n);
unsigned pushing_sum(const unsigned *p, unsigned n);

unsigned buf_a[16], buf_b[16];

int main(void)
{
	copy_words(buf_a, buf_b, 16);
	return (int)pushing_sum(buf_a, 16);
}
