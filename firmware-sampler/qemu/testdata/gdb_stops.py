# SPDX-License-Identifier: Apache-2.0
"""Stops the demo firmware at random moments through QEMU's gdbstub and
writes, per stop, one JSON line: the registers a sample holds (pc, sp, lr,
xpsr), up to WORDS words of the stack above sp (never past the top of the
stack sp is in: the current thread's stack_info, or the interrupt stack),
the current thread, the top of its stack and the 32 words below it, and
gdb's own backtrace with each frame's function, file, line, kind
(normal, inline, tailcall: rebuilt from DWARF call-site data, signal: an
exception entry) and stack pointer. firmware-sampler/qemu/unwind_gdb_test.go unwinds the same
registers and memory and compares.

    gdb-multiarch -q -batch -nx tcmprof-demo.elf -x gdb_stops.py

with TCMPROF_GDB_TARGET (host:port), TCMPROF_GDB_STOPS, TCMPROF_GDB_SEED,
TCMPROF_GDB_WORDS and TCMPROF_GDB_OUT in the environment.
"""
import json
import os
import random
import signal
import threading

import gdb

U32 = 0xFFFFFFFF
ROOT_WORDS = 32


def reg(frame, name):
    return int(frame.read_register(name)) & U32


def symbol_address(name):
    return int(gdb.parse_and_eval("(unsigned int)&" + name)) & U32


def stack_bounds(sp, xpsr):
    """[lo, hi) of the stack sp lies in, or None."""
    if xpsr & 0x1FF == 0:
        info = gdb.parse_and_eval("_current")["stack_info"]
        lo = int(info["start"]) & U32
        hi = lo + (int(info["size"]) & U32)
        if lo <= sp <= hi:
            return lo, hi
    lo, hi = symbol_address("__stack_start"), symbol_address("__stack_top")
    if lo <= sp <= hi:
        return lo, hi
    return None


def backtrace():
    frames = []
    f = gdb.newest_frame()
    while f is not None and len(frames) < 64:
        kind = f.type()
        entry = {"pc": f.pc() & U32, "sp": reg(f, "sp")}
        if kind == gdb.SIGTRAMP_FRAME:
            entry["kind"] = "signal"
        else:
            entry["kind"] = {gdb.INLINE_FRAME: "inline", gdb.TAILCALL_FRAME: "tailcall"}.get(kind, "normal")
            sal = f.find_sal()
            entry["function"] = f.name() or ""
            entry["file"] = sal.symtab.filename if sal.symtab else ""
            entry["line"] = sal.line
        frames.append(entry)
        try:
            f = f.older()
        except gdb.error:
            break
    return frames


def stop_at_random_moment(rng):
    """Lets the target run and stops it at a moment that has nothing to do
    with what the firmware is doing: a SIGINT to gdb interrupts the target,
    as ^C would. On a busy host gdb may not have resumed the target yet when
    the signal comes (starting the timer's thread alone can take longer than
    its interval); it then interrupts this script instead (KeyboardInterrupt,
    which would end it, and gdb with status 0), and the stop is tried
    again. A signal that comes while gdb is still resuming the target can
    also be lost, leaving the target running for good (seen on a loaded
    host: 218 of 300 stops, then nothing for ten minutes), so the signal is
    sent again every half second until the target has stopped."""
    while True:
        stopped = threading.Event()
        first = rng.uniform(0.005, 0.04)

        def interrupt():
            delay = first
            while not stopped.wait(delay):
                os.kill(os.getpid(), signal.SIGINT)
                delay = 0.5

        sender = threading.Thread(target=interrupt)
        try:
            sender.start()
            gdb.execute("continue")
            return
        except KeyboardInterrupt:
            pass
        finally:
            stopped.set()
            sender.join()


def stop(rng):
    """stop_at_random_moment, again if a late resent signal interrupts the
    script after the target stopped (the target is then stopped; it runs
    on to another moment)."""
    while True:
        try:
            stop_at_random_moment(rng)
            return
        except KeyboardInterrupt:
            pass


def main():
    out = open(os.environ["TCMPROF_GDB_OUT"], "w")
    stops = int(os.environ["TCMPROF_GDB_STOPS"])
    words = int(os.environ["TCMPROF_GDB_WORDS"])
    rng = random.Random(int(os.environ["TCMPROF_GDB_SEED"]))
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    gdb.execute("target remote " + os.environ["TCMPROF_GDB_TARGET"])
    for _ in range(stops):
        stop(rng)
        f = gdb.newest_frame()
        pc, sp, lr, xpsr = reg(f, "pc"), reg(f, "sp"), reg(f, "lr"), reg(f, "xpsr")
        bounds = stack_bounds(sp, xpsr)
        record = {"pc": pc, "sp": sp, "lr": lr, "xpsr": xpsr, "words": [], "at_top": False}
        if bounds is not None:
            n = min(words, (bounds[1] - sp) // 4)
            mem = bytes(gdb.selected_inferior().read_memory(sp, 4 * n)) if n else b""
            record["words"] = [int.from_bytes(mem[i:i + 4], "little") for i in range(0, len(mem), 4)]
            record["at_top"] = n < words
            record["stack_top"] = bounds[1]
        # The thread and the top of its stack, as a sampler knows them:
        # the test completes stacks across stops of one thread, and from
        # the words below its stack's top (ROOT_WORDS of them).
        cur = gdb.parse_and_eval("_current")
        if int(cur) != 0:  # 0 before the first thread
            info = cur["stack_info"]
            top = (int(info["start"]) + int(info["size"])) & U32
            record["thread"] = int(cur) & U32
            record["thread_top"] = top
            mem = bytes(gdb.selected_inferior().read_memory(top - 4 * ROOT_WORDS, 4 * ROOT_WORDS))
            record["root"] = [int.from_bytes(mem[i:i + 4], "little") for i in range(0, len(mem), 4)]
        record["frames"] = backtrace()
        out.write(json.dumps(record) + "\n")
        out.flush()
    out.close()
    gdb.execute("kill")


main()
