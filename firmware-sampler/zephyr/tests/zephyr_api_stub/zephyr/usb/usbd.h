/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/*
 * The device_next API tcmprof_usbd.c uses, with the arities of the Zephyr
 * version the stand-in build simulates (ZEPHYR_VERSION_CODE from the
 * stand-in <zephyr/version.h>), so that a call with the wrong number of
 * arguments fails to compile. Read in (zephyr/README.md has the table):
 *
 * 3.7 (before 3.7.99):
 *   include/zephyr/usb/usbd.h at commit 1d31431 (after PR #67749 added the
 *   speed arguments, before PR #73463 renamed usbd_contex to usbd_context,
 *   2024-05-29, which is in 3.7.0):
 *     #define USBD_DEVICE_DEFINE(device_name, uhc_dev, vid, pid)
 *     #define USBD_CONFIGURATION_DEFINE(name, attrib, power)
 *     #define USBD_DESC_LANG_DEFINE(name)
 *     #define USBD_DESC_MANUFACTURER_DEFINE(d_name, d_string)
 *     #define USBD_DESC_PRODUCT_DEFINE(d_name, d_string)
 *     int usbd_add_descriptor(struct usbd_context *uds_ctx, struct usbd_desc_node *dn);
 *     int usbd_add_configuration(struct usbd_context *uds_ctx,
 *                                const enum usbd_speed speed, struct usbd_config_node *cd);
 *     int usbd_register_class(struct usbd_context *uds_ctx, const char *name,
 *                             const enum usbd_speed speed, uint8_t cfg);
 *     int usbd_init(struct usbd_context *uds_ctx);
 *     int usbd_enable(struct usbd_context *uds_ctx);
 *     enum usbd_speed usbd_caps_speed(const struct usbd_context *const uds_ctx);
 *     int usbd_device_set_code_triple(struct usbd_context *const uds_ctx,
 *                                     const enum usbd_speed speed, const uint8_t base_class,
 *                                     const uint8_t subclass, const uint8_t protocol);
 *   No USBD_DESC_CONFIG_DEFINE, no USBD_SUPPORTS_HIGH_SPEED.
 *
 * 4.x (from 4.0; read in the 4.1+ files that define or call them):
 *   subsys/usb/device_next/usbd_class.c (usbd_register_class, same 4
 *   arguments, -ENODEV for an unknown name), usbd_config.c
 *   (usbd_add_configuration, -ENOTSUP for USBD_SPEED_HS when
 *   !USBD_SUPPORTS_HIGH_SPEED), app/cdc_acm_serial.c (commits 81eda93,
 *   0ebfc5a and a later one: the macros and functions below, called with
 *   these arities), samples/subsys/usb/common/sample_usbd_init.c (8e542e9):
 *     #define USBD_CONFIGURATION_DEFINE(name, attrib, power, desc_nd)  (PR #76231)
 *     #define USBD_DESC_CONFIG_DEFINE(name, d_string)                 (PR #76231)
 *     USBD_SUPPORTS_HIGH_SPEED: used as a constant expression (usbd_config.c,
 *     usbd_class.c; `#if USBD_SUPPORTS_HIGH_SPEED` in applications), false
 *     with CONFIG_USBD_MAX_SPEED_FULL (PR #76255 added the choice and
 *     CONFIG_USBD_MAX_SPEED, 0 full, 1 high). Its definition was not read;
 *     the stand-in derives it from CONFIG_USBD_MAX_SPEED.
 *     int usbd_register_all_classes(struct usbd_context *const uds_ctx,
 *                                   const enum usbd_speed speed, const uint8_t cfg,
 *                                   const char *const blocklist[]);   (usbd_class.c)
 *   the rest as in 3.7.
 *
 * usbd_register_all_classes in 3.7 was not read (applications of that time
 * call it with three arguments): the 3.7 stand-in leaves it undeclared, so
 * any use fails. The module registers by name instead.
 *
 * Not a model of the stack: the glue's host test supplies behaviour.
 */
#include <stdint.h>

#include <zephyr/device.h>
#include <zephyr/version.h>

enum usbd_speed { USBD_SPEED_FS, USBD_SPEED_HS };
struct usbd_context {
	const struct device *dev;
};
struct usbd_desc_node {
	const char *s;
};
struct usbd_config_node {
	uint8_t attrib, power;
	struct usbd_desc_node *desc;
};
/* include/zephyr/usb/usb_ch9.h */
#define USB_BCC_MISCELLANEOUS 0xEF

#define USBD_DEVICE_DEFINE(device_name, udc_dev, vid, pid)                                      \
	struct usbd_context device_name = {udc_dev}
#define USBD_DESC_LANG_DEFINE(name) static struct usbd_desc_node name = {"lang"}
#define USBD_DESC_MANUFACTURER_DEFINE(d_name, d_string)                                        \
	static struct usbd_desc_node d_name = {d_string}
#define USBD_DESC_PRODUCT_DEFINE(d_name, d_string) static struct usbd_desc_node d_name = {d_string}

#if ZEPHYR_VERSION_CODE >= ZEPHYR_VERSION(3, 7, 99)
#define USBD_DESC_CONFIG_DEFINE(name, d_string) static struct usbd_desc_node name = {d_string}
#define USBD_CONFIGURATION_DEFINE(name, attrib, power, desc_nd)                                 \
	static struct usbd_config_node name = {attrib, power, desc_nd}
/* 0 or 1, from the CONFIG_USBD_MAX_SPEED choice (1 = high speed). */
#define USBD_SUPPORTS_HIGH_SPEED (CONFIG_USBD_MAX_SPEED == 1)
int usbd_register_all_classes(struct usbd_context *const uds_ctx, const enum usbd_speed speed,
			      const uint8_t cfg, const char *const blocklist[]);
#else
#define USBD_CONFIGURATION_DEFINE(name, attrib, power)                                          \
	static struct usbd_config_node name = {attrib, power, NULL}
#endif

int usbd_add_descriptor(struct usbd_context *uds_ctx, struct usbd_desc_node *dn);
int usbd_add_configuration(struct usbd_context *uds_ctx, const enum usbd_speed speed,
			   struct usbd_config_node *cd);
int usbd_register_class(struct usbd_context *uds_ctx, const char *name,
			const enum usbd_speed speed, uint8_t cfg);
int usbd_device_set_code_triple(struct usbd_context *const uds_ctx, const enum usbd_speed speed,
				const uint8_t base_class, const uint8_t subclass,
				const uint8_t protocol);
enum usbd_speed usbd_caps_speed(const struct usbd_context *const uds_ctx);
int usbd_init(struct usbd_context *uds_ctx);
int usbd_enable(struct usbd_context *uds_ctx);
