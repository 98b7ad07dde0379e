/* SPDX-License-Identifier: Apache-2.0 */
/* _kernel with the shape include/zephyr/kernel_structs.h gives it. */
#include <stdint.h>
struct k_thread;
struct _cpu {
	struct k_thread *current;
};
struct z_kernel {
	struct _cpu cpus[1];
};
extern struct z_kernel _kernel;
