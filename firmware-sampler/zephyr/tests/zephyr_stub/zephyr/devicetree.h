/* SPDX-License-Identifier: Apache-2.0 */
/* Just enough devicetree for TCMP_PIT_BASE: pit0's reg address. */
#define DT_CAT(a, b) a##b
#define DT_NODELABEL(label) DT_CAT(DT_N_NODELABEL_, label)
#define DT_REG_ADDR(node) DT_CAT(node, _REG_ADDR)
#define DT_N_NODELABEL_pit0_REG_ADDR 0x40084000u
