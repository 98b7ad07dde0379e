/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdint.h>
/* hal_nxp RT1060 fsl_clock.h / MIMXRT1062.h names the glue uses. */
typedef enum { kCLOCK_Pit = (1 << 8) | 12 } clock_ip_name_t;
typedef enum { kCLOCK_CpuClk, kCLOCK_PerClk } clock_name_t;
typedef enum { PIT_IRQn = 122 } IRQn_Type;
void CLOCK_EnableClock(clock_ip_name_t name);
uint32_t CLOCK_GetFreq(clock_name_t name);
