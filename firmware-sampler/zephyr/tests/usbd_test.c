/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The module's USB bring-up (src/tcmprof_usbd.c) on the host, against a
 * fake device_next that behaves as the sources read say (zephyr/README.md):
 * usbd_register_class() fails with -ENODEV for a name no class defines
 * (subsys/usb/device_next/usbd_class.c); usbd_add_configuration() refuses a
 * high-speed configuration with -ENOTSUP when the stack is built for full
 * speed only or the controller cannot do high speed (usbd_config.c).
 * Built once per simulated tree: 3.7 (no USBD_MAX_SPEED choice), 4.x high
 * speed, 4.x CONFIG_USBD_MAX_SPEED_FULL.
 */
#include "../src/tcmprof_usbd.c"

#include <stdarg.h>
#include <stdio.h>

#include "check.h"
#include "fake_zephyr.h"

/* What the stack was built for: USBD_SUPPORTS_HIGH_SPEED, or always on 3.7. */
#ifdef USBD_SUPPORTS_HIGH_SPEED
#define STACK_HIGH_SPEED USBD_SUPPORTS_HIGH_SPEED
#else
#define STACK_HIGH_SPEED 1
#endif

static struct {
	enum usbd_speed controller;
	const char *const *instances; /* class instances the build defines */
	char calls[4096];
} usb;

static void call(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void call(const char *fmt, ...)
{
	va_list ap;
	size_t len = strlen(usb.calls);

	va_start(ap, fmt);
	vsnprintf(usb.calls + len, sizeof(usb.calls) - len, fmt, ap);
	va_end(ap);
}

static const char *speed_name(enum usbd_speed speed)
{
	return speed == USBD_SPEED_HS ? "hs" : "fs";
}

int usbd_add_descriptor(struct usbd_context *uds_ctx, struct usbd_desc_node *dn)
{
	(void)uds_ctx;
	call("desc %s;", dn->s);
	return 0;
}

int usbd_add_configuration(struct usbd_context *uds_ctx, const enum usbd_speed speed,
			   struct usbd_config_node *cd)
{
	(void)uds_ctx;
	(void)cd;
	if (speed == USBD_SPEED_HS && (!STACK_HIGH_SPEED || usb.controller == USBD_SPEED_FS)) {
		call("config %s refused;", speed_name(speed));
		return -ENOTSUP;
	}
	call("config %s;", speed_name(speed));
	return 0;
}

int usbd_register_class(struct usbd_context *uds_ctx, const char *name,
			const enum usbd_speed speed, uint8_t cfg)
{
	(void)uds_ctx;
	for (const char *const *i = usb.instances; *i != NULL; i++) {
		if (strcmp(*i, name) == 0) {
			call("class %s %s %u;", speed_name(speed), name, cfg);
			return 0;
		}
	}
	return -ENODEV;
}

int usbd_device_set_code_triple(struct usbd_context *const uds_ctx, const enum usbd_speed speed,
				const uint8_t base_class, const uint8_t subclass,
				const uint8_t protocol)
{
	(void)uds_ctx;
	call("triple %s %02x/%02x/%02x;", speed_name(speed), base_class, subclass, protocol);
	return 0;
}

enum usbd_speed usbd_caps_speed(const struct usbd_context *const uds_ctx)
{
	(void)uds_ctx;
	return usb.controller;
}

int usbd_init(struct usbd_context *uds_ctx)
{
	(void)uds_ctx;
	call("init;");
	return 0;
}

int usbd_enable(struct usbd_context *uds_ctx)
{
	(void)uds_ctx;
	call("enable;");
	return 0;
}

/* The snippet's two CDC-ACM ports and the sample's NCM interface. */
static const char *const sample_instances[] = {"cdc_acm_0", "cdc_acm_1", "cdc_ncm_0", NULL};

#define DESCRIPTORS "desc lang;desc tcmprof;desc tcmprof sampler;"
#define FUNCTIONS(s)                                                                           \
	"config " s ";class " s " cdc_acm_0 1;class " s " cdc_acm_1 1;class " s " cdc_ncm_0 1;"  \
	"triple " s " ef/02/01;"

static void bring_up(enum usbd_speed controller, const char *const *instances)
{
	fake_reset();
	memset(&usb, 0, sizeof(usb));
	usb.controller = controller;
	usb.instances = instances;
	usb.calls[0] = '\0';
}

static void test_high_speed_controller(void)
{
	bring_up(USBD_SPEED_HS, sample_instances);
	int err = tcmprof_usbd_init();
	/* A stack built without high speed gets the full-speed configuration only. */
	const char *want = STACK_HIGH_SPEED ? DESCRIPTORS FUNCTIONS("hs") FUNCTIONS("fs") "init;enable;"
					    : DESCRIPTORS FUNCTIONS("fs") "init;enable;";

	CHECK(err == 0, "init returned %d; log:\n%s", err, fake.log);
	CHECK(strcmp(usb.calls, want) == 0, "calls\n  %s\nwant\n  %s", usb.calls, want);
}

static void test_full_speed_controller(void)
{
	bring_up(USBD_SPEED_FS, sample_instances);
	int err = tcmprof_usbd_init();
	const char *want = DESCRIPTORS FUNCTIONS("fs") "init;enable;";

	CHECK(err == 0, "init returned %d; log:\n%s", err, fake.log);
	CHECK(strcmp(usb.calls, want) == 0, "calls\n  %s\nwant\n  %s", usb.calls, want);
}

static void test_missing_instance_stops_the_bring_up(void)
{
	static const char *const no_ncm[] = {"cdc_acm_0", "cdc_acm_1", NULL};

	bring_up(USBD_SPEED_FS, no_ncm);
	int err = tcmprof_usbd_init();

	CHECK(err == -ENODEV, "init returned %d, want -ENODEV", err);
	CHECK(strstr(usb.calls, "init;") == NULL, "the device was initialised without cdc_ncm_0: %s",
	      usb.calls);
	CHECK(fake_count(fake.log, "USB class instance cdc_ncm_0: -19 (no such instance in this build)") == 1,
	      "log:\n%s", fake.log);
}

int main(void)
{
	static const struct check_test tests[] = {
		{"high_speed_controller", test_high_speed_controller},
		{"full_speed_controller", test_full_speed_controller},
		{"missing_instance_stops_the_bring_up", test_missing_instance_stops_the_bring_up},
	};
	char suite[64];

	snprintf(suite, sizeof(suite), "usbd-%s", STANDIN_VARIANT);
	return check_run(suite, tests, (int)(sizeof(tests) / sizeof(tests[0])));
}
