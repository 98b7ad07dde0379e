/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shell commands: start, stop, status and clear a run from the console, for
 * use without the host tool (the records still leave only over the
 * transport, in stream mode or by a host DRAIN).
 */
#include <string.h>

#include <zephyr/shell/shell.h>

#include "tcmprof_sampler.h"
#include "tcmprof_zephyr.h"

static const char *const status_names[] = {
	[TCMP_OK] = "ok",
	[TCMP_ERR_UNKNOWN] = "unknown command",
	[TCMP_ERR_BAD_ARG] = "bad argument (rate, jitter or fields out of range)",
	[TCMP_ERR_BUSY] = "busy: a run is active or held (stop, then clear)",
	[TCMP_ERR_UNAVAILABLE] = "sampler not ready",
	[TCMP_ERR_MALFORMED] = "malformed",
};

/* Why the host has not taken the sampler's last frame yet. */
static const char sending_note[] = "a frame to the host is waiting for the transport "
				   "(is the host reading the tcmprof port?)";

static int report(const struct shell *sh, const char *what, uint8_t status)
{
	struct tcmp_status st;

	if (status == TCMP_OK) {
		shell_print(sh, "%s: ok", what);
		return 0;
	}
	if (status == TCMP_ERR_BUSY) {
		tcmprof_zephyr_status(&st);
		if (st.sending) {
			shell_error(sh, "%s: busy: %s", what, sending_note);
			return -EBUSY;
		}
	}
	shell_error(sh, "%s: %s", what,
		    status < ARRAY_SIZE(status_names) ? status_names[status] : "error");
	return -EINVAL;
}

static const struct {
	const char *name;
	uint8_t bit;
} field_names[] = {
	{"pc", TCMP_FIELD_PC},
	{"lr", TCMP_FIELD_LR},
	{"exc", TCMP_FIELD_EXC},
	{"thread", TCMP_FIELD_THREAD},
	{"stack", TCMP_FIELD_STACK | TCMP_FIELD_LR}, /* the host unwinds from LR too */
};

/* "pc,lr,thread" -> bit set; PC is always included. Returns -1 on an unknown name. */
static int parse_fields(const char *text)
{
	int fields = TCMP_FIELD_PC;
	const char *p = text;

	while (*p != '\0') {
		size_t len = strcspn(p, ",");
		size_t i;

		for (i = 0; i < ARRAY_SIZE(field_names); i++) {
			if (strlen(field_names[i].name) == len &&
			    strncmp(field_names[i].name, p, len) == 0) {
				fields |= field_names[i].bit;
				break;
			}
		}
		if (i == ARRAY_SIZE(field_names)) {
			return -1;
		}
		p += len;
		if (*p == ',') {
			p++;
		}
	}
	return fields;
}

static uint8_t default_fields(void)
{
	return TCMP_FIELD_PC | (IS_ENABLED(CONFIG_TCMPROF_SAMPLER_FIELD_LR) ? TCMP_FIELD_LR : 0) |
	       (IS_ENABLED(CONFIG_TCMPROF_SAMPLER_FIELD_EXC) ? TCMP_FIELD_EXC : 0) |
	       (IS_ENABLED(CONFIG_TCMPROF_SAMPLER_FIELD_THREAD) ? TCMP_FIELD_THREAD : 0) |
	       (IS_ENABLED(CONFIG_TCMPROF_SAMPLER_FIELD_STACK) ? TCMP_FIELD_STACK : 0);
}

static int cmd_start(const struct shell *sh, size_t argc, char **argv)
{
	struct tcmp_start_args args = {
		.rate_hz = CONFIG_TCMPROF_SAMPLER_DEFAULT_RATE_HZ,
		.jitter_pct = CONFIG_TCMPROF_SAMPLER_JITTER_PCT,
		.fields = default_fields(),
		.mode = IS_ENABLED(CONFIG_TCMPROF_SAMPLER_MODE_STREAM) ? TCMP_MODE_STREAM
								   : TCMP_MODE_SNAPSHOT,
#ifdef CONFIG_TCMPROF_SAMPLER_STACK
		.stack_words = CONFIG_TCMPROF_SAMPLER_STACK_WORDS,
#endif
	};

	if (argc > 1) {
		int err = 0;
		unsigned long rate = shell_strtoul(argv[1], 10, &err);

		if (err != 0 || rate == 0) {
			shell_error(sh, "rate must be a positive number of Hz, not \"%s\"", argv[1]);
			return -EINVAL;
		}
		args.rate_hz = (uint32_t)rate;
	}
	if (argc > 2) {
		int fields = parse_fields(argv[2]);

		if (fields < 0) {
			shell_error(sh, "fields are a comma list of pc, lr, exc, thread, stack, not \"%s\"",
				    argv[2]);
			return -EINVAL;
		}
		args.fields = (uint8_t)fields;
	}
	if (argc > 3) {
		if (strcmp(argv[3], "stream") == 0) {
			args.mode = TCMP_MODE_STREAM;
		} else if (strcmp(argv[3], "snapshot") == 0) {
			args.mode = TCMP_MODE_SNAPSHOT;
		} else {
			shell_error(sh, "mode is snapshot or stream, not \"%s\"", argv[3]);
			return -EINVAL;
		}
	}
	return report(sh, "start", tcmprof_zephyr_start(&args));
}

static int cmd_stop(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	return report(sh, "stop", tcmprof_zephyr_stop());
}

static int cmd_clear(const struct shell *sh, size_t argc, char **argv)
{
	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	return report(sh, "clear", tcmprof_zephyr_clear());
}

static int cmd_status(const struct shell *sh, size_t argc, char **argv)
{
	static const char *const states[] = {"idle", "running", "holding"};
	struct tcmp_status st;
	uint32_t timer_hz = tcmprof_zephyr_timer_hz();

	ARG_UNUSED(argc);
	ARG_UNUSED(argv);
	tcmprof_zephyr_status(&st);
	shell_print(sh, "state %s, mode %s, fields 0x%x, jitter %u%%, stack words %u",
		    st.state < ARRAY_SIZE(states) ? states[st.state] : "?",
		    st.mode == TCMP_MODE_STREAM ? "stream" : "snapshot", st.fields, st.jitter_pct,
		    st.stack_words);
	shell_print(sh, "timer %u Hz, mean interval %u ticks (%u Hz)", timer_hz,
		    st.mean_interval_ticks,
		    st.mean_interval_ticks != 0 ? timer_hz / st.mean_interval_ticks : 0);
	shell_print(sh, "capacity %u records; taken %u, dropped %u, stored %u, held from %u",
		    st.capacity, st.taken, st.dropped, st.stored, st.held_from);
	if (st.sending) {
		shell_print(sh, "%s", sending_note);
	}
	return 0;
}

SHELL_STATIC_SUBCMD_SET_CREATE(tcmprof_cmds,
	SHELL_CMD_ARG(start, NULL,
		      "Start a run: start [rate_hz] [pc,lr,exc,thread,stack] [snapshot|stream]\n"
		      "Defaults come from CONFIG_TCMPROF_SAMPLER_*.",
		      cmd_start, 1, 3),
	SHELL_CMD_ARG(stop, NULL,
		      "Stop the run (a snapshot is then held for DRAIN; a stream sends its end)",
		      cmd_stop, 1, 0),
	SHELL_CMD_ARG(status, NULL, "Show state and counters", cmd_status, 1, 0),
	SHELL_CMD_ARG(clear, NULL, "Release held records (as the host's DONE)", cmd_clear, 1, 0),
	SHELL_SUBCMD_SET_END);

SHELL_CMD_REGISTER(tcmprof, &tcmprof_cmds, "tcmprof PC sampler", NULL);
