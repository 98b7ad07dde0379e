/* SPDX-License-Identifier: Apache-2.0 */
/* As Zephyr's include/zephyr/toolchain/zephyr_stdint.h (passed with -imacros):
 * 32-bit integer types are int, so "%u" prints uint32_t. */
#undef __INT32_TYPE__
#undef __UINT32_TYPE__
#undef __INT_LEAST32_TYPE__
#undef __UINT_LEAST32_TYPE__
#define __INT32_TYPE__ int
#define __UINT32_TYPE__ unsigned int
#define __INT_LEAST32_TYPE__ __INT32_TYPE__
#define __UINT_LEAST32_TYPE__ __UINT32_TYPE__
