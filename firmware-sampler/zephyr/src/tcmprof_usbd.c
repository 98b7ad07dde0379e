/*
 * Brings up the USB device (device_next) with every class instance the
 * devicetree defines: the console and transport CDC-ACM ports of the
 * tcmprof-sampler snippet, plus e.g. an application's CDC-NCM interface.
 *
 * Zephyr's own CDC_ACM_SERIAL_INITIALIZE_AT_BOOT helper
 * (subsys/usb/device_next/app/cdc_acm_serial.c) registers only the first
 * CDC-ACM instance, so it cannot carry the second, binary, port.
 */
#include <zephyr/device.h>
#include <zephyr/init.h>
#include <zephyr/logging/log.h>
#include <zephyr/usb/usbd.h>

LOG_MODULE_DECLARE(tcmprof, CONFIG_TCMPROF_SAMPLER_LOG_LEVEL);

USBD_DEVICE_DEFINE(tcmprof_usbd, DEVICE_DT_GET(DT_NODELABEL(zephyr_udc0)), CONFIG_TCMPROF_USBD_VID,
		   CONFIG_TCMPROF_USBD_PID);

USBD_DESC_LANG_DEFINE(tcmprof_lang);
USBD_DESC_MANUFACTURER_DEFINE(tcmprof_mfr, CONFIG_TCMPROF_USBD_MANUFACTURER);
USBD_DESC_PRODUCT_DEFINE(tcmprof_product, CONFIG_TCMPROF_USBD_PRODUCT);
IF_ENABLED(CONFIG_HWINFO, (USBD_DESC_SERIAL_NUMBER_DEFINE(tcmprof_sn)));

USBD_DESC_CONFIG_DEFINE(tcmprof_fs_cfg_desc, "FS Configuration");
USBD_DESC_CONFIG_DEFINE(tcmprof_hs_cfg_desc, "HS Configuration");

/* Bus-powered, 250 mA: the Teensy is powered from the host port. */
USBD_CONFIGURATION_DEFINE(tcmprof_fs_config, 0, 125, &tcmprof_fs_cfg_desc);
USBD_CONFIGURATION_DEFINE(tcmprof_hs_config, 0, 125, &tcmprof_hs_cfg_desc);

static int add_configuration(enum usbd_speed speed, struct usbd_config_node *config)
{
	int err = usbd_add_configuration(&tcmprof_usbd, speed, config);

	if (err == 0) {
		err = usbd_register_all_classes(&tcmprof_usbd, speed, 1, NULL);
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
	IF_ENABLED(CONFIG_HWINFO, (
		if (err == 0) {
			err = usbd_add_descriptor(&tcmprof_usbd, &tcmprof_sn);
		}
	))
	if (err == 0 && usbd_caps_speed(&tcmprof_usbd) == USBD_SPEED_HS) {
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
