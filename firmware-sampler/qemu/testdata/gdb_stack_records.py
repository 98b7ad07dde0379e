# SPDX-License-Identifier: Apache-2.0
"""Checks the sampler's STACK copy inside the firmware: stops at the entry
of store_stack (in the sampling interrupt, while a STACK run is going),
notes the exception frame (r0), EXC_RETURN (r1) and the slot the record
goes to, lets store_stack run to its return, and writes one JSON line with
the record as stored and what gdb reads at that moment: the memory from
the frame up to K words past the largest frame, the current thread and
its stack bounds, and the interrupt stack's bounds.
firmware-sampler/qemu/stack_gdb_test.go checks the one against the other.

    gdb-multiarch -q -batch -nx tcmprof-demo.elf -x gdb_stack_records.py

with TCMPROF_GDB_TARGET, TCMPROF_GDB_STOPS, TCMPROF_GDB_WORDS (the run's K)
and TCMPROF_GDB_OUT in the environment.
"""
import json
import os

import gdb

U32 = 0xFFFFFFFF


def words(addr, n):
    if n <= 0:
        return []
    mem = bytes(gdb.selected_inferior().read_memory(addr, 4 * n))
    return [int.from_bytes(mem[i:i + 4], "little") for i in range(0, len(mem), 4)]


def value(expr):
    return int(gdb.parse_and_eval(expr)) & U32


def main():
    out = open(os.environ["TCMPROF_GDB_OUT"], "w")
    k = int(os.environ["TCMPROF_GDB_WORDS"])
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    gdb.execute("target remote " + os.environ["TCMPROF_GDB_TARGET"])
    gdb.execute("break store_stack")
    for _ in range(int(os.environ["TCMPROF_GDB_STOPS"])):
        gdb.execute("continue")
        frame, exc_return = value("$r0"), value("$r1")
        slot = value("(unsigned int)isr.stack_slot")
        current = value("(unsigned int)_current")
        thread_lo = value("_current->stack_info.start")
        thread_hi = thread_lo + value("_current->stack_info.size")
        gdb.execute("finish", to_string=True)
        out.write(json.dumps({
            "frame": frame, "exc_return": exc_return, "current": current,
            "thread_lo": thread_lo, "thread_hi": thread_hi,
            "isr_lo": value("(unsigned int)&__stack_start"), "isr_hi": value("(unsigned int)&__stack_top"),
            "record": words(slot, 6 + k), "memory": words(frame, 27 + k)}) + "\n")
        out.flush()
    out.close()
    gdb.execute("kill")


main()
