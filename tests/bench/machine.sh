#!/usr/bin/env bash
# machine.sh - one line naming the machine a bench section ran on, sourced
# by tests/bench/*.sh: `machine_line` prints the CPU model, the CPUs, the
# kernel, and the two things that moved these figures most between
# machines of the same kind here: whether the kernel isolates its page
# tables from user space (Meltdown's mitigation: without PCID every system
# call then leaves the TLB cold, and each page touched after it costs a
# walk) and whether the CPU has PCID. The probe's added cost per call,
# the same probe code: 139.2 ns on a machine with isolation and no PCID
# (2026-12-05), 45.0 ns on one without (2026-12-06).
machine_line() {
    local model cpus meltdown pti pcid
    model=$(grep -m1 'model name' /proc/cpuinfo 2> /dev/null | cut -d: -f2 | sed 's/^ //')
    cpus=$(nproc)
    meltdown=$(cat /sys/devices/system/cpu/vulnerabilities/meltdown 2> /dev/null || echo unknown)
    case $meltdown in
        *PTI*) pti="page-table isolation on" ;;
        "Not affected") pti="no page-table isolation (not affected by Meltdown)" ;;
        *) pti="meltdown: $meltdown" ;;
    esac
    if grep -q -w pcid /proc/cpuinfo 2> /dev/null; then pcid="PCID"; else pcid="no PCID"; fi
    echo "${model:-unknown CPU}, $cpus CPUs, kernel $(uname -r), $pti, $pcid"
}
