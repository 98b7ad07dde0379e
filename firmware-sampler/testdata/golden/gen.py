#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Golden vectors of the tcmprof wire protocol (docs/protocol.md), v1.3.

Written from the spec alone, independently of the C encoder (core/) and the
Go decoder (sample/): both test suites compare their bytes with the files
this script writes.

    python3 gen.py          rewrite *.bin and vectors.json here
    python3 gen.py --check  exit 1 if any file differs from what it would write

vectors.json gives the protocol's size limits,
    "limits": {"max_payload": 512, "max_record_bytes": 17},
and lists, per .bin file, the frames it holds in order, decoded:
    {"file": "...", "description": "...",
     "frames": [{"type": "DATA", "type_code": 2, "payload_hex": "...", ...fields}],
     "non_frame_segments": ["hex", ...]}       (only in mixed_stream.bin)
A DATA frame also carries "fields" and "coding" (the run's field set and
record coding, which the frame itself does not hold); a record of a STACK run carries "sp" and "stack"
(its n words, "0x%08x" strings). 32-bit addresses and ids are "0x%08x"
strings; other integers are JSON numbers.

The scenarios the C tests replay (the drain_* files) are built from the same
formulas as firmware-sampler/tests/test_golden.c: see sample_at().

One script of some 850 lines on purpose: it is the protocol written a second
time, apart from the C and Go encoders, and is checked against the spec by
reading it whole; the framing, the frames each way and the files it writes
follow protocol.md's order.
"""
import json
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

FIELD_PC, FIELD_LR, FIELD_EXC, FIELD_THREAD, FIELD_STACK = 1, 2, 4, 8, 16
MAX_PAYLOAD = 512
MAX_RECORD = 17
STACK_WORDS_MAX = 64
STACK_REF_WINDOW = 16
CODING_V10, CODING_V12, CODING_V14 = 0, 1, 2
V14_KEY_INTERVAL = 32
PC_SLOTS = 4
# the other fields (17), SP (5), n and ref (1 each), one run pair (2), K literals of 5
MAX_STACK_RECORD = 17 + 5 + 1 + 1 + 2 + 5 * STACK_WORDS_MAX

HEADER, DATA, END, REPLY, THREADS, STACK_TOP = 1, 2, 3, 4, 5, 6
STACK_TOP_WORDS = 32
START, STOP, STATUS, DRAIN, DONE = 0x81, 0x82, 0x83, 0x84, 0x85
TYPE_NAMES = {HEADER: "HEADER", DATA: "DATA", END: "END", REPLY: "REPLY", THREADS: "THREADS", STACK_TOP: "STACK_TOP",
              START: "START", STOP: "STOP", STATUS: "STATUS", DRAIN: "DRAIN", DONE: "DONE"}


def hx(v):
    return "0x%08x" % v


# --- framing -----------------------------------------------------------------

def cobs(data):
    """COBS, blocks of at most 254 data bytes, no empty block after a full
    block that ends the data."""
    out = bytearray()
    block = bytearray()
    for i, b in enumerate(data):
        if b == 0:
            out.append(len(block) + 1)
            out += block
            block = bytearray()
            continue
        block.append(b)
        if len(block) == 254:
            out.append(255)
            out += block
            block = bytearray()
            if i == len(data) - 1:
                return bytes(out)
    out.append(len(block) + 1)
    out += block
    return bytes(out)


def uncobs(seg):
    out = bytearray()
    i = 0
    while i < len(seg):
        code = seg[i]
        i += 1
        out += seg[i:i + code - 1]
        i += code - 1
        if code != 255 and i < len(seg):
            out.append(0)
    return bytes(out)


def payload(ftype, body):
    p = bytes([ftype]) + body
    return p + struct.pack("<I", zlib.crc32(p) & 0xFFFFFFFF)


def wire(p):
    assert 5 <= len(p) <= MAX_PAYLOAD, len(p)
    enc = cobs(p)
    assert 0 not in enc and uncobs(enc) == p
    return b"\x00" + enc + b"\x00"


def uvarint(v):
    """Unsigned LEB128 of any width (codings 1 and 2 have codes of up to 39 bits)."""
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def varint(v):
    assert 0 <= v < 1 << 32
    return uvarint(v)


def s32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def zigzag(d):
    """d is a signed 32-bit value."""
    return ((d << 1) ^ (d >> 31)) & 0xFFFFFFFF


# --- device -> host frames ---------------------------------------------------

def header(state, mode, fields, jitter, cpu_hz, timer_hz, mean, capacity,
           taken, dropped, stored, held_from, build_id=b"", stack_words=0, coding=CODING_V10):
    body = struct.pack("<BBBBBBBBBB", 1, 4, 0, 2, 0, state, mode, fields, jitter, coding)
    body += struct.pack("<IIIIIIII", cpu_hz, timer_hz, mean, capacity, taken, dropped, stored, held_from)
    body += bytes([len(build_id)]) + build_id + bytes([stack_words])
    p = payload(HEADER, body)
    desc = {"type": "HEADER", "proto_major": 1, "proto_minor": 4, "sampler_version": [0, 2, 0], "coding": coding,
            "state": state, "mode": mode, "fields": fields, "jitter_pct": jitter,
            "cpu_hz": cpu_hz, "timer_hz": timer_hz, "mean_interval_ticks": mean,
            "capacity": capacity, "taken": taken, "dropped": dropped, "stored": stored,
            "held_from": held_from, "build_id": build_id.hex(), "stack_words": stack_words}
    return p, desc


def covered_word(ref, addr):
    """The word of the reference record at addr, or None when it does not
    cover addr (sp <= addr < sp + 4 n)."""
    if ref is None:
        return None
    off = (addr - ref["sp"]) & 0xFFFFFFFF
    if off >= 4 * len(ref["stack"]):
        return None
    return ref["stack"][off // 4]


def stack_runs(rec, ref):
    """The runs of rec's stack words against ref: maximal runs of words
    equal to a covered reference word (same), maximal runs of the rest
    (diff), each diff word as varint(zigzag(word - covered word or 0))."""
    words, sp = rec["stack"], rec["sp"]
    same_at = [covered_word(ref, (sp + 4 * i) & 0xFFFFFFFF) == w for i, w in enumerate(words)]
    out = bytearray()
    i = 0
    while i < len(words):
        same = 0
        while i + same < len(words) and same_at[i + same]:
            same += 1
        diff = 0
        while i + same + diff < len(words) and not same_at[i + same + diff]:
            diff += 1
        out += varint(same) + varint(diff)
        for k in range(i + same, i + same + diff):
            base = covered_word(ref, (sp + 4 * k) & 0xFFFFFFFF) or 0
            out += varint(zigzag(s32(words[k] - base)))
        i += same + diff
    return bytes(out)


def encode_stack(rec, prev, earlier):
    """STACK: sp delta, n, and with words the reference (0 = none, else how
    many records back in this frame, at most 16) whose runs are shortest
    (none unless a reference is strictly shorter; the nearest of equals)."""
    out = bytearray(varint(zigzag(s32(rec["sp"] - prev["sp"]))))
    out += varint(len(rec["stack"]))
    if not rec["stack"]:
        return bytes(out)
    best_ref, best = 0, stack_runs(rec, None)
    for back in range(1, min(STACK_REF_WINDOW, len(earlier)) + 1):
        runs = stack_runs(rec, earlier[-back])
        if len(runs) < len(best):
            best_ref, best = back, runs
    return bytes(out + varint(best_ref) + best)


def thread_ref(fields, rec, earlier):
    """V12: the nearest of the 16 records before rec in its frame with the
    same thread (every thread is 0 without THREAD) whose words overlap rec's."""
    sp, n = rec["sp"], len(rec["stack"])
    thread = (lambda r: r["thread"]) if fields & FIELD_THREAD else (lambda r: 0)
    for ref in list(earlier)[::-1][:STACK_REF_WINDOW]:
        if thread(ref) == thread(rec) and \
                ref["sp"] < sp + 4 * n and sp < ref["sp"] + 4 * len(ref["stack"]):
            return ref
    return None


def encode_thread_stack(fields, rec, prev, earlier):
    """V12 STACK: sp delta and n as in V10; with words, varint(common) and
    the literals. Of rec's words under the reference's top, the highest
    `common` equal the reference's words at their addresses; every other
    word is varint(zigzag(word - the reference's word there, or 0))."""
    out = bytearray(varint(zigzag(s32(rec["sp"] - prev["sp"]))))
    words, sp = rec["stack"], rec["sp"]
    out += varint(len(words))
    if not words:
        return bytes(out)
    ref = thread_ref(fields, rec, earlier)
    below = common = 0
    if ref is not None:
        top = ref["sp"] + 4 * len(ref["stack"])
        below = min(max((top - sp) // 4, 0), len(words))
        while common < below and covered_word(ref, sp + 4 * (below - common - 1)) == words[below - common - 1]:
            common += 1
    out += varint(common)
    for i, w in enumerate(words):
        if below - common <= i < below:
            continue
        base = covered_word(ref, (sp + 4 * i) & 0xFFFFFFFF) or 0
        out += varint(zigzag(s32(w - base)))
    return bytes(out)


def nearest_pc(pc, pcs):
    """V12 PC: zigzag(halfword delta) from the recent PC that makes it
    smallest (the newest of equals), above that PC's slot in two bits."""
    best, slot = min((zigzag(s32(pc - h) >> 1), j) for j, h in enumerate(pcs))
    code = best << 2 | slot
    assert code < 1 << 33
    return uvarint(code)


def encode_record(fields, rec, prev, earlier=(), coding=CODING_V10):
    """rec coded against prev; earlier are the records before it in its
    frame (oldest first), the references a stack may use, and in V12 the
    last four of them the PCs the PC may be coded against."""
    out = bytearray()
    if coding == CODING_V12:
        pcs = [r["pc"] for r in list(earlier)[::-1][:PC_SLOTS]]
        out += nearest_pc(rec["pc"], pcs + [0] * (PC_SLOTS - len(pcs)))
    else:
        out += varint(zigzag(s32(rec["pc"] - prev["pc"]) >> 1))
    if fields & FIELD_LR:
        out += varint(zigzag(s32(rec["lr"] - prev["lr"])))
    if fields & FIELD_EXC:
        out += varint(rec["exc"])
    if fields & FIELD_THREAD:
        out += varint(zigzag(s32(rec["thread"] - prev["thread"])))
    if fields & FIELD_STACK:
        if coding == CODING_V12:
            out += encode_thread_stack(fields, rec, prev, earlier)
        else:
            out += encode_stack(rec, prev, earlier)
    return bytes(out)


class V14:
    """Coding 2's state (protocol 1.4), which runs on across the DATA frames
    of a chain: the last 32 PCs and 62 literal words, the last 8 threads,
    the last stack of up to 8 threads and modes, and the previous record."""

    def __init__(self):
        self.pcs = [0] * 32          # the newest first
        self.lits = [0] * 6          # the newest first
        self.dict = [0] * 64         # literals by hash
        self.threads = []            # the newest first, at most 8
        self.refs = []               # stacks kept, the newest first, at most 8
        self.prev = {"pc": 0, "lr": 0, "thread": 0, "sp": 0}

    def copy(self):
        c = V14()
        c.pcs, c.lits, c.threads, c.refs = list(self.pcs), list(self.lits), list(self.threads), list(self.refs)
        c.dict = list(self.dict)
        c.prev = self.prev
        return c


def nearest(v, cands, bits, half):
    """The smallest zigzag(v - candidate) << bits | j: the nearest, the
    lowest-numbered of equals."""
    def d(c):
        x = s32(v - c)
        return x >> 1 if half else x
    return min((zigzag(d(c)) << bits) | j for j, c in enumerate(cands))


def v14_key(fields, rec):
    thread = rec["thread"] if fields & FIELD_THREAD else 0
    handler = bool(fields & FIELD_EXC and rec.get("exc", 0))
    return (thread, handler)


def encode_v14(fields, rec, st):
    """rec in coding 2 (order PC, EXC, THREAD, LR, STACK); updates st."""
    out = bytearray(uvarint(nearest(rec["pc"], st.pcs, 5, True)))
    exc_in_thread = fields & FIELD_EXC and fields & FIELD_THREAD
    if fields & FIELD_EXC and not exc_in_thread:
        out += varint(rec["exc"])
    if fields & FIELD_THREAD:
        t = rec["thread"]
        place = st.threads.index(t) + 1 if t in st.threads else 0
        out += varint(place << 1 | (rec["exc"] != 0) if exc_in_thread else place)
        if place == 0:
            out += varint(zigzag(s32(t - st.prev["thread"])))
        if exc_in_thread and rec["exc"]:
            out += varint(rec["exc"])
        st.threads = ([t] + [x for x in st.threads if x != t])[:8]
    key = v14_key(fields, rec)
    last = next((r for r in st.refs if v14_key(fields, r) == key), None) if fields & FIELD_STACK else None
    if fields & FIELD_LR:
        code = zigzag(s32(rec["lr"] - (last["lr"] if last else st.prev["lr"])))
        if fields & FIELD_STACK:  # a return address a stack held before: from the dictionary
            place = ((rec["lr"] * 0x9E3779B1) & 0xFFFFFFFF) >> 26
            code = place << 1 | 1 if st.dict[place] == rec["lr"] else code << 1
            st.dict[place] = rec["lr"]
        out += uvarint(code)
    if fields & FIELD_STACK:
        words = rec["stack"]
        sp = rec["sp"]
        out += uvarint(zigzag(s32(sp - (last["sp"] if last else st.prev["sp"]))) << 7 | len(words))
        ref = next((r for r in st.refs if v14_key(fields, r) == key and
                    r["sp"] < sp + 4 * len(words) and sp < r["sp"] + 4 * len(r["stack"])), None)

        def same_run(i):
            """Words from i equal to ref's at the same addresses."""
            n = 0
            while i + n < len(words):
                w = covered_word(ref, sp + 4 * (i + n))
                if w is None or w != words[i + n]:
                    break
                n += 1
            return n

        i = 0
        while i < len(words):
            sm = same_run(i)
            if sm < 2:  # a run is at least 2 words
                sm = 0
            df = 0
            while i + sm + df < len(words) and same_run(i + sm + df) < 2:
                df += 1
            out += varint(sm) + varint(df)
            for k in range(i + sm, i + sm + df):
                w = words[k]
                place = ((w * 0x9E3779B1) & 0xFFFFFFFF) >> 26
                if st.dict[place] == w:
                    out += uvarint(place << 1 | 1)
                else:
                    c0 = covered_word(ref, sp + 4 * k)
                    cands = [c0 or 0, words[k - 1] if k else 0] + st.lits
                    out += uvarint(nearest(w, cands, 3, False) << 1)
                st.lits = [w] + st.lits[:-1]
                st.dict[place] = w
            i += sm + df
        st.refs = ([rec] + [r for r in st.refs if r is not ref])[:8]
    st.pcs = [rec["pc"]] + st.pcs[:-1]
    st.prev = rec
    return bytes(out)


def record_desc(fields, rec):
    d = {"pc": hx(rec["pc"])}
    if fields & FIELD_LR:
        d["lr"] = hx(rec["lr"])
    if fields & FIELD_EXC:
        d["exc"] = rec["exc"]
    if fields & FIELD_THREAD:
        d["thread"] = hx(rec["thread"])
    if fields & FIELD_STACK:
        d["sp"] = hx(rec["sp"])
        d["stack"] = [hx(w) for w in rec["stack"]]
    return d


def data_frames(fields, first, recs, coding=CODING_V10):
    """DATA frames for recs numbered from first: [(payload, desc), ...].
    Without STACK a frame takes records while the worst-case record (17
    bytes) still fits; with STACK while the next record itself fits."""
    frames = []
    i = 0
    st = V14()
    while i < len(recs):
        body = bytearray(struct.pack("<IH", first + i, 0))
        prev = {"pc": 0, "lr": 0, "thread": 0, "sp": 0}
        k = 0
        if coding == CODING_V14:
            continues = len(frames) % V14_KEY_INTERVAL != 0
            if not continues:
                st = V14()
            body.append(1 if continues else 0)
        # payload = 1 type + body + 4 crc
        while i + k < len(recs):
            if coding == CODING_V14:
                trial = st.copy()
                rec = encode_v14(fields, recs[i + k], trial)
                if 1 + len(body) + len(rec) + 4 > MAX_PAYLOAD:
                    break
                st = trial
            elif fields & FIELD_STACK:
                rec = encode_record(fields, recs[i + k], prev, recs[i:i + k], coding)
                if 1 + len(body) + len(rec) + 4 > MAX_PAYLOAD:
                    break
            elif 1 + len(body) + MAX_RECORD + 4 <= MAX_PAYLOAD:
                rec = encode_record(fields, recs[i + k], prev, recs[i:i + k], coding)
            else:
                break
            body += rec
            prev = recs[i + k]
            k += 1
        struct.pack_into("<H", body, 4, k)
        desc = {"type": "DATA", "first_index": first + i, "count": k, "fields": fields, "coding": coding,
                "records": [record_desc(fields, r) for r in recs[i:i + k]]}
        if coding == CODING_V14:
            desc["continues"] = body[6] == 1
        frames.append((payload(DATA, bytes(body)), desc))
        i += k
    return frames


def data_frame(fields, first, recs, coding=CODING_V10):
    frames = data_frames(fields, first, recs, coding)
    assert len(frames) == 1
    return frames[0]


def end(reason, first, end_index, taken, dropped, stored):
    p = payload(END, struct.pack("<BIIIII", reason, first, end_index, taken, dropped, stored))
    return p, {"type": "END", "reason": reason, "first_index": first, "end_index": end_index,
               "taken": taken, "dropped": dropped, "stored": stored}


def reply(command, status):
    return payload(REPLY, bytes([command, status])), {"type": "REPLY", "command": command, "status": status}


def stack_top(tid, top, words):
    """STACK_TOP (1.3): one thread's stack top and the words below it."""
    assert len(words) <= STACK_TOP_WORDS
    body = struct.pack("<IIB", tid, top, len(words)) + b"".join(struct.pack("<I", w) for w in words)
    return payload(STACK_TOP, body), {"type": "STACK_TOP", "thread": hx(tid), "top": hx(top),
                                      "words": [hx(w) for w in words]}


def stack_top_words(seed, n):
    """The words of stack_top.bin, as tests/test_golden.c builds them: a
    Weyl sequence, every fourth word 0 (a stack holds many)."""
    return [0 if i % 4 == 3 else (seed + i * 0x9E3779B1) & 0xFFFFFFFF for i in range(n)]


def threads_frames(entries):
    """THREADS frames for [(id, name)], filled to the payload limit."""
    frames = []
    body, got = bytearray([0]), []

    def flush():
        body[0] = len(got)
        frames.append((payload(THREADS, bytes(body)),
                       {"type": "THREADS", "threads": [{"id": hx(t), "name": n} for t, n in got]}))

    for tid, name in entries:
        nb = name.encode()[:31]
        entry = struct.pack("<IB", tid, len(nb)) + nb
        if 1 + len(body) + len(entry) + 4 > MAX_PAYLOAD or len(got) == 255:
            flush()
            body, got = bytearray([0]), []
        body += entry
        got.append((tid, nb.decode()))
    flush()
    return frames


# --- host -> device frames ---------------------------------------------------

def cmd_start(rate, jitter, fields, mode, count, duration_ms, stack_words=None, coding=CODING_V10):
    """START; stack_words None sends the 16-byte body of protocol 1.0 (whose
    reserved byte 1.2 reads as the coding)."""
    body = struct.pack("<IBBBBII", rate, jitter, fields, mode, coding, count, duration_ms)
    if stack_words is not None:
        body += bytes([stack_words])
    p = payload(START, body)
    return p, {"type": "START", "rate_hz": rate, "jitter_pct": jitter, "fields": fields,
               "mode": mode, "count": count, "duration_ms": duration_ms, "stack_words": stack_words or 0,
               "coding": coding}


def cmd_plain(ctype):
    return payload(ctype, b""), {"type": TYPE_NAMES[ctype]}


def cmd_drain(first, count):
    p = payload(DRAIN, struct.pack("<II", first, count))
    return p, {"type": "DRAIN", "from_index": first, "count": count}


# --- scenarios shared with the C tests ---------------------------------------

def sample_at(i):
    """The i-th synthetic sample of the drain scenarios (tests/test_golden.c
    computes the same). PCs wander over 40 KB of flash code with backward
    jumps; every 7th LR is an EXC_RETURN; every 5th sample is in IRQ 122."""
    pc = 0x60002000 + ((i * 2654435761) & 0xFFFF) % 0xA000
    pc &= ~1
    if i % 7 == 3:
        lr = 0xFFFFFFF9
    else:
        lr = (0x60002000 + ((i * 40503) & 0x3FFF)) | 1
    exc = 16 + 122 if i % 5 == 4 else 0
    thread = (0x20001000, 0x20003400, 0x20000c80)[i % 3]
    return {"pc": pc, "lr": lr, "exc": exc, "thread": thread}


BUILD_ID = bytes(range(0xA0, 0xB4))  # 20 bytes, as ld --build-id=sha1
THREAD_TABLE = [(0x20001000, "main"), (0x20003400, "sysworkq"),
                (0x20000c80, "a_thread_name_of_31_bytes_long_")]
SCEN = dict(cpu_hz=600000000, timer_hz=24000000, mean=2400)  # rate 10 kHz


def drain_file(fields, words, n, first, count, with_threads, coding=CODING_V10):
    recs = [sample_at(i) for i in range(n)]
    endi = first + count if count else n
    capacity = 16384 // words
    frames = [header(2, 0, fields, 25, SCEN["cpu_hz"], SCEN["timer_hz"], SCEN["mean"], capacity,
                     n, 0, n, 0, BUILD_ID, coding=coding)]
    frames += data_frames(fields, first, recs[first:endi], coding)
    if with_threads:
        frames += threads_frames(THREAD_TABLE)
    frames.append(end(0, first, endi, n, 0, n))
    return frames


# --- the files ---------------------------------------------------------------

def files():
    out = []

    def add(name, description, frames, raw=None, non_frames=()):
        data = raw if raw is not None else b"".join(wire(p) for p, _ in frames)
        descs = []
        for p, d in frames:
            d = dict(d)
            d["type_code"] = p[0]
            d["payload_hex"] = p.hex()
            descs.append(d)
        entry = {"file": name, "description": description, "frames": descs}
        if non_frames:
            entry["non_frame_segments"] = [s.hex() for s in non_frames]
        out.append((name, data, entry))

    add("header_no_build_id.bin", "HEADER of an idle device whose image has no build-id",
        [header(0, 0, FIELD_PC, 0, 600000000, 24000000, 2400, 16384, 0, 0, 0, 0)])
    add("header_build_id.bin", "HEADER of a running stream with all fields and a 20-byte build-id",
        [header(1, 1, 0x0F, 25, 600000000, 24000000, 2400, 4096, 123456, 789, 122667, 122600, BUILD_ID)])

    pcs = [0x60001234, 0x60001236, 0x60001236, 0x60001230, 0x600A0000, 0x00000100,
           0x00000100, 0x6000FFFE, 0x60001234]
    add("data_pc.bin", "DATA, PC only: forward, repeat (WFI), backward, ITCM and far jumps",
        [data_frame(FIELD_PC, 0, [{"pc": p} for p in pcs])])

    recs = [
        {"pc": 0x60004000, "lr": 0x60003F01, "exc": 0, "thread": 0x20001000},
        {"pc": 0x60003000, "lr": 0xFFFFFFF9, "exc": 138, "thread": 0x20001000},
        {"pc": 0x00000200, "lr": 0x60003F01, "exc": 15, "thread": 0x20000C80},
        {"pc": 0x00000100, "lr": 0xFFFFFFED, "exc": 0, "thread": 0x20003400},
        {"pc": 0x60004002, "lr": 0x00000101, "exc": 511, "thread": 0},
    ]
    add("data_all_fields.bin",
        "DATA, PC+LR+EXC+THREAD: negative deltas, EXC_RETURN LRs, 2-byte EXC, thread 0, first index 1000",
        [data_frame(0x0F, 1000, recs)])
    add("data_pc_lr.bin", "DATA, PC+LR (the 2-word record layout)",
        [data_frame(FIELD_PC | FIELD_LR, 7, recs[:4])])
    add("data_pc_exc.bin", "DATA, PC+EXC (the other 2-word layout)",
        [data_frame(FIELD_PC | FIELD_EXC, 0, recs)])

    # Big deltas (3-5 bytes each, no zero byte) from a first index with no
    # zero byte: the payload runs > 254 bytes without a zero.
    big = [{"pc": (0x60000000 + ((i * 0x9E3779B1) & 0x00FFFFFE)) if i % 2 else (0x00001000 + i * 0x2222)}
           for i in range(80)]
    p, d = data_frame(FIELD_PC, 0x01020304, big)
    assert len(p) > 254 and max(len(s) for s in p.split(b"\x00")) > 254
    add("data_cobs_split.bin", "DATA whose payload has a zero-free run longer than 254 bytes (COBS block split)",
        [(p, d)])

    # A payload of exactly 254 bytes with no zero: COBS is 0xFF + 254 bytes
    # and nothing after (no empty trailing block). DATA cannot do it (its
    # u16 count has a zero high byte), THREADS can: search the name suffix
    # that makes the CRC zero-free.
    p254 = None
    for n in range(100000):
        table = [(0x21212121 + 0x01010101 * i, "thread_%02d_named_for_the_test" % i) for i in range(7)]
        used = 2 + sum(5 + len(name) for _, name in table) + 5 + 4
        table.append((0x31323334, ("t%08d_" % n).ljust(254 - used, "x")))
        (p, d), = threads_frames(table)
        if len(p) == 254 and 0 not in p:
            p254 = (p, d)
            break
    assert p254 is not None
    assert cobs(p254[0])[0] == 0xFF and len(cobs(p254[0])) == 255
    add("threads_cobs_254.bin",
        "THREADS payload of exactly 254 zero-free bytes: one full COBS block, no trailing empty block",
        [p254])

    worst = [{"pc": (0x0 if i % 2 == 0 else 0xFFFFFFFE), "lr": (0x1 if i % 2 == 0 else 0x80000001),
              "exc": 511, "thread": (0x0 if i % 2 == 0 else 0x80000000)} for i in range(60)]
    frames = data_frames(0x0F, 0, worst)
    assert all(len(fp) <= MAX_PAYLOAD for fp, _ in frames)
    add("data_worst_case.bin", "DATA with 17-byte records: the fill rule splits 60 records into frames of at most 512 bytes",
        frames)

    # 97 five-byte records leave exactly 16 bytes of room: a 1-byte record
    # would fit, but the fill rule reserves the worst case (17), so the
    # 98th record starts the next frame.
    fill = [{"pc": 0x80000000 if i % 2 == 0 else 0} for i in range(97)] + [{"pc": 0}, {"pc": 0}]
    frames = data_frames(FIELD_PC, 0, fill)
    assert [d["count"] for _, d in frames] == [97, 2] and len(frames[0][0]) == 512 - 16
    add("data_fill_rule.bin", "DATA fill rule: 16 bytes of room left stop a frame although the next record needs 1",
        frames)

    add("header_stack.bin", "HEADER of a held STACK snapshot (K = 32, 431 records of 38 words)",
        [header(2, 0, 0x1F, 25, 600000000, 24000000, 2400, 431, 431, 0, 431, 0, BUILD_ID, 32)])

    # Thread A's stack at 0x20201f80, thread B's at 0x20203f00, the
    # interrupt stack near its top at 0x20210fe0.
    a0 = [0x60001235, 0x20201fc0, 0x00000007, 0x00000000, 0x6000200b, 0x20208c34,
          0x2020198c, 0x00000020, 0x60002f41, 0xaaaaaaaa, 0x20201ff8, 0x6000b387]
    a1 = a0[:2] + [0x00000008, 0x00000001] + a0[4:]
    stack_recs = [
        {"pc": 0x60001000, "lr": 0x60001235, "exc": 0, "thread": 0x20001000, "sp": 0x20201f80, "stack": a0},
        {"pc": 0x60001004, "lr": 0x60001235, "exc": 0, "thread": 0x20001000, "sp": 0x20201f80, "stack": a1},
        {"pc": 0x60003000, "lr": 0x60003101, "exc": 0, "thread": 0x20003400, "sp": 0x20203f00,
         "stack": [0x00000001, 0x60003201, 0x20203f40, 0x6000b387, 0x00000000]},
        # The same memory as record 0 seen two words higher: three back is
        # shorter than the nearer record 1, whose words 2 and 3 differ.
        {"pc": 0x60001010, "lr": 0x60001235, "exc": 0, "thread": 0x20001000, "sp": 0x20201f88, "stack": a0[2:]},
        # SP outside every stack the port knows: no words.
        {"pc": 0x00000100, "lr": 0x00000101, "exc": 0, "thread": 0x20000c80, "sp": 0x10000000, "stack": []},
        # Deeper by two words: two new words, then record 0's.
        {"pc": 0x60001100, "lr": 0x60001001, "exc": 0, "thread": 0x20001000, "sp": 0x20201f78,
         "stack": [0x00000003, 0x60001005] + a0},
        # Handler mode on the interrupt stack, three words below its top;
        # an EXC_RETURN word codes small against no reference (zigzag(-7)).
        {"pc": 0x60004000, "lr": 0xfffffffd, "exc": 16 + 31, "thread": 0x20001000, "sp": 0x20210ff4,
         "stack": [0x00000004, 0x60004101, 0xfffffffd]},
        # A counter word one above the reference's: a 1-byte literal.
        {"pc": 0x60001004, "lr": 0x60001235, "exc": 0, "thread": 0x20001000, "sp": 0x20201f80,
         "stack": a1[:7] + [a1[7] + 1] + a1[8:]},
    ]
    add("data_stack.bin",
        "DATA, PC+LR+EXC+THREAD+STACK: no reference, the nearest, a farther shorter one, no words, "
        "uncovered words, a stack near its top, small literals; first index 20",
        [data_frame(0x1F, 20, stack_recs)])
    add("data_stack_pc_lr.bin", "DATA, PC+LR+STACK (the smallest field set with STACK)",
        [data_frame(FIELD_PC | FIELD_LR | FIELD_STACK, 0, stack_recs[:4])])

    # Record 17 repeats record 0's stack, but 16 other stacks came between:
    # beyond the window, so it is coded without a reference.
    window = [{"pc": 0x60001000, "lr": 0x60001235, "sp": 0x20201f80, "stack": a0}]
    window += [{"pc": 0x60002000 + 4 * i, "lr": 0x60002001, "sp": 0x20220000 + 0x100 * i, "stack": [i + 1]}
               for i in range(16)]
    window.append({"pc": 0x60001000, "lr": 0x60001235, "sp": 0x20201f80, "stack": a0})
    p, d = data_frame(FIELD_PC | FIELD_LR | FIELD_STACK, 0, window)
    add("data_stack_window.bin",
        "DATA, STACK: a stack 17 records back is beyond the 16-record window of references", [(p, d)])

    # Stacks of 40 pseudo-random words (~200 bytes each): a frame takes
    # records while the next one itself fits, not while a worst case does.
    def lcg(n, seed):
        out = []
        for _ in range(n):
            seed = (seed * 1103515245 + 12345) & 0xFFFFFFFF
            out.append(seed ^ (seed >> 7))
        return out
    big = [{"pc": 0x60001000 + 2 * i, "lr": 0x60001235, "exc": 0, "thread": 0x20001000,
            "sp": 0x20201000 - 16 * i, "stack": lcg(40 if i % 3 else 8, i + 1)} for i in range(9)]
    frames = data_frames(0x1F, 0, big)
    room = MAX_PAYLOAD - len(frames[0][0])
    assert len(frames) > 1 and 0 < room < MAX_STACK_RECORD, room
    assert len(frames[0][0]) <= MAX_PAYLOAD
    add("data_stack_fill.bin",
        "DATA, STACK fill rule: records are added while they themselves fit, %d bytes left in the first frame" % room,
        frames)

    # --- protocol 1.2's record coding (V12) ---------------------------------
    v12_pcs = [0x60001234, 0x00000100, 0x60001238, 0x00000100, 0x60800000, 0x6000123c, 0x60800010,
               0x00000104, 0x60001234, 0x80000000, 0xfffffffe, 0x60001234]
    add("data_pc_v12.bin",
        "DATA, PC only, coding 1.2: a PC against the nearest of the last four (flash, ITCM, a testbench "
        "8 MB up), repeats, and the 33-bit codes of the farthest deltas",
        [data_frame(FIELD_PC, 0, [{"pc": p} for p in v12_pcs], CODING_V12)])
    add("data_all_fields_v12.bin", "DATA, PC+LR+EXC+THREAD, coding 1.2",
        [data_frame(0x0F, 1000, recs, CODING_V12)])
    # Thread A again, shallower and cut by K: its two highest words lie
    # above record 5's top and go as literals.
    v12_stack = stack_recs + [
        {"pc": 0x60001008, "lr": 0x60001235, "exc": 0, "thread": 0x20001000, "sp": 0x20201f90,
         "stack": a0[4:] + [0x20201fe0, 0x60000101]},
        # Thread B deeper: two new words, then B's five.
        {"pc": 0x60003004, "lr": 0x60003101, "exc": 0, "thread": 0x20003400, "sp": 0x20203ef8,
         "stack": [0x00000002, 0x60003301, 0x00000001, 0x60003201, 0x20203f40, 0x6000b387, 0x00000000]},
    ]
    add("data_stack_v12.bin",
        "DATA, PC+LR+EXC+THREAD+STACK, coding 1.2: each stack against its thread's last overlapping one "
        "(none for a thread's first, none on the interrupt stack), common words down from the reference's "
        "top, literals below them and above that top; first index 20",
        [data_frame(0x1F, 20, v12_stack, CODING_V12)])
    add("data_stack_pc_lr_v12.bin", "DATA, PC+LR+STACK, coding 1.2: without THREAD, the last overlapping stack",
        [data_frame(FIELD_PC | FIELD_LR | FIELD_STACK, 0, v12_stack, CODING_V12)])
    add("cmd_start_v12.bin", "START asking for coding 1.2: 10 kHz, 25 % jitter, PC, snapshot, 600 samples",
        [cmd_start(10000, 25, FIELD_PC, 0, 600, 0, coding=CODING_V12)])
    frames = drain_file(FIELD_PC, 1, 600, 0, 0, False, CODING_V12)
    add("drain_pc_v12.bin",
        "DRAIN(0, 0) answer of the 600-record PC snapshot started by cmd_start_v12.bin: HEADER (coding 1), "
        "%d DATA, END (tests/test_golden.c replays it)" % (len(frames) - 2), frames)

    # --- protocol 1.4's record coding (V14) ---------------------------------
    add("data_pc_v14.bin",
        "DATA, PC only, coding 1.4 (key frame): a PC against the nearest of the last 32, "
        "and the 37-bit codes of the farthest deltas",
        [data_frame(FIELD_PC, 0, [{"pc": p} for p in v12_pcs], CODING_V14)])
    add("data_all_fields_v14.bin", "DATA, PC+LR+EXC+THREAD, coding 1.4: threads by their place among the recent ones",
        [data_frame(0x0F, 1000, recs + recs[::-1], CODING_V14)])
    add("data_stack_v14.bin",
        "DATA, PC+LR+EXC+THREAD+STACK, coding 1.4: LR and SP against the thread's last stack, runs against "
        "its last overlapping one, literals against the nearest of 64 candidates; first index 20",
        [data_frame(0x1F, 20, v12_stack, CODING_V14)])
    add("data_stack_pc_lr_v14.bin", "DATA, PC+LR+STACK, coding 1.4: without THREAD, the last overlapping stack",
        [data_frame(FIELD_PC | FIELD_LR | FIELD_STACK, 0, v12_stack, CODING_V14)])
    chain = [dict(r, pc=r["pc"] + 2 * n, stack=[w + (n if j < 2 else 0) for j, w in enumerate(r["stack"])])
             for n in range(30) for r in v12_stack]
    frames = data_frames(0x1F, 0, chain, CODING_V14)
    assert 2 < len(frames) < V14_KEY_INTERVAL
    add("data_stack_chain_v14.bin",
        "DATA, PC+LR+EXC+THREAD+STACK, coding 1.4: a key frame and %d frames that continue its coding "
        "(their stacks refer to stacks of the frames before)" % (len(frames) - 1), frames)
    # A thread keeps a list in its frame that grows by a word or two each
    # sample: the reference's words a word or two further on go as
    # literals, from the dictionary; a single equal word goes as a literal.
    base = [0x20200c28, 0x00000020, 0x60001001, 0x60002001, 0x60003001, 0x60004001, 0, 0, 0xaaaaaaaa, 0x60000101]
    shifted = [
        {"pc": 0x60001366, "lr": 0x60001e51, "exc": 0, "thread": 0x202020a0, "sp": 0x20201da8, "stack": base},
        {"pc": 0x60001374, "lr": 0x60001e51, "exc": 0, "thread": 0x202020a0, "sp": 0x20201da8,
         "stack": [0x20200c28, 0x00000021, 0x60000f01] + base[2:9]},
        {"pc": 0x60001362, "lr": 0x60001e51, "exc": 0, "thread": 0x202020a0, "sp": 0x20201da8,
         "stack": [0x20200c28, 0x00000022, 0x60000d01, 0x60000e01, 0x60000f01] + base[2:7]},
    ]
    add("data_stack_shift_v14.bin",
        "DATA, PC+LR+EXC+THREAD+STACK, coding 1.4: the reference's words a word or two off their addresses "
        "as literals from the dictionary, a single equal word as a literal",
        [data_frame(0x1F, 0, shifted, CODING_V14)])
    add("cmd_start_v14.bin", "START asking for coding 1.4: 10 kHz, 25 % jitter, PC, snapshot, 10000 samples",
        [cmd_start(10000, 25, FIELD_PC, 0, 10000, 0, coding=CODING_V14)])
    frames = drain_file(FIELD_PC, 1, 10000, 0, 0, False, CODING_V14)
    assert len(frames) - 2 > V14_KEY_INTERVAL
    add("drain_pc_v14.bin",
        "DRAIN(0, 0) answer of the 10000-record PC snapshot started by cmd_start_v14.bin: HEADER (coding 2), "
        "%d DATA (a key frame every %d), END (tests/test_golden.c replays it)" % (len(frames) - 2, V14_KEY_INTERVAL),
        frames)

    add("end.bin", "END DRAINED, then END STREAM_STOPPED",
        [end(0, 10, 60, 1000, 0, 1000), end(1, 0, 4096, 5000, 904, 4096)])
    add("reply.bin", "REPLY with every status, and to an unreadable frame (command 0)",
        [reply(START, 0), reply(0x99, 1), reply(START, 2), reply(START, 3), reply(DRAIN, 4),
         reply(DRAIN, 5), reply(0, 5)])
    add("threads.bin", "THREADS: an empty name, a 31-byte name, and a table split over two frames",
        threads_frames([(0x20001000, "main"), (0x20002000, ""), (0x20000C80, "a_thread_name_of_31_bytes_long_")] +
                       [(0x20010000 + 0x100 * i, "worker_%02d_with_a_long_name__" % i) for i in range(20)]))

    add("stack_top.bin",
        "STACK_TOP (1.3): a thread with all 32 words below its stack top, one whose stack holds 5, one with none",
        [stack_top(0x20001000, 0x20202000, stack_top_words(0x20201F81, 32)),
         stack_top(0x20003400, 0x20204000, stack_top_words(0x60001235, 5)),
         stack_top(0x20000C80, 0x20200400, [])])

    add("cmd_start.bin", "START: 10 kHz, 25 % jitter, all fields, stream, no count, 2 s",
        [cmd_start(10000, 25, 0x0F, 1, 0, 2000)])
    add("cmd_start_default.bin", "START: device default rate, no jitter, PC, snapshot, 5000 samples",
        [cmd_start(0, 0, FIELD_PC, 0, 5000, 0)])
    add("cmd_start_stack.bin", "START (1.1 body): 10 kHz, 25 % jitter, PC+LR+EXC+THREAD+STACK, snapshot, K = 32",
        [cmd_start(10000, 25, 0x1F, 0, 0, 0, 32)])
    add("cmd_stop.bin", "STOP", [cmd_plain(STOP)])
    add("cmd_status.bin", "STATUS", [cmd_plain(STATUS)])
    add("cmd_drain.bin", "DRAIN records [5, 105)", [cmd_drain(5, 100)])
    add("cmd_drain_all.bin", "DRAIN from 0 to the last stored", [cmd_drain(0, 0)])
    add("cmd_done.bin", "DONE", [cmd_plain(DONE)])

    # What a host sees: log text, a frame, garbage with a bad CRC, a frame
    # with no leading 0x00 (the previous byte was a trailing 0x00), text.
    f1 = reply(STATUS, 0)
    f2 = end(1, 0, 3, 3, 0, 3)
    bad = bytearray(wire(payload(REPLY, bytes([STOP, 0]))))
    bad[3] ^= 0x40
    log1, log2 = b"boot: tcmprof sampler\r\n", b"log line\r\n"
    f3 = reply(DONE, 0)
    raw = log1 + wire(f1[0]) + bytes(bad[1:]) + wire(f2[0])[1:] + log2 + wire(f3[0])
    add("mixed_stream.bin",
        "log text, REPLY, a frame with a corrupted byte (bad CRC), END without its leading 0x00, "
        "log text, REPLY",
        [f1, f2, f3], raw=raw, non_frames=[log1, bytes(bad[1:-1]), log2])

    frames = drain_file(FIELD_PC, 1, 600, 0, 0, False)
    add("drain_pc.bin",
        "DRAIN(0, 0) answer of a HOLDING snapshot of 600 PC-only records: HEADER, %d DATA, END "
        "(tests/test_golden.c replays it)" % (len(frames) - 2), frames)
    frames = drain_file(0x0F, 4, 100, 10, 50, True)
    add("drain_all_fields.bin",
        "DRAIN(10, 50) answer of a HOLDING snapshot of 100 PC+LR+EXC+THREAD records: HEADER, %d DATA, "
        "THREADS, END (tests/test_golden.c replays it)" % (len(frames) - 3), frames)
    return out


def main():
    check = "--check" in sys.argv[1:]
    bad = []
    index = {"protocol": "1.4", "limits": {"max_payload": MAX_PAYLOAD, "max_record_bytes": MAX_RECORD,
                                         "max_stack_record_bytes": MAX_STACK_RECORD,
                                         "stack_words_max": STACK_WORDS_MAX,
                                         "stack_ref_window": STACK_REF_WINDOW}, "files": []}
    for name, data, entry in files():
        index["files"].append(entry)
        path = os.path.join(HERE, name)
        if check:
            if not os.path.exists(path) or open(path, "rb").read() != data:
                bad.append(name)
        else:
            with open(path, "wb") as f:
                f.write(data)
    text = json.dumps(index, indent=1) + "\n"
    vpath = os.path.join(HERE, "vectors.json")
    if check:
        if not os.path.exists(vpath) or open(vpath).read() != text:
            bad.append("vectors.json")
        if bad:
            print("gen.py: out of date: " + ", ".join(bad) + " (run python3 gen.py)", file=sys.stderr)
            sys.exit(1)
        return
    with open(vpath, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
