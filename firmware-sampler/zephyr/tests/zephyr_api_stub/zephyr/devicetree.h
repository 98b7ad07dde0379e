/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The teensy41 facts the glue reads, as dts/arm/nxp/nxp_rt10xx.dtsi and the snippet give them. */
#define DT_CAT_(a, b) a##b
#define DT_CAT(a, b) DT_CAT_(a, b)
#define DT_NODELABEL(label) DT_CAT(DT_N_NODELABEL_, label)
#define DT_CHOSEN(prop) DT_CAT(DT_N_CHOSEN_, prop)
#define DT_HAS_CHOSEN(prop) DT_CAT(DT_N_HAS_CHOSEN_, prop)
#define DT_NODE_EXISTS(node) DT_CAT(node, _EXISTS)
#define DT_NODE_HAS_STATUS(node, status) DT_CAT(DT_CAT(node, _STATUS_), status)
#define DT_REG_ADDR(node) DT_CAT(node, _REG_ADDR)
#define DT_IRQN(node) DT_CAT(node, _IRQN)
#define DT_CLOCKS_CTLR(node) DT_CAT(node, _CLOCKS_CTLR)
#define DT_CLOCKS_CELL(node, cell) DT_CAT(DT_CAT(node, _CLOCKS_CELL_), cell)
#define DT_N_NODELABEL_pit0_EXISTS 1
#define DT_N_NODELABEL_pit0_STATUS_okay 0
#define DT_N_NODELABEL_pit0_REG_ADDR 0x40084000
#define DT_N_NODELABEL_pit0_IRQN 122
#define DT_N_NODELABEL_pit0_CLOCKS_CTLR DT_N_NODELABEL_ccm
#define DT_N_NODELABEL_pit0_CLOCKS_CELL_name 0x1500
#define DT_N_CHOSEN_tcmprof_transport DT_N_NODELABEL_tcmprof_transport_uart
#define DT_N_NODELABEL_tcmprof_transport_uart_EXISTS 1
#define DT_N_HAS_CHOSEN_zephyr_itcm 1
#define DT_N_HAS_CHOSEN_zephyr_dtcm 1
extern const struct device DT_N_NODELABEL_ccm_DEVICE, DT_N_NODELABEL_tcmprof_transport_uart_DEVICE,
	DT_N_NODELABEL_zephyr_udc0_DEVICE;
#define DT_NODE_HAS_PROP(node, prop) DT_CAT(DT_CAT(node, _HAS_PROP_), prop)
#define DT_N_NODELABEL_pit0_HAS_PROP_clocks 1
/*
 * DT_INST_FOREACH_STATUS_OKAY(fn) expands, for the DT_DRV_COMPAT in effect,
 * the generated DT_FOREACH_OKAY_INST_<compat>(fn), which is fn(0) fn(1) ...
 * per okay instance (include/zephyr/devicetree.h): here the snippet's two
 * zephyr,cdc-acm-uart nodes.
 */
#define DT_INST_FOREACH_STATUS_OKAY(fn) DT_CAT(DT_FOREACH_OKAY_INST_, DT_DRV_COMPAT)(fn)
#define DT_FOREACH_OKAY_INST_zephyr_cdc_acm_uart(fn) fn(0) fn(1)
