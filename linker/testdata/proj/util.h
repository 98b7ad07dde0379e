/* SPDX-License-Identifier: Apache-2.0 */
int util_hot(int x);
int util_cold(int x);
int util_mid(int x);
