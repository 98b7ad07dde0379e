/* SPDX-License-Identifier: Apache-2.0 */
/* Code the image already keeps in ITCM; it calls into flash (a veneer the
   plan can make unnecessary by moving util_mid). */
#include "util.h"
__attribute__((noinline, section(".itcm.fast"))) int fast(int x) { return util_mid(x) + util_cold(x); }
