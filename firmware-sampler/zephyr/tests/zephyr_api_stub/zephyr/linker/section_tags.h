/* SPDX-License-Identifier: Apache-2.0 */
#define __itcm_section __attribute__((section(".itcm")))
#define __dtcm_bss_section __attribute__((section(".dtcm_bss")))
