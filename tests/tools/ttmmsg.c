/* ttmmsg - a streaming HTTP client that moves its bytes only with
 * sendmmsg and recvmmsg, for the eBPF vantage tests (tests/e2e/test_watch_mmsg.sh).
 *
 *   ttmmsg PORT REQUEST_ID OUT [VLEN [SIZE [TOKENS]]]
 *
 * Connects to 127.0.0.1:PORT, sends a streamed chat completion request
 * (x-request-id REQUEST_ID, max_tokens TOKENS, default 30) as three
 * messages of one sendmmsg (the head in two iovec entries, the body cut in
 * two messages), then reads the response with recvmmsg(MSG_WAITFORONE)
 * into VLEN messages (default 4) of two iovec entries of SIZE bytes each
 * (default 16), until the peer closes. Writes every byte read to OUT and
 * prints "calls N messages M bytes B" on stdout. Exit 0, or 1 on error. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_VLEN 64
#define MAX_SIZE 65536

static int arg_int(const char *s, int lo, int hi, const char *what)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == 0 || *end || v < lo || v > hi) {
        fprintf(stderr, "ttmmsg: %s wants %d..%d, got '%s'\n", what, lo, hi, s);
        exit(1);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 7) {
        fprintf(stderr, "usage: ttmmsg PORT REQUEST_ID OUT [VLEN [SIZE [TOKENS]]]\n");
        return 1;
    }
    int port = arg_int(argv[1], 1, 65535, "PORT");
    int vlen = argc > 4 ? arg_int(argv[4], 1, MAX_VLEN, "VLEN") : 4;
    int size = argc > 5 ? arg_int(argv[5], 1, MAX_SIZE, "SIZE") : 16;
    int tokens = argc > 6 ? arg_int(argv[6], 1, 100000, "TOKENS") : 30;

    char body[256], head[512];
    int body_len = snprintf(body, sizeof body,
                            "{\"model\":\"m\",\"stream\":true,\"max_tokens\":%d,"
                            "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
                            tokens);
    int head_len = snprintf(head, sizeof head,
                            "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nx-request-id: %s\r\n"
                            "Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
                            argv[2], body_len);
    if (head_len <= 0 || head_len >= (int)sizeof head || body_len <= 0 || body_len >= (int)sizeof body) {
        fprintf(stderr, "ttmmsg: request id too long\n");
        return 1;
    }
    FILE *out = fopen(argv[3], "wb");
    if (!out) {
        perror("ttmmsg: OUT");
        return 1;
    }
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        perror("ttmmsg: connect");
        return 1;
    }

    int cut = head_len / 2, body_cut = body_len / 2;
    struct iovec send_iov[4] = {
        {head, (size_t)cut}, {head + cut, (size_t)(head_len - cut)},
        {body, (size_t)body_cut}, {body + body_cut, (size_t)(body_len - body_cut)},
    };
    struct mmsghdr send_msgs[3];
    memset(send_msgs, 0, sizeof send_msgs);
    send_msgs[0].msg_hdr.msg_iov = &send_iov[0];
    send_msgs[0].msg_hdr.msg_iovlen = 2;
    send_msgs[1].msg_hdr.msg_iov = &send_iov[2];
    send_msgs[1].msg_hdr.msg_iovlen = 1;
    send_msgs[2].msg_hdr.msg_iov = &send_iov[3];
    send_msgs[2].msg_hdr.msg_iovlen = 1;
    int sent = 0;
    while (sent < 3) {
        int n = sendmmsg(fd, send_msgs + sent, (unsigned)(3 - sent), 0);
        if (n <= 0) {
            perror("ttmmsg: sendmmsg");
            return 1;
        }
        sent += n;
    }

    char *bufs = malloc((size_t)vlen * 2 * (size_t)size);
    struct iovec *iov = calloc((size_t)vlen * 2, sizeof *iov);
    struct mmsghdr *msgs = calloc((size_t)vlen, sizeof *msgs);
    if (!bufs || !iov || !msgs) {
        fprintf(stderr, "ttmmsg: out of memory\n");
        return 1;
    }
    unsigned long calls = 0, messages = 0, bytes = 0;
    for (;;) {
        for (int i = 0; i < vlen; i++) {
            iov[2 * i] = (struct iovec){bufs + (size_t)(2 * i) * (size_t)size, (size_t)size};
            iov[2 * i + 1] = (struct iovec){bufs + (size_t)(2 * i + 1) * (size_t)size, (size_t)size};
            memset(&msgs[i], 0, sizeof msgs[i]);
            msgs[i].msg_hdr.msg_iov = &iov[2 * i];
            msgs[i].msg_hdr.msg_iovlen = 2;
        }
        int n = recvmmsg(fd, msgs, (unsigned)vlen, MSG_WAITFORONE, NULL);
        if (n < 0) {
            perror("ttmmsg: recvmmsg");
            return 1;
        }
        calls++;
        bool closed = false;
        for (int i = 0; i < n; i++) {
            unsigned len = msgs[i].msg_len;
            if (len == 0) closed = true;
            messages++;
            bytes += len;
            unsigned first = len < (unsigned)size ? len : (unsigned)size;
            fwrite(iov[2 * i].iov_base, 1, first, out);
            fwrite(iov[2 * i + 1].iov_base, 1, len - first, out);
        }
        if (n == 0 || closed) break;
    }
    close(fd);
    if (fclose(out) != 0) {
        perror("ttmmsg: OUT");
        return 1;
    }
    printf("calls %lu messages %lu bytes %lu\n", calls, messages, bytes);
    free(bufs);
    free(iov);
    free(msgs);
    return 0;
}
