# SPDX-License-Identifier: Apache-2.0
"""Parses the module's Kconfig with kconfiglib against stubs of the Zephyr
symbols it depends on, as a 3.7 LTS tree and as a current 4.x tree defines
them (kconfig_stub/), and checks its defaults and dependencies, that the
snippet's and the sample's configuration fragments take effect on both
trees (an assignment to a symbol a tree lacks aborts a Zephyr build), and
that the README's Kconfig table states the defaults Kconfig has.

    kconfig_test.py                 run the checks; prints "N passed, M failed"
    kconfig_test.py --autoconf DIR  write DIR/<variant>/autoconf.h for the
                                    stand-in build (standin_build.sh)
"""

import os
import re
import sys
import traceback

import kconfiglib

HERE = os.path.dirname(os.path.abspath(__file__))
ZEPHYR_DIR = os.path.dirname(HERE)
SAMPLER_DIR = os.path.dirname(ZEPHYR_DIR)
STUB_DIR = os.path.join(HERE, "kconfig_stub")
README = os.path.join(ZEPHYR_DIR, "README.md")
SNIPPET_CONF = os.path.join(SAMPLER_DIR, "snippets", "tcmprof-sampler", "tcmprof-sampler.conf")
SAMPLE_CONF = os.path.join(SAMPLER_DIR, "samples", "udp_echo", "prj.conf")

V37, V4 = "3.7", "4"

# Symbols the module's Kconfig refers to that only later trees define. In a
# Zephyr build an undefined symbol is n (kconfig.py warns only about
# assignments to undefined symbols, and those abort the build).
NEWER_THAN_37 = {"CDC_ACM_SERIAL_INITIALIZE_AT_BOOT", "LINKER_GNU_BUILD_ID"}


def load(assignments=(), fragments=(), version=V4):
    """A fresh Kconfig tree of the given Zephyr version with the board facts
    of an RT1062 set, then the fragments and assignments applied in order.
    Assignments to undefined symbols are warnings, as in Zephyr's kconfig.py
    (warn_assign_undef, which makes them fatal there)."""
    os.environ["srctree"] = STUB_DIR
    os.environ["ZEPHYR_STUB_VERSION"] = version
    os.environ["TCMPROF_MODULE_KCONFIG"] = os.path.join(ZEPHYR_DIR, "Kconfig")
    # References to undefined symbols: checked apart (test_undefined_references).
    os.environ.pop("KCONFIG_WARN_UNDEF", None)
    kconf = kconfiglib.Kconfig(os.path.join(STUB_DIR, "Kconfig"), warn_to_stderr=False)
    kconf.warn_assign_undef = True
    kconf.warn_assign_override = False
    kconf.warn_assign_redun = False
    for name in ("SOC_SERIES_IMXRT10XX", "CPU_CORTEX_M_HAS_BASEPRI"):
        kconf.syms[name].set_value(2)
    for path in fragments:
        kconf.load_config(path, replace=False)
    for name, value in assignments:
        kconf.syms[name].set_value(value)
    return kconf


def value(kconf, name):
    return kconf.syms[name].str_value


def enabled(version=V4, **extra):
    return load([("SERIAL", "y"), ("USB_DEVICE_STACK_NEXT", "y"), ("TCMPROF_SAMPLER", "y")]
                + list(extra.items()), version=version)


def check(cond, message):
    if not cond:
        raise AssertionError(message)


def test_parses_without_warnings():
    for version in (V37, V4):
        kconf = enabled(version)
        check(not kconf.warnings, f"{version}: kconfiglib warnings:\n  " + "\n  ".join(kconf.warnings))


def test_undefined_references_are_only_newer_symbols():
    for version, want in ((V37, NEWER_THAN_37), (V4, set())):
        kconf = enabled(version)
        # Numbers in defaults and ranges are nameless symbols to kconfiglib, and it
        # refers to MODULES itself (for tristates, which Zephyr does not use).
        undefined = {name for name, sym in kconf.syms.items()
                     if not sym.nodes and re.fullmatch(r"[A-Z_][A-Z0-9_]*", name) and name != "MODULES"}
        check(undefined == want, f"{version}: undefined symbols referenced: {sorted(undefined)}, "
              f"want {sorted(want)}")


def test_enabling_selects_zero_latency_irqs():
    kconf = enabled()
    check(value(kconf, "TCMPROF_SAMPLER") == "y", "TCMPROF_SAMPLER not enabled")
    check(value(kconf, "ZERO_LATENCY_IRQS") == "y", "ZERO_LATENCY_IRQS not selected")
    check(value(kconf, "RING_BUFFER") == "y", "RING_BUFFER not selected")


def test_defaults():
    kconf = enabled()
    want = {
        "TCMPROF_SAMPLER_JITTER_PCT": "25",
        "THREAD_MONITOR": "y",  # selected: k_thread_foreach needs it
        "THREAD_NAME": "y",  # implied
        "TCMPROF_SAMPLER_SHELL": "n",  # no SHELL in this configuration
        "TCMPROF_USBD_INIT": "n",
        "TCMPROF_SAMPLER_BUILD_ID": "y",
        "TCMPROF_SAMPLER_LOG_LEVEL": "3",
        "TCMPROF_SAMPLER_STACK": "y",
        "THREAD_STACK_INFO": "y",  # selected: the bounds of the STACK copy
        "TCMPROF_SAMPLER_FIELD_STACK": "n",
        "TCMPROF_SAMPLER_STACK_WORDS": "32",
    }
    for name, v in want.items():
        check(value(kconf, name) == v, f"{name} = {value(kconf, name)!r}, want {v!r}")
    words = int(value(kconf, "TCMPROF_SAMPLER_BUFFER_WORDS"))
    check(words & (words - 1) == 0, f"default buffer {words} words is not a power of two")


def test_sampler_thread_not_below_main():
    # Zephyr priorities: lower numbers run first.
    for version in (V37, V4):
        kconf = enabled(version)
        mine = int(value(kconf, "TCMPROF_SAMPLER_THREAD_PRIORITY"))
        main = int(value(kconf, "MAIN_THREAD_PRIORITY"))
        check(mine < main, f"{version}: sampler thread priority {mine} does not preempt main's {main}")


def test_shell_commands_follow_shell():
    check(value(enabled(SHELL="y"), "TCMPROF_SAMPLER_SHELL") == "y", "shell commands off with SHELL=y")


def test_thread_field_off_drops_thread_defaults():
    kconf = enabled(TCMPROF_SAMPLER_THREAD="n")
    check(value(kconf, "TCMPROF_SAMPLER_FIELD_THREAD") == "n", "THREAD field default without support")
    check(value(kconf, "THREAD_MONITOR") == "n", "THREAD_MONITOR still selected")


def test_stack_field_off_drops_its_options():
    kconf = enabled(TCMPROF_SAMPLER_STACK="n")
    check(value(kconf, "THREAD_STACK_INFO") == "n", "THREAD_STACK_INFO still selected")
    check(value(kconf, "TCMPROF_SAMPLER_FIELD_STACK") == "n", "shell runs record stacks without support")
    check(value(enabled(TCMPROF_SAMPLER_FIELD_LR="n", TCMPROF_SAMPLER_FIELD_STACK="y"),
                "TCMPROF_SAMPLER_FIELD_STACK") == "n", "shell runs record stacks without LR")


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
    # 3.7 has no such helper: nothing to exclude.
    check(value(enabled(V37, TCMPROF_USBD_INIT="y"), "TCMPROF_USBD_INIT") == "y",
          "module USB init unavailable on 3.7")


def test_build_id_yields_to_zephyrs_own():
    kconf = enabled(LINKER_GNU_BUILD_ID="y")
    check(value(kconf, "TCMPROF_SAMPLER_BUILD_ID") == "n",
          "the module places a build-id note besides Zephyr's LINKER_GNU_BUILD_ID")
    check(value(enabled(V37), "TCMPROF_SAMPLER_BUILD_ID") == "y", "no build id on 3.7")


def fragment_lines(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("CONFIG_"):
                name, _, v = line[len("CONFIG_"):].partition("=")
                yield name, v.strip('"')


def check_fragments_take_effect(paths, version):
    kconf = load(fragments=paths, version=version)
    names = ", ".join(os.path.basename(p) for p in paths)
    check(not kconf.warnings, f"{version}: warnings loading {names} (fatal in a Zephyr build):\n  "
          + "\n  ".join(kconf.warnings))
    for path in paths:
        for name, v in fragment_lines(path):
            check(kconf.syms[name].nodes, f"{version}: {os.path.basename(path)}: CONFIG_{name} is not a symbol")
            got = value(kconf, name)
            check(got == v, f"{version}: {os.path.basename(path)}: CONFIG_{name}={v} did not take effect "
                  f"(got {got!r})")
    return kconf


def test_snippet_conf_takes_effect_on_every_tree():
    for version in (V37, V4):
        kconf = check_fragments_take_effect([SNIPPET_CONF], version)
        for name in ("TCMPROF_SAMPLER", "ZERO_LATENCY_IRQS", "TCMPROF_USBD_INIT", "USBD_CDC_ACM_CLASS",
                     "TCMPROF_SAMPLER_BUILD_ID"):
            check(value(kconf, name) == "y", f"{version}: snippet leaves {name} off")


def test_sample_conf_with_snippet_takes_effect_on_every_tree():
    for version in (V37, V4):
        kconf = check_fragments_take_effect([SAMPLE_CONF, SNIPPET_CONF], version)
        check(value(kconf, "USBD_CDC_NCM_CLASS") == "y", f"{version}: sample has no CDC-NCM class")


SAMPLE_MAIN = os.path.join(SAMPLER_DIR, "samples", "udp_echo", "src", "main.c")


def test_sample_applies_its_network_settings():
    """Where Zephyr leaves NET_CONFIG_* to the application (a USB network
    class turns NET_CONFIG_AUTO_INIT off), the sample must apply them
    itself, or 192.0.2.1 is never set."""
    with open(SAMPLE_MAIN) as f:
        calls_init = re.search(r"^\s*\(void\)\s*net_config_init_app\(|^\s*(?:\w+\s*=\s*)?net_config_init_app\(",
                               f.read(), re.M)
    for version in (V37, V4):
        kconf = load(fragments=[SAMPLE_CONF, SNIPPET_CONF], version=version)
        if value(kconf, "NET_CONFIG_SETTINGS") == "y" and value(kconf, "NET_CONFIG_AUTO_INIT") != "y":
            check(calls_init, f"{version}: NET_CONFIG_AUTO_INIT is off with the sample's USB network class, "
                  "and its main.c never calls net_config_init_app()")


def readme_kconfig_table():
    """(symbol, default) rows of the README's "## Kconfig" table."""
    with open(README) as f:
        text = f.read()
    section = text.split("\n## Kconfig\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Z0-9_]+)` \| ([^|]*) \|", section, re.M)
    check(rows, "no rows in the README's Kconfig table")
    return [(name, default.strip()) for name, default in rows]


def test_readme_defaults_match_kconfig():
    """Each symbol's value in an enabled sampler with SHELL and the module's
    USB init (so that every symbol is visible), without assigning the symbol
    itself."""
    base = [("SERIAL", "y"), ("USB_DEVICE_STACK_NEXT", "y"), ("SHELL", "y"), ("TCMPROF_SAMPLER", "y"),
            ("TCMPROF_USBD_INIT", "y")]
    for name, default in readme_kconfig_table():
        kconf = load([(sym, v) for sym, v in base if sym != name])
        check(name in kconf.syms and kconf.syms[name].nodes, f"README lists {name}, which Kconfig lacks")
        want = default.strip('"') if default.startswith('"') else default
        check(value(kconf, name) == want,
              f"README says {name} defaults to {default}, Kconfig to {value(kconf, name)!r}")


def test_readme_lists_every_module_symbol():
    listed = {name for name, _ in readme_kconfig_table()}
    kconf = enabled()
    module = os.path.join(ZEPHYR_DIR, "Kconfig")
    mine = {sym.name for sym in kconf.unique_defined_syms
            if any(node.filename.endswith(module) or node.filename == module for node in sym.nodes)}
    missing = sorted(mine - listed - {"TCMPROF_SAMPLER_LOG_LEVEL"})
    check(not missing, f"README's Kconfig table lacks {missing}")


# ---- autoconf.h for the stand-in build ----------------------------------

# name: (tree version, configuration fragments, assignments). Each is a
# configuration the module must compile in; standin_build.sh compiles every
# source CMakeLists.txt would for it.
AUTOCONF_VARIANTS = {
    "v3.7-sample": (V37, [SAMPLE_CONF, SNIPPET_CONF], []),
    "v4-sample": (V4, [SAMPLE_CONF, SNIPPET_CONF], []),
    "v4-sample-full-speed": (V4, [SAMPLE_CONF, SNIPPET_CONF], [("USBD_MAX_SPEED_FULL", "y")]),
    "v4-zephyr-build-id": (V4, [SAMPLE_CONF, SNIPPET_CONF], [("LINKER_GNU_BUILD_ID", "y")]),
    "v4-minimal": (V4, [], [("SERIAL", "y"), ("USB_DEVICE_STACK_NEXT", "y"), ("TCMPROF_SAMPLER", "y"),
                            ("TCMPROF_SAMPLER_THREAD", "n"), ("TCMPROF_SAMPLER_MODE_STREAM", "y"),
                            ("TCMPROF_SAMPLER_BUILD_ID", "n"), ("TCMPROF_SAMPLER_STACK", "n")]),
    # Shell runs with stacks: the STACK field's code in every source.
    "v3.7-stack": (V37, [SAMPLE_CONF, SNIPPET_CONF], [("TCMPROF_SAMPLER_FIELD_STACK", "y")]),
}


def write_autoconf(out_dir):
    for name, (version, fragments, assignments) in AUTOCONF_VARIANTS.items():
        kconf = load(assignments, fragments, version)
        if kconf.warnings:
            sys.exit(f"{name}: " + "\n".join(kconf.warnings))
        os.makedirs(os.path.join(out_dir, name), exist_ok=True)
        kconf.write_autoconf(os.path.join(out_dir, name, "autoconf.h"))
    print(" ".join(AUTOCONF_VARIANTS))


TESTS = [v for k, v in sorted(globals().items()) if k.startswith("test_")]


def main():
    if sys.argv[1:2] == ["--autoconf"] and len(sys.argv) == 3:
        write_autoconf(sys.argv[2])
        return 0
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
