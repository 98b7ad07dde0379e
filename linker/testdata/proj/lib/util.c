/* SPDX-License-Identifier: Apache-2.0 */
#include "../util.h"
int util_hot(int x) { return util_mid(x) * 2 + 1; }
int util_mid(int x) { return x * x; }
int util_cold(int x) { return x - 1; }
