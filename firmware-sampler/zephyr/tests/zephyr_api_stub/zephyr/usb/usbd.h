#pragma once
#include <zephyr/device.h>
/* The device_next API as subsys/usb/device_next/app/cdc_acm_serial.c uses it. */
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
#define USB_BCC_MISCELLANEOUS 0xEF
#define USBD_DEVICE_DEFINE(name, udc, vid, pid) struct usbd_context name = {udc}
#define USBD_DESC_LANG_DEFINE(name) struct usbd_desc_node name
#define USBD_DESC_MANUFACTURER_DEFINE(name, str) struct usbd_desc_node name = {str}
#define USBD_DESC_PRODUCT_DEFINE(name, str) struct usbd_desc_node name = {str}
#define USBD_DESC_SERIAL_NUMBER_DEFINE(name) struct usbd_desc_node name
#define USBD_DESC_CONFIG_DEFINE(name, str) struct usbd_desc_node name = {str}
#define USBD_CONFIGURATION_DEFINE(name, attrib, power, desc)                                   \
	struct usbd_config_node name = {attrib, power, desc}
int usbd_add_descriptor(struct usbd_context *ctx, struct usbd_desc_node *node);
int usbd_add_configuration(struct usbd_context *ctx, enum usbd_speed speed,
			   struct usbd_config_node *cfg);
int usbd_register_all_classes(struct usbd_context *ctx, enum usbd_speed speed, uint8_t cfg,
			      const char *const blocklist[]);
int usbd_device_set_code_triple(struct usbd_context *ctx, enum usbd_speed speed, uint8_t base_class,
				uint8_t subclass, uint8_t protocol);
enum usbd_speed usbd_caps_speed(const struct usbd_context *ctx);
int usbd_init(struct usbd_context *ctx);
int usbd_enable(struct usbd_context *ctx);
