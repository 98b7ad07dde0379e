"""Parses the module's Kconfig with kconfiglib against a stub of the Zephyr
symbols it depends on, and checks its defaults, dependencies and that the
snippet's and the sample's configuration fragments take effect as written.

Prints "N passed, M failed"; exit status 1 on any failure.
"""

import os
import sys
import traceback

import kconfiglib

HERE = os.path.dirname(os.path.abspath(__file__))
ZEPHYR_DIR = os.path.dirname(HERE)
SAMPLER_DIR = os.path.dirname(ZEPHYR_DIR)
STUB_DIR = os.path.join(HERE, "kconfig_stub")
SNIPPET_CONF = os.path.join(SAMPLER_DIR, "snippets", "tcmprof-sampler", "tcmprof-sampler.conf")
SAMPLE_CONF = os.path.join(SAMPLER_DIR, "samples", "udp_echo", "prj.conf")


def load(assignments=(), fragments=()):
    """A fresh Kconfig tree with the board facts of an RT1062 set, then
    the fragments and assignments applied in order."""
    os.environ["srctree"] = STUB_DIR
    os.environ["TCMPROF_MODULE_KCONFIG"] = os.path.join(ZEPHYR_DIR, "Kconfig")
    # Zephyr's kconfig.py rejects references to undefined symbols; so does this.
    os.environ["KCONFIG_WARN_UNDEF"] = "y"
    kconf = kconfiglib.Kconfig(os.path.join(STUB_DIR, "Kconfig"), warn_to_stderr=False)
    for name in ("SOC_SERIES_IMXRT10XX", "CPU_CORTEX_M_HAS_BASEPRI"):
        kconf.syms[name].set_value(2)
    for path in fragments:
        kconf.load_config(path, replace=False)
    for name, value in assignments:
        kconf.syms[name].set_value(value)
    return kconf


def value(kconf, name):
    return kconf.syms[name].str_value


def enabled(**extra):
    return load([("SERIAL", "y"), ("USB_DEVICE_STACK_NEXT", "y"), ("TCMPROF_SAMPLER", "y")]
                + list(extra.items()))


def check(cond, message):
    if not cond:
        raise AssertionError(message)


def test_parses_without_warnings():
    kconf = enabled()
    check(not kconf.warnings, "kconfiglib warnings:\n  " + "\n  ".join(kconf.warnings))


def test_enabling_selects_zero_latency_irqs():
    kconf = enabled()
    check(value(kconf, "TCMPROF_SAMPLER") == "y", "TCMPROF_SAMPLER not enabled")
    check(value(kconf, "ZERO_LATENCY_IRQS") == "y", "ZERO_LATENCY_IRQS not selected")
    check(value(kconf, "RING_BUFFER") == "y", "RING_BUFFER not selected")


def test_defaults():
    kconf = enabled()
    want = {
        "TCMPROF_SAMPLER_DEFAULT_RATE_HZ": "10000",
        "TCMPROF_SAMPLER_MAX_RATE_HZ": "100000",
        "TCMPROF_SAMPLER_JITTER_PCT": "25",
        "TCMPROF_SAMPLER_BUFFER_WORDS": "16384",
        "TCMPROF_SAMPLER_THREAD": "y",
        "THREAD_MONITOR": "y",  # selected: k_thread_foreach needs it
        "THREAD_NAME": "y",  # implied
        "TCMPROF_SAMPLER_FIELD_LR": "y",
        "TCMPROF_SAMPLER_FIELD_EXC": "y",
        "TCMPROF_SAMPLER_FIELD_THREAD": "y",
        "TCMPROF_SAMPLER_MODE_SNAPSHOT": "y",
        "TCMPROF_SAMPLER_MODE_STREAM": "n",
        "TCMPROF_SAMPLER_SHELL": "n",  # no SHELL in this configuration
        "TCMPROF_USBD_INIT": "n",
        "TCMPROF_SAMPLER_LOG_LEVEL": "3",
    }
    for name, v in want.items():
        check(value(kconf, name) == v, f"{name} = {value(kconf, name)!r}, want {v!r}")
    words = int(value(kconf, "TCMPROF_SAMPLER_BUFFER_WORDS"))
    check(words & (words - 1) == 0, f"default buffer {words} words is not a power of two")


def test_shell_commands_follow_shell():
    check(value(enabled(SHELL="y"), "TCMPROF_SAMPLER_SHELL") == "y", "shell commands off with SHELL=y")


def test_thread_field_off_drops_thread_defaults():
    kconf = enabled(TCMPROF_SAMPLER_THREAD="n")
    check(value(kconf, "TCMPROF_SAMPLER_FIELD_THREAD") == "n", "THREAD field default without support")
    check(value(kconf, "THREAD_MONITOR") == "n", "THREAD_MONITOR still selected")


def test_unavailable_with_smp():
    check(value(enabled(SMP="y"), "TCMPROF_SAMPLER") == "n", "enabled on SMP")


def test_unavailable_without_basepri():
    kconf = load([("SERIAL", "y"), ("USB_DEVICE_STACK_NEXT", "y")])
    kconf.syms["CPU_CORTEX_M_HAS_BASEPRI"].set_value(0)
    kconf.syms["TCMPROF_SAMPLER"].set_value(2)
    check(value(kconf, "TCMPROF_SAMPLER") == "n", "enabled without BASEPRI (no zero-latency IRQs)")
    check(value(kconf, "ZERO_LATENCY_IRQS") == "n", "ZERO_LATENCY_IRQS without BASEPRI")


def test_unavailable_without_interrupt_driven_uart():
    kconf = load([("TCMPROF_SAMPLER", "y")])
    check(value(kconf, "TCMPROF_SAMPLER") == "n", "enabled without an interrupt-driven UART")


def test_rate_and_buffer_ranges():
    kconf = enabled(TCMPROF_SAMPLER_BUFFER_WORDS="100000", TCMPROF_SAMPLER_JITTER_PCT="80",
                    TCMPROF_SAMPLER_MAX_RATE_HZ="5000")
    check(value(kconf, "TCMPROF_SAMPLER_BUFFER_WORDS") == "16384", "out-of-range buffer accepted")
    check(value(kconf, "TCMPROF_SAMPLER_JITTER_PCT") == "25", "jitter above 50% accepted")
    check(int(value(kconf, "TCMPROF_SAMPLER_DEFAULT_RATE_HZ")) <= 5000,
          "default rate above the maximum rate")


def test_usbd_init_excludes_the_single_port_helper():
    kconf = enabled(CDC_ACM_SERIAL_INITIALIZE_AT_BOOT="y", TCMPROF_USBD_INIT="y")
    check(value(kconf, "TCMPROF_USBD_INIT") == "n",
          "module USB init together with CDC_ACM_SERIAL_INITIALIZE_AT_BOOT")


def fragment_lines(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("CONFIG_"):
                name, _, v = line[len("CONFIG_"):].partition("=")
                yield name, v.strip('"')


def check_fragments_take_effect(paths):
    kconf = load(fragments=paths)
    check(not kconf.warnings, "warnings loading " + ", ".join(paths) + ":\n  " + "\n  ".join(kconf.warnings))
    for path in paths:
        for name, v in fragment_lines(path):
            check(name in kconf.syms, f"{os.path.basename(path)}: CONFIG_{name} is not a symbol")
            got = value(kconf, name)
            check(got == v, f"{os.path.basename(path)}: CONFIG_{name}={v} did not take effect (got {got!r})")
    return kconf


def test_snippet_conf_takes_effect():
    kconf = check_fragments_take_effect([SNIPPET_CONF])
    for name in ("TCMPROF_SAMPLER", "ZERO_LATENCY_IRQS", "TCMPROF_USBD_INIT", "USBD_CDC_ACM_CLASS"):
        check(value(kconf, name) == "y", f"snippet leaves {name} off")


def test_sample_conf_with_snippet_takes_effect():
    kconf = check_fragments_take_effect([SAMPLE_CONF, SNIPPET_CONF])
    check(value(kconf, "USBD_CDC_NCM_CLASS") == "y", "sample has no CDC-NCM class")


TESTS = [v for k, v in sorted(globals().items()) if k.startswith("test_")]


def main():
    passed = failed = 0
    for test in TESTS:
        try:
            test()
        except Exception:  # a failed check or a kconfiglib error fails this test only
            failed += 1
            print(f"FAIL kconfig/{test.__name__[5:]}")
            traceback.print_exc(limit=1, file=sys.stdout)
        else:
            passed += 1
            print(f"ok   kconfig/{test.__name__[5:]}")
    print(f"kconfig: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
