/* ttcapture - a minimal live capture for the tests: libpcap on an interface,
 * a BPF filter, written to a pcap file with nanosecond timestamps, until
 * SIGINT/SIGTERM or a duration. Prints "ready" on stdout once capturing. */
#include <pcap/pcap.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

int main(int argc, char **argv)
{
    const char *iface = "lo", *filter = "tcp", *out = NULL;
    double duration = 30;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-i") && i + 1 < argc) iface = argv[++i];
        else if (!strcmp(argv[i], "-f") && i + 1 < argc) filter = argv[++i];
        else if (!strcmp(argv[i], "-w") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "-d") && i + 1 < argc) duration = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: ttcapture [-i IFACE] [-f FILTER] -w FILE [-d SECONDS]\n");
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "ttcapture: -w FILE is required\n");
        return 2;
    }
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *p = pcap_create(iface, err);
    if (!p) {
        fprintf(stderr, "ttcapture: %s\n", err);
        return 1;
    }
    pcap_set_snaplen(p, 65535);
    pcap_set_buffer_size(p, 64 << 20); /* immediate mode uses one ring frame per packet */
    pcap_set_immediate_mode(p, 1);
    pcap_set_timeout(p, 50);
    pcap_set_tstamp_precision(p, PCAP_TSTAMP_PRECISION_NANO);
    if (pcap_activate(p) < 0) {
        fprintf(stderr, "ttcapture: %s: %s\n", iface, pcap_geterr(p));
        return 1;
    }
    struct bpf_program prog;
    if (pcap_compile(p, &prog, filter, 1, PCAP_NETMASK_UNKNOWN) < 0 || pcap_setfilter(p, &prog) < 0) {
        fprintf(stderr, "ttcapture: filter '%s': %s\n", filter, pcap_geterr(p));
        return 1;
    }
    pcap_dumper_t *d = pcap_dump_open(p, out);
    if (!d) {
        fprintf(stderr, "ttcapture: %s: %s\n", out, pcap_geterr(p));
        return 1;
    }
    if (pcap_setnonblock(p, 1, err) < 0) {
        fprintf(stderr, "ttcapture: %s\n", err);
        return 1;
    }
    struct pollfd pfd = {.fd = pcap_get_selectable_fd(p), .events = POLLIN};
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    printf("ready\n");
    fflush(stdout);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    long packets = 0;
    while (!stop_requested) {
        struct pcap_pkthdr *h;
        const u_char *data;
        int rc = pcap_next_ex(p, &h, &data);
        if (rc == 1) {
            pcap_dump((u_char *)d, h, data);
            packets++;
        } else if (rc < 0) {
            break;
        } else {
            poll(&pfd, 1, 50); /* nothing pending: wait a little, then look at the clock and signals */
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9 > duration) break;
    }
    struct pcap_stat st = {0};
    pcap_stats(p, &st);
    pcap_dump_close(d);
    pcap_close(p);
    fprintf(stderr, "ttcapture: %ld packets, %u dropped by the kernel, %u by the interface\n", packets, st.ps_drop,
            st.ps_ifdrop);
    return 0;
}
