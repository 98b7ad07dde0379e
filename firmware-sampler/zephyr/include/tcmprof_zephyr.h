/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Zephyr port's own interface, between its sampler thread and its shell
 * commands. Both serialise their calls into the core through these.
 */
#ifndef TCMPROF_ZEPHYR_H
#define TCMPROF_ZEPHYR_H

#include <stdint.h>

#include "tcmprof_sampler.h"

/*
 * Same as tcmp_start/tcmp_stop/tcmp_get_status, under the port's core lock
 * (they never wait for the transport). A stream stopped here sends its end
 * from the sampler thread within CONFIG_TCMPROF_SAMPLER_POLL_MS.
 */
uint8_t tcmprof_zephyr_start(const struct tcmp_start_args *args);
uint8_t tcmprof_zephyr_stop(void);
void tcmprof_zephyr_status(struct tcmp_status *out);

/*
 * Releases the records of a stopped run (as the DONE command does).
 * Returns TCMP_OK, or TCMP_ERR_BUSY while a run is active or a frame to the
 * host is waiting to be sent.
 */
uint8_t tcmprof_zephyr_clear(void);

/* The sampling timer's clock, Hz (0 until the sampler thread has started). */
uint32_t tcmprof_zephyr_timer_hz(void);

#endif /* TCMPROF_ZEPHYR_H */
