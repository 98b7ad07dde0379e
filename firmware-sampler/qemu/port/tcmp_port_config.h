/*
 * Build options of the sampler core for the QEMU port, passed to every
 * sampler source as -DTCMP_PORT_CONFIG_HEADER='"tcmp_port_config.h"'.
 *
 * The core's default sections put the sample path in ITCM
 * (.itcm_text.tcmp) and its buffer in DTCM (.dtcm_bss.tcmp), which
 * ld/teensy_qemu.ld places. The timer hook stays a function
 * (tcmp_port_timer_ack_next in sampler_port.c, also in ITCM); the thread
 * hook is an inline load.
 */
#ifndef QEMU_TCMP_PORT_CONFIG_H
#define QEMU_TCMP_PORT_CONFIG_H

#include <stdint.h>

#include "cmsdk.h"

/* The demo kernel's running thread; the pointer itself lives in DTCM. */
struct k_thread;
extern struct k_thread *volatile _current;
#define TCMP_PORT_CURRENT_THREAD() ((uint32_t)(uintptr_t)_current)

#endif
