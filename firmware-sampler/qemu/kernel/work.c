/* SPDX-License-Identifier: Apache-2.0 */
/* A work queue: one thread running submitted items in order (Zephyr's k_work_q). */
#include "kernel.h"

void k_work_init(struct k_work *work, k_work_handler_t handler)
{
	work->fifo_link = NULL;
	work->handler = handler;
	work->pending = false;
}

bool k_work_submit_to_queue(struct k_work_q *q, struct k_work *work)
{
	uint32_t key = irq_lock();
	bool queue_it = !work->pending;
	work->pending = true;
	irq_unlock(key);
	if (queue_it) {
		k_fifo_put(&q->queue, work);
	}
	return queue_it;
}

static void work_queue_main(void *arg)
{
	struct k_work_q *q = arg;
	for (;;) {
		struct k_work *work = k_fifo_get(&q->queue, K_FOREVER);
		work->pending = false;
		work->handler(work);
		k_yield();
	}
}

void k_work_queue_start(struct k_work_q *q, const char *name, void *stack, size_t stack_size)
{
	k_fifo_init(&q->queue);
	k_thread_create(&q->thread, name, stack, stack_size, work_queue_main, q);
}
