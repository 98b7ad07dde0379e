/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tcmtrace: a QEMU TCG plugin that streams what the guest executed, for
 * tcmprof's instruction-cache model (docs/sim.md). The trace format is in
 * README.md next to this file; the Go reader is github.com/tcmprof/tcmprof/sim.
 *
 *   qemu-system-arm ... -icount shift=3,align=off \
 *       -plugin tcmtrace.so,out=PATH[,marker=ADDR,from=K,to=M][,exit=on][,buildid=HEX]
 *
 * It is kept dumb and fast: at translation time it writes one BLOCK record
 * (the block's instruction addresses and sizes) and asks for a callback at
 * the block's start; each execution then costs one 4-byte EXEC record in a
 * buffer. The only subtlety is a block that QEMU abandons part-way (see
 * on_single_mem): the plugin says so with a CUT record and the reader
 * shortens that execution.
 *
 * Window: with marker=ADDR, an execution of a block holding the instruction
 * at ADDR is an entry of the marker. Recording starts with the block that
 * makes the from-th entry (from=0: at reset) and ends after the one that
 * makes the to-th (to=0: never); the plugin then writes END, closes the
 * output (a FIFO reader sees end of file) and, with exit=on, asks QEMU to
 * terminate.
 *
 * Debian packages QEMU 7.2 without qemu-plugin.h, so the few types and
 * functions used here are declared below as QEMU 7.2's
 * include/qemu/qemu-plugin.h (plugin API version 1) defines them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- The subset of QEMU's plugin API (qemu-plugin.h, API version 1). ---- */

typedef uint64_t qemu_plugin_id_t;

typedef struct {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus;
			int max_vcpus;
		} system;
	};
} qemu_info_t;

struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef uint32_t qemu_plugin_meminfo_t;

enum qemu_plugin_cb_flags {
	QEMU_PLUGIN_CB_NO_REGS,
	QEMU_PLUGIN_CB_R_REGS,
	QEMU_PLUGIN_CB_RW_REGS,
};

enum qemu_plugin_mem_rw {
	QEMU_PLUGIN_MEM_R = 1,
	QEMU_PLUGIN_MEM_W,
	QEMU_PLUGIN_MEM_RW,
};

typedef void (*qemu_plugin_simple_cb_t)(qemu_plugin_id_t id);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
					  uint64_t vaddr, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
				      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
				      void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_uninstall(qemu_plugin_id_t id, qemu_plugin_simple_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);

#define EXPORT __attribute__((visibility("default")))

EXPORT int qemu_plugin_version = 1;

/* ---- Trace records (README.md). ---- */

#define TRACE_MAGIC "TCMTRACE"
#define TRACE_MAJOR 1u
#define TRACE_MINOR 0u
#define TAG_BLOCK 0x80000000u
#define TAG_CUT 0x90000000u
#define TAG_END 0xF0000000u
#define MAX_BLOCK_ID 0x7FFFFFFFu
#define MAX_BLOCK_INSNS 0x0FFFFFFFu
#define MAX_BUILD_ID 64u

/* 1 MB of words: large writes, and a FIFO reader rarely waits on a flush. */
#define BUF_WORDS (256u * 1024u)

static struct {
	int fd;
	const char *path;
	bool recording, done, exit_qemu;
	bool have_marker;
	uint64_t marker;
	uint64_t from, to; /* marker entries; to == 0: no end */
	uint64_t entries;  /* marker entries so far */
	uint32_t next_id;  /* ids in translation order */
	uint32_t last_exec; /* block of the latest execution callback */
	uint64_t execs, cuts, blocks;
	uint32_t n;
	uint32_t buf[BUF_WORDS];
} tr;

static qemu_plugin_id_t self;

static void finish(void);

static void flush(void)
{
	const char *p = (const char *)tr.buf;
	size_t left = (size_t)tr.n * 4u;
	tr.n = 0;
	while (left > 0 && tr.fd >= 0) {
		ssize_t w = write(tr.fd, p, left);
		if (w < 0 && errno == EINTR) {
			continue;
		}
		if (w <= 0) {
			/* The reader went away (EPIPE: it had all it wanted) or the
			 * disk is full: stop recording; the trace has no END, which
			 * a reader that wanted more reports. */
			fprintf(stderr, "tcmtrace: writing %s: %s; recording stopped\n", tr.path,
				w < 0 ? strerror(errno) : "short write");
			close(tr.fd);
			tr.fd = -1;
			tr.recording = false;
			tr.done = true;
			if (tr.exit_qemu) {
				kill(getpid(), SIGTERM);
			}
			return;
		}
		p += w;
		left -= (size_t)w;
	}
}

static inline void put(uint32_t w)
{
	tr.buf[tr.n++] = w;
	if (tr.n == BUF_WORDS) {
		flush();
	}
}

static void put_u64(uint64_t v)
{
	put((uint32_t)v);
	put((uint32_t)(v >> 32));
}

/* An execution of a block without the marker. */
static void on_exec(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	uint32_t id = (uint32_t)(uintptr_t)udata;
	tr.last_exec = id;
	if (tr.recording) {
		put(id);
		tr.execs++;
	}
}

/* An execution of a block that holds the marker: counts an entry and
 * opens or closes the window. */
static void on_marker_exec(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	uint32_t id = (uint32_t)(uintptr_t)udata;
	tr.last_exec = id;
	tr.entries++;
	if (!tr.recording && !tr.done && tr.entries == tr.from) {
		tr.recording = true;
	}
	if (tr.recording) {
		put(id);
		tr.execs++;
		if (tr.to != 0 && tr.entries >= tr.to) {
			finish();
		}
	}
}

/*
 * Under -icount QEMU lets a block touch I/O (an MMIO register) only in its
 * last instruction. When an earlier instruction does, QEMU abandons the
 * block at that instruction (cpu_io_recompile: the instructions before it
 * have run, the rest has not), runs the I/O instruction alone in a new
 * one-instruction block that carries memory callbacks only (CF_MEMI_ONLY:
 * no execution callback), and resumes after it. The execution callback of
 * the abandoned block has already counted all of it. So every
 * one-instruction block gets a memory callback: if the latest execution
 * callback was not this block's own, the block ran as such a memory-only
 * re-execution, and a CUT record tells the reader to end the previous
 * execution before this instruction and count this one instead.
 */
static void on_single_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
	(void)vcpu;
	(void)info;
	(void)vaddr;
	uint32_t id = (uint32_t)(uintptr_t)udata;
	if (tr.last_exec == id) {
		return; /* its own execution callback ran: a normal block */
	}
	tr.last_exec = id; /* an instruction with several accesses cuts once */
	if (tr.recording) {
		put(TAG_CUT);
		put(id);
		tr.cuts++;
	}
}

/*
 * The size of a Thumb instruction, from its first halfword (a 32-bit
 * encoding starts with 0b11101, 0b11110 or 0b11111). qemu_plugin_insn_size
 * is not used: QEMU 7.2's Thumb translator reads the next halfword near
 * the end of a 1 KB page (insn_crosses_page) and that read is added to the
 * instruction before it, which would then claim 6 bytes.
 */
static uint32_t thumb_size(struct qemu_plugin_insn *insn)
{
	const uint8_t *p = qemu_plugin_insn_data(insn);
	uint16_t h = (uint16_t)(p[0] | p[1] << 8);
	return (h >> 11) >= 0x1Du ? 4u : 2u;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	size_t n = qemu_plugin_tb_n_insns(tb);
	if (tr.done || n == 0 || n > MAX_BLOCK_INSNS || tr.next_id > MAX_BLOCK_ID) {
		return;
	}
	uint32_t bid = tr.next_id++;
	uint64_t start = qemu_plugin_tb_vaddr(tb);
	put(TAG_BLOCK | (uint32_t)n);
	put(bid);
	put((uint32_t)start);
	bool marker = false;
	uint32_t sizes = 0;
	uint64_t addr = start;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
		if (vaddr != addr) {
			/* The format holds a block as a start and sizes. */
			fprintf(stderr, "tcmtrace: block at 0x%08llx: instruction %zu at 0x%08llx, not 0x%08llx; recording stopped\n",
				(unsigned long long)start, i, (unsigned long long)vaddr, (unsigned long long)addr);
			tr.done = true;
			tr.recording = false;
			return;
		}
		uint32_t size = thumb_size(insn);
		addr += size;
		marker |= tr.have_marker && vaddr == tr.marker;
		sizes |= size << (8u * (i % 4u));
		if (i % 4u == 3u || i == n - 1) {
			put(sizes);
			sizes = 0;
		}
	}
	tr.blocks++;
	void *udata = (void *)(uintptr_t)bid;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, marker ? on_marker_exec : on_exec,
					     QEMU_PLUGIN_CB_NO_REGS, udata);
	if (n == 1) {
		qemu_plugin_register_vcpu_mem_cb(qemu_plugin_tb_get_insn(tb, 0), on_single_mem,
						 QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, udata);
	}
}

static void uninstalled(qemu_plugin_id_t id)
{
	(void)id;
}

/* Ends the trace: END, flush, close; then optionally ends QEMU. */
static void finish(void)
{
	if (tr.fd < 0) {
		return;
	}
	tr.recording = false;
	tr.done = true;
	put(TAG_END);
	put_u64(tr.execs);
	put_u64(tr.blocks);
	put_u64(tr.cuts);
	flush();
	if (tr.fd >= 0) {
		close(tr.fd);
		tr.fd = -1;
	}
	if (tr.exit_qemu) {
		/* QEMU's own SIGTERM handling shuts the machine down cleanly
		 * from its main loop; exit() here, on the vCPU thread, would not. */
		kill(getpid(), SIGTERM);
	} else {
		/* Nothing more to record: let the guest run uninstrumented. */
		qemu_plugin_uninstall(self, uninstalled);
	}
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	finish();
}

static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-') {
		return false;
	}
	*v = x;
	return true;
}

static int hex_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Header: magic, version, build-id (as given, for the reader to check). */
static bool write_header(const char *build_id_hex)
{
	uint8_t id[MAX_BUILD_ID] = {0};
	size_t len = strlen(build_id_hex);
	if (len % 2 != 0 || len / 2 > MAX_BUILD_ID) {
		return false;
	}
	for (size_t i = 0; i < len / 2; i++) {
		int hi = hex_nibble(build_id_hex[2 * i]), lo = hex_nibble(build_id_hex[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			return false;
		}
		id[i] = (uint8_t)(hi << 4 | lo);
	}
	uint32_t w[2];
	memcpy(w, TRACE_MAGIC, 8);
	put(w[0]);
	put(w[1]);
	put(TRACE_MAJOR << 16 | TRACE_MINOR);
	put((uint32_t)(len / 2));
	for (size_t i = 0; i < (len / 2 + 3) / 4; i++) {
		uint32_t word;
		memcpy(&word, id + 4 * i, 4);
		put(word);
	}
	return true;
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	(void)info;
	self = id;
	tr.fd = -1;
	const char *build_id = "";
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (eq == NULL) {
			fprintf(stderr, "tcmtrace: argument %s is not NAME=VALUE\n", argv[i]);
			return -1;
		}
		size_t klen = (size_t)(eq - argv[i]);
		const char *v = eq + 1;
		bool ok = true;
		if (klen == 3 && strncmp(argv[i], "out", 3) == 0) {
			tr.path = v;
		} else if (klen == 6 && strncmp(argv[i], "marker", 6) == 0) {
			ok = parse_u64(v, &tr.marker);
			tr.have_marker = true;
		} else if (klen == 4 && strncmp(argv[i], "from", 4) == 0) {
			ok = parse_u64(v, &tr.from);
		} else if (klen == 2 && strncmp(argv[i], "to", 2) == 0) {
			ok = parse_u64(v, &tr.to);
		} else if (klen == 4 && strncmp(argv[i], "exit", 4) == 0) {
			ok = strcmp(v, "on") == 0 || strcmp(v, "off") == 0;
			tr.exit_qemu = strcmp(v, "on") == 0;
		} else if (klen == 7 && strncmp(argv[i], "buildid", 7) == 0) {
			build_id = v;
		} else {
			fprintf(stderr, "tcmtrace: unknown argument %s (out, marker, from, to, exit, buildid)\n",
				argv[i]);
			return -1;
		}
		if (!ok) {
			fprintf(stderr, "tcmtrace: bad value in %s\n", argv[i]);
			return -1;
		}
	}
	if (tr.path == NULL) {
		fprintf(stderr, "tcmtrace: out=PATH is required\n");
		return -1;
	}
	if ((tr.from != 0 || tr.to != 0) && !tr.have_marker) {
		fprintf(stderr, "tcmtrace: from= and to= count entries of marker=ADDR\n");
		return -1;
	}
	if (tr.to != 0 && tr.to <= tr.from) {
		fprintf(stderr, "tcmtrace: to=%llu must be above from=%llu\n", (unsigned long long)tr.to,
			(unsigned long long)tr.from);
		return -1;
	}
	if (!write_header(build_id)) {
		fprintf(stderr, "tcmtrace: buildid=%s is not up to %u bytes of hex\n", build_id, MAX_BUILD_ID);
		return -1;
	}
	/* A FIFO blocks here until its reader opens it. */
	tr.fd = open(tr.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (tr.fd < 0) {
		fprintf(stderr, "tcmtrace: %s: %s\n", tr.path, strerror(errno));
		return -1;
	}
	tr.recording = tr.from == 0;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
