/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Zephyr port's glue (src/tcmprof_zephyr.c, src/tcmprof_shell.c) run on
 * the host over fake_zephyr.c: the sampler thread's rounds, the transport
 * and the shell commands, with the simulated threads switched by the test.
 *
 * The point is the lock: a DRAIN to a host that does not read must not hold
 * core_lock while a write waits, so the shell answers meanwhile (a shell
 * command that would wait for the lock aborts the test), and the wait ends
 * after one TX timeout, not one per frame.
 */
/* The naked entry the glue connects exists for Cortex-M only. */
void tcmp_sample_isr(void);

#include "../src/tcmprof_zephyr.c"
#include "../src/tcmprof_shell.c"

#include <stdlib.h>

#include "check.h"
#include "fake_zephyr.h"
#include "wire.h"

/*
 * The note ld/tcmprof_build_id.ld brackets in the image, as ld --build-id
 * writes it (namesz 4, descsz 20, NT_GNU_BUILD_ID, "GNU", the id); the
 * Makefile links __tcmprof_build_id_start/_end to its ends.
 */
const uint8_t test_build_id_note[36] = {4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0,
					0xb1, 0x1d, 0x1d, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
					11, 12, 13, 14, 15, 16};

void tcmp_sample_isr(void)
{
}

static const struct shell sh;

/* A shell command line, run as the shell thread; its output replaces fake.shell_out. */
static int shell(const char *line)
{
	char buf[128];
	char *argv[8];
	size_t argc = 0;
	enum fake_thread_id was = fake.thread;
	int ret = -ENOENT;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *save, *w = strtok_r(buf, " ", &save); w != NULL && argc < 8;
	     w = strtok_r(NULL, " ", &save)) {
		argv[argc++] = w;
	}
	fake.shell_out[0] = '\0';
	fake.thread = FAKE_SHELL;
	for (const struct shell_static_entry *e = tcmprof_cmds_raw; e->syntax != NULL; e++) {
		if (strcmp(e->syntax, argv[0]) == 0) {
			ret = e->handler(&sh, argc, argv);
		}
	}
	fake.thread = was;
	return ret;
}

static void host_command(uint8_t type, const uint8_t *body, size_t len)
{
	struct tcmp_frame f;
	uint8_t wire[TCMP_MAX_ENCODED + 2];

	tcmp_frame_begin(&f, type);
	tcmp_frame_bytes(&f, body, len);
	fake_host_send(wire, tcmp_frame_seal(&f, wire));
}

static void host_drain_all(void)
{
	uint8_t body[8] = {0};

	host_command(TCMP_CMD_DRAIN, body, sizeof(body));
}

/* The sampler thread's start. */
static bool setup(void)
{
	fake.thread = FAKE_SAMPLER;
	bool ok = sampler_setup();

	fake.thread = FAKE_NO_THREAD;
	return ok;
}

/* One round of the sampler thread. */
static void sampler_round(void)
{
	fake.thread = FAKE_SAMPLER;
	sampler_step();
	fake.thread = FAKE_NO_THREAD;
}

/* The frames the host received, checked with the core's COBS and CRC. */
struct host_frames {
	unsigned total, header, data, threads, end, bad;
	uint32_t records, end_next;
};

static struct host_frames host_frames(void)
{
	struct host_frames r = {0};
	uint8_t p[TCMP_MAX_PAYLOAD];
	size_t start = 0;

	for (size_t i = 0; i < fake.to_host_len; i++) {
		if (fake.to_host[i] != 0) {
			continue;
		}
		if (i > start) {
			long n = tcmp_cobs_decode(fake.to_host + start, i - start, p, sizeof(p));

			if (n < 5 || tcmp_crc32(0, p, (size_t)n - 4) != tcmp_get_u32(p + n - 4)) {
				r.bad++;
			} else {
				r.total++;
				r.header += p[0] == TCMP_FRAME_HEADER;
				r.threads += p[0] == TCMP_FRAME_THREADS;
				if (p[0] == TCMP_FRAME_DATA) {
					r.data++;
					r.records += (uint32_t)p[5] | (uint32_t)p[6] << 8;
				}
				if (p[0] == TCMP_FRAME_END) {
					r.end++;
					r.end_next = tcmp_get_u32(p + 6);
				}
			}
		}
		start = i + 1;
	}
	return r;
}

/* ---- the shell while the sampler thread waits for the transport ---------- */

static struct {
	bool run_shell; /* try the shell's commands at the next wait */
	unsigned tx_waits;
	unsigned lock_held_at_wait;
	char status_out[FAKE_TEXT_MAX], start_out[FAKE_TEXT_MAX], clear_out[FAKE_TEXT_MAX],
		stop_out[FAKE_TEXT_MAX];
	int start_ret, clear_ret, stop_ret;
	bool host_reads_during_wait;
} during;

/* Where the sampler thread waits in tcmp_port_write for the host. */
static void on_sem_wait(struct k_sem *sem)
{
	if (sem != &tx_room) {
		return;
	}
	during.tx_waits++;
	if (fake_mutex_owner(&core_lock) != FAKE_NO_THREAD) {
		during.lock_held_at_wait++;
	}
	if (during.run_shell) {
		during.run_shell = false;
		/* Every command a user might try; none may wait for the lock. */
		shell("status");
		snprintf(during.status_out, sizeof(during.status_out), "%s", fake.shell_out);
		during.start_ret = shell("start 1000 pc snapshot");
		snprintf(during.start_out, sizeof(during.start_out), "%s", fake.shell_out);
		during.clear_ret = shell("clear");
		snprintf(during.clear_out, sizeof(during.clear_out), "%s", fake.shell_out);
		during.stop_ret = shell("stop");
		snprintf(during.stop_out, sizeof(during.stop_out), "%s", fake.shell_out);
	}
	if (during.host_reads_during_wait) {
		fake_uart_service(); /* the USB stack moves bytes: tx_room is given */
	}
}

static void test_setup_reads_the_build_id_note(void)
{
	fake_reset();
	CHECK(setup(), "setup failed:\n%s", fake.log);
	CHECK(port_config.build_id == test_build_id_note + 16 && port_config.build_id_len == 20,
	      "build id %p len %u, want the note's descriptor", (const void *)port_config.build_id,
	      port_config.build_id_len);
	CHECK(port_config.timer_hz == 75000000u, "timer %u Hz", port_config.timer_hz);
	CHECK(fake_mutex_owner(&core_lock) == FAKE_NO_THREAD, "core_lock held after setup");
}

static void test_drain_to_a_host_that_stops_reading(void)
{
	fake_reset();
	memset(&during, 0, sizeof(during));
	fake.sem_wait = on_sem_wait;
	fake.host_reading = true;
	CHECK(setup(), "setup failed:\n%s", fake.log);

	/* A snapshot from the shell, filled by the ISR, noticed by a round. */
	CHECK(shell("start 10000 pc snapshot") == 0, "start: %s", fake.shell_out);
	for (uint32_t i = 0; i < TCMP_BUFFER_WORDS + 10; i++) {
		uint32_t frame[8] = {0, 0, 0, 0, 0, 0, 0x60001000u + 2u * (i % 4096u), 0x01000000u};

		tcmp_on_sample(frame, 0xFFFFFFFDu);
	}
	sampler_round();
	shell("status");
	CHECK(fake_count(fake.shell_out, "state holding") == 1, "status:\n%s", fake.shell_out);

	/* The host asks for everything and stops reading. */
	fake.host_reading = false;
	during.run_shell = true;
	host_drain_all();
	sampler_round();
	CHECK(during.tx_waits == 1, "%u waits for the transport, want one (then drops)",
	      during.tx_waits);
	CHECK(during.lock_held_at_wait == 0, "core_lock held during %u of the waits",
	      during.lock_held_at_wait);
	CHECK(fake_count(during.status_out, "state holding") == 1 &&
		      fake_count(during.status_out, "waiting for the transport") == 1,
	      "status while waiting:\n%s", during.status_out);
	CHECK(during.start_ret == -EBUSY &&
		      fake_count(during.start_out, "start: busy: a frame to the host is waiting") == 1,
	      "start while waiting (%d):\n%s", during.start_ret, during.start_out);
	CHECK(during.clear_ret == -EBUSY &&
		      fake_count(during.clear_out, "clear: busy: a frame to the host is waiting") == 1,
	      "clear while waiting (%d):\n%s", during.clear_ret, during.clear_out);
	CHECK(during.stop_ret == 0 && fake_count(during.stop_out, "stop: ok") == 1,
	      "stop while waiting (%d):\n%s", during.stop_ret, during.stop_out);
	CHECK(fake_count(fake.log, "the host stopped reading") == 1, "log:\n%s", fake.log);
	CHECK(fake_mutex_owner(&core_lock) == FAKE_NO_THREAD, "core_lock held after the round");

	/* Nothing was lost: the records are still held. The host reads again,
	 * takes what was queued (a frame's start), and drains again. */
	shell("status");
	CHECK(fake_count(fake.shell_out, "state holding") == 1, "status after:\n%s", fake.shell_out);
	fake.host_reading = true;
	fake_uart_service();
	fake.to_host_len = 0;
	during.host_reads_during_wait = true;
	during.tx_waits = 0;
	host_drain_all();
	sampler_round();
	fake_uart_service();
	struct host_frames r = host_frames();

	CHECK(r.bad == 0 && r.header == 1 && r.end == 1, "%u bad frames, %u HEADER, %u END", r.bad,
	      r.header, r.end);
	CHECK(r.records == TCMP_BUFFER_WORDS && r.end_next == TCMP_BUFFER_WORDS,
	      "%u records in %u DATA frames, END at %u; want %u", r.records, r.data, r.end_next,
	      TCMP_BUFFER_WORDS);
	CHECK(during.tx_waits > 0 && during.lock_held_at_wait == 0,
	      "%u waits, %u of them with core_lock held", during.tx_waits,
	      during.lock_held_at_wait);
	CHECK(fake_count(fake.log, "the host stopped reading") == 1, "log:\n%s", fake.log);

	/* Released from the shell, as the host's DONE would. */
	CHECK(shell("clear") == 0, "clear: %s", fake.shell_out);
	fake.sem_wait = NULL;
}

static struct {
	uint32_t ids[4];
	const uint32_t *tops[4];
	uint32_t sizes[4];
	size_t n;
} listed;

/* As the core's emit: asks for the stack top of the thread just listed. */
static void list_stack_top(void *ctx, uint32_t id, const char *name)
{
	(void)ctx;
	(void)name;
	if (listed.n < 4) {
		listed.ids[listed.n] = id;
		listed.tops[listed.n] = tcmp_port_thread_stack_top(id, &listed.sizes[listed.n]);
		listed.n++;
	}
}

/* The stack top of a listed thread is its stack_info start + size, as the
 * sample path bounds its PSP copies (tcmprof_stack_room.h); an id the
 * list did not give has none. */
static void test_stack_top_is_stack_info_top(void)
{
	fake_reset();
	fake_thread_stacks();
	memset(&listed, 0, sizeof(listed));
	tcmp_port_list_threads(list_stack_top, NULL);
	CHECK(listed.n == 2, "%zu threads listed", listed.n);
	for (size_t i = 0; i < listed.n && i < 2; i++) {
		const struct k_thread *t = fake_thread(i);

		CHECK(listed.ids[i] == (uint32_t)(uintptr_t)t, "thread %zu id %#x", i, listed.ids[i]);
		CHECK(listed.tops[i] == (const uint32_t *)(t->stack_info.start + t->stack_info.size) &&
			      listed.sizes[i] == t->stack_info.size,
		      "thread %zu: top %p size %u, stack_info %#lx + %zu", i, (const void *)listed.tops[i],
		      listed.sizes[i], (unsigned long)t->stack_info.start, t->stack_info.size);
	}
	uint32_t size = 0;

	CHECK(tcmp_port_thread_stack_top(0x1234u, &size) == NULL, "an unknown id has a stack top");
}

int main(void)
{
	static const struct check_test tests[] = {
		{"setup_reads_the_build_id_note", test_setup_reads_the_build_id_note},
		{"drain_to_a_host_that_stops_reading", test_drain_to_a_host_that_stops_reading},
		{"stack_top_is_stack_info_top", test_stack_top_is_stack_info_top},
	};

	return check_run("glue", tests, (int)(sizeof(tests) / sizeof(tests[0])));
}
