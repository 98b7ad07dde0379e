/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Brings up the USB device (device_next) with the tcmprof-sampler snippet's
 * two CDC-ACM ports (console and shell, and the sampler's binary transport)
 * plus the class instances the application names in
 * CONFIG_TCMPROF_USBD_EXTRA_CLASSES (the UDP echo sample's CDC-NCM).
 *
 * Zephyr's CDC_ACM_SERIAL_INITIALIZE_AT_BOOT helper cannot do this: up to
 * the newest release read it registers only "cdc_acm_0", and in every
 * version it calls usbd_init() itself, after which no other function (such
 * as CDC-NCM) can be added. zephyr/README.md says which versions were read.
 *
 * Every instance is registered by name with usbd_register_class(), which
 * fails (-ENODEV) for a name no class defines: a misnamed or missing
 * instance stops the bring-up with a log line instead of a device that
 * enumerates without it. usbd_register_all_classes() would register what
 * the build happens to contain, and takes 3 arguments on 3.7 and 4 later.
 */
#include <string.h>

#include <zephyr/device.h>
#include <zephyr/devicetree.h>
#include <zephyr/init.h>
#include <zephyr/logging/log.h>
#include <zephyr/usb/usbd.h>
#include <zephyr/version.h>

LOG_MODULE_DECLARE(tcmprof, CONFIG_TCMPROF_SAMPLER_LOG_LEVEL);

/*
 * USBD_CONFIGURATION_DEFINE takes a configuration string descriptor after
 * 3.7.0 (Zephyr PR #76231, first released in 4.0); 3.7 takes three
 * arguments and has no USBD_DESC_CONFIG_DEFINE.
 */
#define CONFIGURATION_STRINGS (ZEPHYR_VERSION_CODE >= ZEPHYR_VERSION(3, 7, 99))

/*
 * USBD_SUPPORTS_HIGH_SPEED is 0 when CONFIG_USBD_MAX_SPEED_FULL leaves the
 * high-speed structures out; usbd_add_configuration() then refuses a
 * high-speed configuration (-ENOTSUP) even on a high-speed controller such
 * as the RT1062's. Trees before that choice (PR #76255, 4.0) always build
 * them.
 */
#ifdef USBD_SUPPORTS_HIGH_SPEED
#define HIGH_SPEED_BUILT USBD_SUPPORTS_HIGH_SPEED
#else
#define HIGH_SPEED_BUILT 1
#endif

/* Bus-powered, 250 mA (bMaxPower is in 2 mA units): the Teensy is powered from the host port. */
#define CONFIGURATION_ATTRIBUTES 0
#define MAX_POWER 125

USBD_DEVICE_DEFINE(tcmprof_usbd, DEVICE_DT_GET(DT_NODELABEL(zephyr_udc0)), CONFIG_TCMPROF_USBD_VID,
		   CONFIG_TCMPROF_USBD_PID);

/*
 * No serial number descriptor: its macro and its HWINFO requirement changed
 * between the supported versions, and iSerialNumber 0 is valid for CDC.
 */
USBD_DESC_LANG_DEFINE(tcmprof_lang);
USBD_DESC_MANUFACTURER_DEFINE(tcmprof_mfr, CONFIG_TCMPROF_USBD_MANUFACTURER);
USBD_DESC_PRODUCT_DEFINE(tcmprof_product, CONFIG_TCMPROF_USBD_PRODUCT);

#if CONFIGURATION_STRINGS
USBD_DESC_CONFIG_DEFINE(tcmprof_fs_cfg_desc, "FS Configuration");
USBD_DESC_CONFIG_DEFINE(tcmprof_hs_cfg_desc, "HS Configuration");
USBD_CONFIGURATION_DEFINE(tcmprof_fs_config, CONFIGURATION_ATTRIBUTES, MAX_POWER, &tcmprof_fs_cfg_desc);
USBD_CONFIGURATION_DEFINE(tcmprof_hs_config, CONFIGURATION_ATTRIBUTES, MAX_POWER, &tcmprof_hs_cfg_desc);
#else
USBD_CONFIGURATION_DEFINE(tcmprof_fs_config, CONFIGURATION_ATTRIBUTES, MAX_POWER);
USBD_CONFIGURATION_DEFINE(tcmprof_hs_config, CONFIGURATION_ATTRIBUTES, MAX_POWER);
#endif

/*
 * The CDC-ACM class defines one instance per zephyr,cdc-acm-uart node,
 * named after the node's instance number (cdc_acm_0, cdc_acm_1, ...).
 */
#define DT_DRV_COMPAT zephyr_cdc_acm_uart
#define CDC_ACM_INSTANCE_NAME(inst) "cdc_acm_" STRINGIFY(inst),
static const char *const cdc_acm_instances[] = {DT_INST_FOREACH_STATUS_OKAY(CDC_ACM_INSTANCE_NAME)};

static int register_class(enum usbd_speed speed, const char *name)
{
	int err = usbd_register_class(&tcmprof_usbd, name, speed, 1);

	if (err != 0) {
		LOG_ERR("USB class instance %s: %d%s", name, err,
			err == -ENODEV ? " (no such instance in this build)" : "");
	}
	return err;
}

/* The space-separated names of CONFIG_TCMPROF_USBD_EXTRA_CLASSES. */
static int register_extra_classes(enum usbd_speed speed)
{
	char names[] = CONFIG_TCMPROF_USBD_EXTRA_CLASSES;
	char *save = NULL;
	int err = 0;

	for (char *name = strtok_r(names, " ", &save); name != NULL && err == 0;
	     name = strtok_r(NULL, " ", &save)) {
		err = register_class(speed, name);
	}
	return err;
}

static int add_configuration(enum usbd_speed speed, struct usbd_config_node *config)
{
	int err = usbd_add_configuration(&tcmprof_usbd, speed, config);

	for (size_t i = 0; err == 0 && i < ARRAY_SIZE(cdc_acm_instances); i++) {
		err = register_class(speed, cdc_acm_instances[i]);
	}
	if (err == 0) {
		err = register_extra_classes(speed);
	}
	if (err == 0) {
		/* Several functions with interface association descriptors. */
		err = usbd_device_set_code_triple(&tcmprof_usbd, speed, USB_BCC_MISCELLANEOUS, 0x02,
						  0x01);
	}
	return err;
}

static int tcmprof_usbd_init(void)
{
	int err = usbd_add_descriptor(&tcmprof_usbd, &tcmprof_lang);

	if (err == 0) {
		err = usbd_add_descriptor(&tcmprof_usbd, &tcmprof_mfr);
	}
	if (err == 0) {
		err = usbd_add_descriptor(&tcmprof_usbd, &tcmprof_product);
	}
	if (err == 0 && HIGH_SPEED_BUILT && usbd_caps_speed(&tcmprof_usbd) == USBD_SPEED_HS) {
		err = add_configuration(USBD_SPEED_HS, &tcmprof_hs_config);
	}
	if (err == 0) {
		err = add_configuration(USBD_SPEED_FS, &tcmprof_fs_config);
	}
	if (err == 0) {
		err = usbd_init(&tcmprof_usbd);
	}
	if (err == 0) {
		err = usbd_enable(&tcmprof_usbd);
	}
	if (err != 0) {
		LOG_ERR("USB device setup failed (%d)", err);
	}
	return err;
}

SYS_INIT(tcmprof_usbd_init, APPLICATION, CONFIG_APPLICATION_INIT_PRIORITY);
